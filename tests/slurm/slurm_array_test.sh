#!/usr/bin/env bash
# A sweep run as a SLURM job array on a real one-node cluster gives the files of one `lexp run`.
#
#   tests/slurm/slurm_array_test.sh LEXP_BINARY
#
# Installs slurmctld, slurmd, slurm-client and munge with apt when missing, starts munged (unless
# one already answers), slurmctld and slurmd on localhost with this machine's CPUs, state and logs
# in a temporary directory and on ports of their own, then:
#  1. `lexp slurm --submit` of a 6-row sweep (2 encodings x 3 seeds, a few steps each) with a
#     --setup that reads an unset variable; waits for the array and the collect job, and checks the
#     setup ran in all 7 jobs and the scripts export HDF5_USE_FILE_LOCKING=FALSE;
#  2. runs the same recipe with `lexp run` in one process and checks that every run file's /train
#     (but its tokens/s) and /eval, and the collected summary's /scores, are bit for bit the same;
#  3. deletes two run files, `lexp slurm RUN_DIR --resubmit --submit`, and checks that exactly those
#     two rows ran again (their array task logs) and that the files are back, the same bits.
# Stops exactly the daemons it started, by their pids, and removes its directory. Exit 77 (ctest:
# skipped) when it can be neither root nor passwordless sudo to install and start the daemons.
set -euo pipefail

LEXP=$(readlink -f "$1")
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "SKIP: the SLURM test needs root or passwordless sudo (apt, munged, slurmd)"
    exit 77
  fi
fi

