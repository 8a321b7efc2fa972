#!/usr/bin/env bash
# The report page of a run directory, opened in a real browser: headless Chromium.
#
#   tests/report/report_browser_test.sh LEXP_BINARY
#
# Installs chromium with apt when missing, then:
#  1. `lexp run` of a tiny two-encoding recipe writes report.html at its end;
#  2. Chromium loads the page inside a test harness page (the report itself has no script) and
#     counts its images that loaded and those that did not, its tables and its score rows: every
#     figure of figures/ is an image that loaded, none is broken, the score table has a row per run;
#  3. Chromium renders the page to a PNG (a screenshot), which must be a picture of some size;
#  4. a damaged copy of a run file and a foreign .h5 file beside the runs: `lexp report` lists both
#     as refused on the page and in its output, exits 2, and the score table keeps one row per
#     intact run.
# Each Chromium runs in a process group of its own, which is killed by its pid when it is done.
# Exit 77 (ctest: skipped) when chromium is missing and can be installed neither as root nor with
# passwordless sudo.
set -euo pipefail

LEXP=$(readlink -f "$1")
say() { echo "[report test $(date +%H:%M:%S)] $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
      echo "SKIP: chromium is missing and the test can be neither root nor passwordless sudo"
      exit 77
    fi
  fi
  say "installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 ||
    { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q --no-install-recommends chromium >/dev/null; }
  CHROMIUM=$(command -v chromium) || fail "chromium did not install"
fi

WORK=$(mktemp -d /tmp/lexp-report-test.XXXXXX)
BROWSER_PID=""
cleanup() {
  set +e
  [ -n "$BROWSER_PID" ] && kill -- -"$BROWSER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# Runs chromium with the given arguments in a process group of its own, at most 120 s; its
# standard output goes to $1.
browse() {
  local out=$1
  shift
  setsid "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --user-data-dir="$WORK/profile" "$@" >"$out" 2>"$WORK/chromium.log" &
  BROWSER_PID=$!
  local waited=0
  while kill -0 "$BROWSER_PID" 2>/dev/null; do
    sleep 0.5
    waited=$((waited + 1))
    if [ "$waited" -gt 240 ]; then
      kill -- -"$BROWSER_PID" 2>/dev/null
      fail "chromium did not finish in 120 s: $(tail -5 "$WORK/chromium.log")"
    fi
  done
  wait "$BROWSER_PID" || true
  kill -- -"$BROWSER_PID" 2>/dev/null || true  # helpers it may have left behind
  BROWSER_PID=""
}

cat >"$WORK/tiny.toml" <<'EOF'
[run]
name = "report_test"
[task]
name = "copy"
vocab = 12
[model]
d_model = 16
n_heads = 2
n_layers = 1
encodings = ["nope", "rope"]
[train]
max_length = 4
steps = 30
batch_size = 8
warmup_steps = 3
log_every = 10
checkpoint_every = 10
[eval]
lengths = [2, 4, 6, 8]
samples = 8
batch_size = 8
[probe]
lengths = [4, 8]
samples = 2
stored_samples = 1
EOF

say "lexp run of a tiny recipe"
"$LEXP" --threads 2 run "$WORK/tiny.toml" --out "$WORK/run" >"$WORK/run.log" 2>&1 ||
  fail "lexp run failed: $(tail -5 "$WORK/run.log")"
grep -q "^report: .*report.html" "$WORK/run.log" || fail "lexp run did not say it wrote the report"
PAGE="$WORK/run/report.html"
[ -s "$PAGE" ] || fail "no report.html"
grep -q "<script" "$PAGE" && fail "the report holds a script"
grep -Eq "(src|href)=\"https?:" "$PAGE" && fail "the report fetches something from outside"
FIGURES=$(find "$WORK/run/figures" -name '*.png' | wc -l)
[ "$FIGURES" -ge 3 ] || fail "the run drew only $FIGURES figures"

cat >"$WORK/harness.html" <<'EOF'
<!DOCTYPE html><html><body><pre id="result">pending</pre>
<iframe id="page" src="run/report.html" style="width:1200px;height:800px"></iframe>
<script>
document.getElementById("page").addEventListener("load", () => {
  const doc = document.getElementById("page").contentDocument;
  const images = Array.from(doc.images);
  const loaded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  const scoreRows = doc.querySelectorAll("table.scores tr").length - 1;
  document.getElementById("result").textContent =
      "RESULT images=" + images.length + " loaded=" + loaded + " broken=" + (images.length - loaded) +
      " tables=" + doc.querySelectorAll("table").length + " score_rows=" + scoreRows +
      " title=" + doc.title.replace(/ /g, "_");
});
</script></body></html>
EOF

say "Chromium loads the page"
browse "$WORK/dom.html" --allow-file-access-from-files --virtual-time-budget=15000 --dump-dom \
  "file://$WORK/harness.html"
RESULT=$(grep -o "RESULT images=[0-9][^<]*" "$WORK/dom.html" | head -1 || true)
[ -n "$RESULT" ] || fail "the harness read nothing: $(head -c 300 "$WORK/dom.html") $(tail -5 "$WORK/chromium.log")"
say "$RESULT"
value() { echo "$RESULT" | grep -o "$1=[^ ]*" | cut -d= -f2; }
[ "$(value images)" -eq "$FIGURES" ] || fail "$(value images) images for $FIGURES figures"
[ "$(value broken)" -eq 0 ] || fail "$(value broken) broken images"
[ "$(value tables)" -ge 2 ] || fail "only $(value tables) tables"
[ "$(value score_rows)" -eq 2 ] || fail "$(value score_rows) score rows for 2 runs"

say "Chromium renders the page to a PNG"
browse "$WORK/shot.log" --window-size=1200,2400 --screenshot="$WORK/page.png" "file://$PAGE"
[ -s "$WORK/page.png" ] || fail "no screenshot: $(tail -5 "$WORK/chromium.log")"
SIZE=$(stat -c %s "$WORK/page.png")
[ "$SIZE" -gt 20000 ] || fail "the screenshot is $SIZE bytes: an empty page?"
head -c 8 "$WORK/page.png" | od -An -c | grep -q "P   N   G" || fail "the screenshot is not a PNG"

say "a damaged run file and a foreign file are refused, not read"
head -c 20000 "$WORK/run/rope.h5" >"$WORK/run/damaged.h5"
printf 'not an HDF5 file\n' >"$WORK/run/foreign.h5"
code=0
"$LEXP" report "$WORK/run" >"$WORK/report.log" 2>&1 || code=$?
[ "$code" -eq 2 ] || fail "lexp report with refused files exited $code, not 2: $(cat "$WORK/report.log")"
grep -q "the report refused .*damaged.h5" "$WORK/report.log" || fail "the refusal is not printed"
grep -q "damaged.h5: refused" "$PAGE" || fail "the damaged file is not listed as refused"
grep -q "foreign.h5: refused" "$PAGE" || fail "the foreign file is not listed as refused"
ROWS=$(sed -n '/<table class="scores">/,/<\/table>/p' "$PAGE" | grep -c "^<tr><td>")
[ "$ROWS" -eq 2 ] || fail "$ROWS score rows with a damaged and a foreign file beside 2 runs"

say "passed"