say() { echo "[slurm test $(date +%H:%M:%S)] $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- packages -----------------------------------------------------------------------------------
missing=()
for p in slurmctld slurmd slurm-client munge hdf5-tools; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi

WORK=$(mktemp -d /tmp/lexp-slurm-test.XXXXXX)
chmod 755 "$WORK"
STARTED_PIDS=()
MUNGE_DIR_CREATED=0
cleanup() {
  set +e
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    scancel --quiet --user="$(id -un)" 2>/dev/null
  fi
  # Newest first: slurmd, slurmctld, then munged if this test started it.
  for ((i = ${#STARTED_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${STARTED_PIDS[$i]}
    $SUDO kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && $SUDO kill -9 "$pid" 2>/dev/null
  done
  [ "$MUNGE_DIR_CREATED" = 1 ] && $SUDO rm -rf /run/munge
  $SUDO rm -rf "$WORK"
}
trap cleanup EXIT

# A pid from a daemon's pid file, checked to be that program.
pid_of() {
  local file=$1 prog=$2 pid
  for _ in $(seq 100); do
    [ -s "$file" ] && break
    sleep 0.1
  done
  pid=$($SUDO cat "$file" 2>/dev/null) || fail "$prog wrote no pid file $file"
  grep -q "$prog" "/proc/$pid/cmdline" 2>/dev/null || fail "pid $pid of $file is not $prog"
  echo "$pid"
}

# --- munge --------------------------------------------------------------------------------------
if echo test | munge 2>/dev/null | unmunge >/dev/null 2>&1; then
  say "using the munged already running"
else
  if [ ! -d /run/munge ]; then
    $SUDO mkdir -p /run/munge
    MUNGE_DIR_CREATED=1
  fi
  $SUDO chown munge:munge /run/munge
  $SUDO chmod 755 /run/munge
  [ -f /etc/munge/munge.key ] || $SUDO runuser -u munge -- /usr/sbin/mungekey --create
  $SUDO rm -f /run/munge/munged.pid
  $SUDO runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
  STARTED_PIDS+=("$(pid_of /run/munge/munged.pid munged)")
  echo test | munge | unmunge >/dev/null || fail "munged does not answer"
  say "started munged (pid ${STARTED_PIDS[0]})"
fi

# --- slurmctld and slurmd -----------------------------------------------------------------------
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
PORT=$(( 20000 + RANDOM % 20000 ))
mkdir -p "$WORK/state" "$WORK/spool"
export SLURM_CONF=$WORK/slurm.conf
cat > "$SLURM_CONF" <<EOF
ClusterName=lexptest
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
MinJobAge=600
KillWait=5
Waittime=0
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=lexp Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
$SUDO env SLURM_CONF="$SLURM_CONF" slurmctld -i -f "$SLURM_CONF"
STARTED_PIDS+=("$(pid_of "$WORK/slurmctld.pid" slurmctld)")
$SUDO env SLURM_CONF="$SLURM_CONF" slurmd -f "$SLURM_CONF" -N "$HOST"
STARTED_PIDS+=("$(pid_of "$WORK/slurmd.pid" slurmd)")
for _ in $(seq 120); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
  [ "$state" = "idle" ] && break
  sleep 0.5
done
[ "$state" = "idle" ] || { tail -20 "$WORK/slurmctld.log" "$WORK/slurmd.log"; fail "node not idle ($state)"; }
say "one-node cluster up: $HOST, $CPUS CPUs, port $PORT"

# --- the sweep ----------------------------------------------------------------------------------
cat > "$WORK/tiny.toml" <<'EOF'
[run]
name = "slurm_test"
seeds = [1, 2, 3]
[task]
name = "copy"
vocab = 12
[model]
d_model = 16
n_heads = 2
n_layers = 2
encodings = ["nope", "rope"]
[train]
max_length = 5
steps = 40
batch_size = 8
warmup_steps = 5
log_every = 1000
checkpoint_every = 1000
[eval]
lengths = [2, 5, 9]
samples = 16
batch_size = 8
[probe]
lengths = [5, 9]
samples = 2
stored_samples = 1
EOF
wait_for() {  # job ids...
  for _ in $(seq 600); do
    [ -z "$(squeue -h -j "$(IFS=,; echo "$*")" 2>/dev/null)" ] && return 0
    sleep 0.5
  done
  squeue; tail -20 "$WORK/slurmctld.log"; fail "jobs $* still queued after 300 s"
}
job_ids() { sed -n 's/^submitted .*: job \([0-9]*\).*/\1/p' "$1"; }

RUN=$WORK/cluster
# A --setup that reads an unset variable, as module and virtualenv scripts often do: it runs
# before the script's strict mode.
SETUP='lexp_setup="ran${LEXP_SURELY_UNSET_IN_SETUP}"; echo "setup $lexp_setup"'
"$LEXP" slurm "$WORK/tiny.toml" --out "$RUN" --cpus-per-task 1 --time 00:10:00 \
  --collect-time 00:05:00 --collect-mem 1G --setup "$SETUP" --submit | tee "$WORK/submit.txt"
mapfile -t ids < <(job_ids "$WORK/submit.txt")
[ ${#ids[@]} -eq 2 ] || fail "expected two job ids from lexp slurm --submit"
grep -q -- "--array=0-5" "$RUN/slurm/sweep.sbatch" || fail "sweep.sbatch has no --array=0-5"
t0=$(date +%s%N)
wait_for "${ids[@]}"
say "array ${ids[0]} and collect ${ids[1]} ended in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
logs=$(ls "$RUN/slurm/logs/" | grep -c "^${ids[0]}_")
[ "$logs" -eq 6 ] || fail "expected 6 array task logs, found $logs"
ran=$(grep -l -x "setup ran" "$RUN/slurm/logs/${ids[0]}_"*.out "$RUN/slurm/logs/collect_${ids[1]}.out" | wc -l)
[ "$ran" -eq 7 ] || fail "the --setup line ran in $ran of 7 jobs"
for script in sweep collect; do
  grep -q -x "export HDF5_USE_FILE_LOCKING=FALSE" "$RUN/slurm/$script.sbatch" ||
    fail "$script.sbatch does not export HDF5_USE_FILE_LOCKING=FALSE"
done
grep -q -x "#SBATCH --time=00:05:00" "$RUN/slurm/collect.sbatch" || fail "collect has not its own --time"
say "the --setup line with an unset variable ran in all 7 jobs, HDF5 file locking off"
"$LEXP" status "$RUN" | tee "$WORK/status.txt"
grep -q "^done *6 " "$WORK/status.txt" || fail "status does not count 6 rows done"
[ -f "$RUN/summary.h5" ] || { cat "$RUN/slurm/logs/collect_${ids[1]}.out"; fail "collect wrote no summary"; }

LOCAL=$WORK/local
t0=$(date +%s%N)
"$LEXP" run "$WORK/tiny.toml" --out "$LOCAL" --no-figures > "$WORK/local.txt"
say "the same sweep in one process: $(( ($(date +%s%N) - t0) / 1000000 )) ms"

same() {  # file dataset...: each dataset bit for bit equal in $RUN and $LOCAL
  local f=$1
  shift
  for d in "$@"; do
    a=$(h5dump -d "$d" -m %.17g "$RUN/$f" | tail -n +2 | md5sum)
    b=$(h5dump -d "$d" -m %.17g "$LOCAL/$f" | tail -n +2 | md5sum)
    [ "$a" = "$b" ] || fail "$f $d differs between the SLURM array and one lexp run"
  done
}
datasets() {  # file group: the group's datasets, timing excepted
  h5ls "$LOCAL/$1/$2" | awk '{print $1}' | grep -v -E 'per_s|seconds' | sed "s|^|/$2/|"
}
FILES="nope-seed1.h5 rope-seed1.h5 nope-seed2.h5 rope-seed2.h5 nope-seed3.h5 rope-seed3.h5"
check_all() {
  for f in $FILES; do
    # shellcheck disable=SC2046
    same "$f" $(datasets "$f" train) $(datasets "$f" eval)
  done
  for f in rope-seed1.h5 rope-seed2.h5 rope-seed3.h5; do
    same "$f" /analysis/geometry/length_9/js_vs_reference
  done
  # shellcheck disable=SC2046
  same summary.h5 $(datasets summary.h5 scores)
}
check_all
say "every run file's /train and /eval, the JS divergences and the summary's /scores are the same"

# --- resubmit -----------------------------------------------------------------------------------
rm "$RUN/rope-seed1.h5" "$RUN/nope-seed3.h5"
"$LEXP" slurm "$RUN" --resubmit --submit | tee "$WORK/resubmit.txt"
grep -q "rows not done: 2 of 6 (1,4)" "$WORK/resubmit.txt" || fail "resubmit did not pick rows 1 and 4"
mapfile -t ids2 < <(job_ids "$WORK/resubmit.txt")
[ ${#ids2[@]} -eq 2 ] || fail "expected two job ids from --resubmit"
wait_for "${ids2[@]}"
ran=$(ls "$RUN/slurm/logs/" | sed -n "s/^${ids2[0]}_\([0-9]*\)\.out$/\1/p" | sort -n | tr '\n' ' ')
[ "$ran" = "1 4 " ] || fail "resubmit ran rows '$ran', not exactly 1 and 4"
check_all
say "resubmit ran exactly rows 1 and 4; the files are back with the same bits"
# --- a claim: its stages as arrays in order, judged from their files ----------------------------
# A pre-training per seed, two fine-tunings of each (init_from {seed}), and a stage that evaluates
# them two ways: lexp reproduce --slurm chains the two arrays, then the judging job runs the
# evaluating stage and writes the verdict, which must equal a one-process lexp reproduce's.
cat > "$WORK/claim.toml" <<'EOF'
[claim]
id = "Z1"
name = "slurm_claim"
statement = "A fine-tuned RoPE model with PI has a lower loss at 9 than without"
source = "lexp's SLURM test"
published = "none"
protocol = "tiny"
deviations = "tiny"

[[stage]]
name = "pretrain"
recipe = "default"
set = ["model.encodings=[\"rope\"]", "task.vocab=12", "model.d_model=16", "model.n_heads=2", "model.n_layers=2", "train.max_length=5", "train.steps=30", "train.batch_size=8", "train.warmup_steps=5", "train.log_every=1000", "train.checkpoint_every=1000", "eval.lengths=[2, 5, 9]", "eval.samples=16", "eval.batch_size=8", "probe.lengths=[5, 9]", "probe.samples=2", "probe.stored_samples=1", "run.seeds=[1, 2]"]

[[stage]]
name = "finetune"
recipe = "default"
init_from = "pretrain/rope-seed{seed}.h5"
set = ['run.variants=["plain", "pi: encoding_options.rope.scaling=\"pi\"; encoding_options.rope.factor=2"]', "model.encodings=[\"rope\"]", "task.vocab=12", "model.d_model=16", "model.n_heads=2", "model.n_layers=2", "train.max_length=5", "train.steps=10", "train.batch_size=8", "train.warmup_steps=2", "train.log_every=1000", "train.checkpoint_every=1000", "eval.lengths=[2, 5, 9]", "eval.samples=16", "eval.batch_size=8", "probe.lengths=[5, 9]", "probe.samples=2", "probe.stored_samples=1", "run.seeds=[1, 2]"]

[[stage]]
name = "windows"
evaluate = "finetune"
evaluations = ["full", "window: model.pattern=\"sliding_window\"; model.pattern_window=2; model.pattern_when=\"eval\""]

[criterion]
metric = "loss"
lengths = [9, 9]
holds = ["rope-pi+window > rope-pi+full"]
also = ["rope-plain+full"]
EOF
"$LEXP" reproduce "$WORK/claim.toml" --budget smoke --out "$WORK/claim_cluster" --time 00:10:00 \
  --collect-time 00:05:00 --slurm --submit | tee "$WORK/claim_submit.txt"
judge=$(sed -n 's/^judgement: job \([0-9]*\).*/\1/p' "$WORK/claim_submit.txt")
[ -n "$judge" ] || fail "lexp reproduce --slurm --submit printed no judgement job"
grep -q "^stage pretrain: array job [0-9]*, its collect job [0-9]*" "$WORK/claim_submit.txt" &&
  grep -q "^stage finetune: array job" "$WORK/claim_submit.txt" ||
  fail "lexp reproduce --slurm did not submit the pretrain and finetune arrays"
wait_for "$judge"
CV=$WORK/claim_cluster/smoke/Z1_slurm_claim/verdict.h5
[ -f "$CV" ] || { cat "$WORK"/claim_cluster/smoke/Z1_slurm_claim/slurm/logs/judge_*.out; fail "the judging job wrote no verdict"; }
"$LEXP" reproduce "$WORK/claim.toml" --budget smoke --out "$WORK/claim_local" --no-figures > /dev/null
LV=$WORK/claim_local/smoke/Z1_slurm_claim/verdict.h5
for g in rope-pi+window rope-pi+full rope-plain+full; do
  for a in score lo hi; do
    x=$(h5dump -a "/groups/$g/$a" -m %.17g "$CV" | grep "(0)")
    y=$(h5dump -a "/groups/$g/$a" -m %.17g "$LV" | grep "(0)")
    [ -n "$x" ] && [ "$x" = "$y" ] || fail "verdict /groups/$g $a: '$x' on the cluster, '$y' in one process"
  done
done
for a in verdict reason; do
  [ "$(h5dump -a "/$a" "$CV" | grep "(0)")" = "$(h5dump -a "/$a" "$LV" | grep "(0)")" ] ||
    fail "verdict attribute $a differs"
done
say "a claim as chained arrays judges to the same verdict as one lexp reproduce"
echo "PASS"
