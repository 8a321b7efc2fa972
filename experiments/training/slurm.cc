#include "experiments/training/slurm.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include <sys/vfs.h>
#include <unistd.h>

#include "experiments/core/memory_estimate.h"
#include "experiments/core/shell.h"
#include "experiments/training/job_list.h"
#include "experiments/training/sweep.h"
#include "nn/check.h"
#include "nn/io/paths.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

#ifndef LEXP_SOURCE_DIR
#define LEXP_SOURCE_DIR "."
#endif

std::string ThisBinary() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  LEXP_INPUT_CHECK(!ec, "lexp slurm: cannot tell where the lexp binary is (/proc/self/exe)");
  return p.string();
}

// The lexp the jobs run: --binary, the build of --build-preset in this source tree, or this one.
std::string JobBinary(const SlurmOptions& o) {
  LEXP_INPUT_CHECK(o.binary.empty() || o.build_preset.empty(),
                   "lexp slurm: give --binary or --build-preset, not both");
  if (!o.build_preset.empty()) {
    static const std::vector<std::string> presets = {"release", "avx2", "portable"};
    LEXP_INPUT_CHECK(std::find(presets.begin(), presets.end(), o.build_preset) != presets.end(),
                     "--build-preset '" + o.build_preset +
                         "': allowed: release (this CPU's instruction sets), avx2 (x86-64-v3: "
                         "AVX2 CPUs), portable (any x86-64 CPU)");
    const fs::path bin = fs::path(LEXP_SOURCE_DIR) / "build" / o.build_preset / "lexp";
    LEXP_INPUT_CHECK(fs::is_regular_file(bin),
                     "--build-preset " + o.build_preset + ": '" + bin.string() +
                         "' is not built; build it with: cd " + ShellQuote(LEXP_SOURCE_DIR) +
                         " && cmake --preset " + o.build_preset + " && cmake --build --preset " +
                         o.build_preset);
    return bin.string();
  }
  if (o.binary.empty()) return ThisBinary();
  const fs::path bin = fs::absolute(o.binary).lexically_normal();
  LEXP_INPUT_CHECK(fs::is_regular_file(bin) && access(bin.c_str(), X_OK) == 0,
                   "--binary '" + o.binary + "': not an executable file");
  return bin.string();
}

// What the jobs' binary says of itself: its --version line, and whether it starts on this machine
// (a binary built for the compute nodes may not start on the login node: its start-up check exits
// 2 naming what this CPU lacks).
struct BinaryDescription {
  std::string version;  // "lexp 0.1.0 (native build; instruction sets it needs: ...)"
  std::string sets;     // the sets it needs, as it lists them; empty when it does not say
  std::string refusal;  // its start-up check's message when it does not start here
};

BinaryDescription DescribeBinary(const std::string& bin) {
  const ShellResult r = RunShell(ShellQuote(bin) + " --version 2>&1");
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  BinaryDescription d;
  if (r.ran && r.exit_code == 2 && out.find("this CPU lacks") != std::string::npos) {
    d.refusal = out;
    return d;
  }
  LEXP_INPUT_CHECK(r.ran && r.exit_code == 0 && out.rfind("lexp ", 0) == 0,
                   "'" + bin + "' is not a lexp binary (its --version printed '" +
                       out.substr(0, 200) + "')");
  d.version = out;
  const std::string key = "instruction sets it needs: ";
  const auto at = out.find(key);
  if (at != std::string::npos) d.sets = out.substr(at + key.size(), out.rfind(')') - at - key.size());
  return d;
}

// Lines of the scripts' comment saying what a node needs to run `bin`.
std::string NodeNeeds(const std::string& bin, const BinaryDescription& d) {
  if (!d.refusal.empty())
    return "# " + bin + " does not start on the machine that wrote this script:\n# " + d.refusal +
           "\n";
  if (d.sets.empty())
    return "# " + d.version + ": an older lexp that does not check the CPU at start-up.\n";
  return fmt::format(
      "# {}\n# A node needs these instruction sets; one without them exits 2 naming the missing "
      "ones\n# (for nodes of several CPU kinds: lexp slurm --build-preset avx2 or portable).\n",
      d.version);
}

// Whether `dir` is on a node-local file system: /tmp, /var/tmp, /dev/shm, or any tmpfs. Array
// tasks on other nodes would write their files there, where collect never finds them.
bool NodeLocal(const std::string& dir) {
  for (const char* local : {"/tmp", "/var/tmp", "/dev/shm"}) {
    const std::string l = local;
    if (dir == l || dir.rfind(l + "/", 0) == 0) return true;
  }
  fs::path existing = dir;
  while (!existing.empty() && !fs::exists(existing)) existing = existing.parent_path();
  struct statfs st {};
  constexpr long kTmpfsMagic = 0x01021994;
  return !existing.empty() && statfs(existing.c_str(), &st) == 0 && st.f_type == kTmpfsMagic;
}

// --mem per task: the estimate of one model's peak (the largest task and key-sweep value) with
// half again for what the estimate leaves out, in MiB rounded up to 256.
std::string DefaultMemory(const RecipeConfig& cfg) {
  const double peak = LargestModelNeed(cfg).bytes;
  const double mib = std::ceil(1.5 * peak / (1 << 20) / 256) * 256;
  return fmt::format("{}M", std::max(512.0, mib));
}

std::string Header(const std::string& name, const std::string& log, const SlurmOptions& o,
                   const std::string& mem, const std::string& time) {
  std::string h = "#!/bin/bash\n";
  h += "#SBATCH --job-name=" + name + "\n";
  h += "#SBATCH --output=" + log + "\n";
  h += fmt::format("#SBATCH --cpus-per-task={}\n", o.cpus_per_task);
  h += "#SBATCH --ntasks=1\n";
  if (!mem.empty()) h += "#SBATCH --mem=" + mem + "\n";
  if (!time.empty()) h += "#SBATCH --time=" + time + "\n";
  if (!o.partition.empty()) h += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.account.empty()) h += "#SBATCH --account=" + o.account + "\n";
  if (!o.qos.empty()) h += "#SBATCH --qos=" + o.qos + "\n";
  return h;
}

std::string ArraySpec(const std::string& rows, int max_parallel) {
  return max_parallel > 0 ? fmt::format("{}%{}", rows, max_parallel) : rows;
}

struct Scripts {
  std::string sweep, collect;
};

Scripts ScriptPaths(const std::string& run_dir) {
  const fs::path d = fs::path(run_dir) / "slurm";
  return {(d / "sweep.sbatch").string(), (d / "collect.sbatch").string()};
}

// The lines every job runs before lexp: the --setup lines first, outside strict mode (module and
// virtualenv scripts often read unset variables), then strict mode and HDF5's file locking off.
std::string Prologue(const SlurmOptions& o) {
  std::string p;
  if (!o.setup.empty())
    p += "# --setup, before strict mode (module and virtualenv scripts often read unset "
         "variables):\n" +
         o.setup + "\n";
  p += "set -euo pipefail\n"
       "# HDF5's own file locks fail on some Lustre and NFS mounts; lexp locks its output "
       "directory\n# itself (flock on .lexp.lock).\nexport HDF5_USE_FILE_LOCKING=FALSE\n";
  return p;
}

void WriteScripts(const RecipeConfig& cfg, const std::string& run_dir, size_t rows,
                  const SlurmOptions& o, const std::string& bin, const std::string& needs) {
  const fs::path dir = OwnSubdirectory(run_dir, "slurm");
  OwnSubdirectory(dir, "logs");
  const std::string recipe = FrozenRecipePath(run_dir);
  const std::string mem = o.mem.empty() ? DefaultMemory(cfg) : o.mem;
  const std::string collect_mem = o.collect_mem.empty() ? mem : o.collect_mem;
  const Scripts s = ScriptPaths(run_dir);
  std::string sweep =
      Header("lexp-" + cfg.name, (dir / "logs" / "%A_%a.out").string(), o, mem, o.time);
  sweep += "#SBATCH --array=" + ArraySpec(fmt::format("0-{}", rows - 1), o.max_parallel) + "\n";
  sweep += fmt::format(
      "# lexp sweep '{}': one array task per row of {}/plan.tsv ({} rows). `lexp slurm {} "
      "--resubmit`\n# submits the rows that are not done (an --array list on the sbatch line "
      "overrides the one above).\n{}{}",
      cfg.name, PlanDirectory(run_dir), rows, run_dir, needs, Prologue(o));
  sweep += fmt::format(
      "exec {} --threads \"${{SLURM_CPUS_PER_TASK:-1}}\" run {} --out {} --job "
      "\"$SLURM_ARRAY_TASK_ID\"\n",
      ShellQuote(bin), ShellQuote(recipe), ShellQuote(run_dir));
  std::string collect = Header("lexp-" + cfg.name + "-collect",
                               (dir / "logs" / "collect_%j.out").string(), o, collect_mem,
                               o.collect_time);
  collect += fmt::format(
      "# Collects the sweep once its array has ended (submitted with --dependency=afterany).\n{}{}"
      "# Figures need gnuplot: on a node without it, collect writes their data and gnuplot "
      "scripts;\n# draw them where gnuplot is with `lexp figures {}`.\nfigures=\"\"\n"
      "command -v gnuplot > /dev/null || {{ figures=\"--data-only\"; echo \"lexp collect: no "
      "gnuplot on ${{HOSTNAME:-this node}}: figures as data and scripts\"; }}\n"
      "exec {} --threads \"${{SLURM_CPUS_PER_TASK:-1}}\" collect $figures {}\n",
      needs, Prologue(o), ShellQuote(run_dir), ShellQuote(bin), ShellQuote(run_dir));
  for (const auto& [path, text] : {std::pair{s.sweep, sweep}, std::pair{s.collect, collect}}) {
    std::ofstream f(path, std::ios::trunc);
    f << text;
    LEXP_INPUT_CHECK(f.good(), "cannot write '" + path + "'");
    f.close();
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  }
}

// Runs an sbatch line and returns the job id it prints (--parsable: "id" or "id;cluster").
std::string Sbatch(const std::string& args) {
  const std::string cmd = "sbatch --parsable " + args + " 2>&1";
  const ShellResult r = RunShell(cmd);
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  LEXP_INPUT_CHECK(r.ran && r.exit_code != 127,
                   "lexp slurm --submit: sbatch was not found (is this a SLURM login node?); "
                   "the scripts are written, submit them with the lines lexp slurm prints "
                   "without --submit");
  LEXP_INPUT_CHECK(r.exit_code == 0, "lexp slurm --submit: `" + cmd + "` failed: " + out);
  const std::string id = out.substr(0, out.find(';'));
  LEXP_INPUT_CHECK(!id.empty() && std::all_of(id.begin(), id.end(), ::isdigit),
                   "lexp slurm --submit: sbatch printed '" + out + "', not a job id");
  return id;
}

void SubmitOrPrint(const std::string& run_dir, const std::string& array, const SlurmOptions& o) {
  auto print = [&](const std::string& s) {
    if (o.print) o.print(s);
  };
  const Scripts s = ScriptPaths(run_dir);
  const std::string sweep_args =
      (array.empty() ? "" : "--array=" + array + " ") + ShellQuote(s.sweep);
  if (!o.submit) {
    print("submit with:");
    print("  jobid=$(sbatch --parsable " + sweep_args + ")");
    print("  sbatch --dependency=afterany:$jobid " + ShellQuote(s.collect));
    return;
  }
  const std::string id = Sbatch(sweep_args);
  print("submitted the sweep array: job " + id);
  const std::string cid = Sbatch("--dependency=afterany:" + id + " " + ShellQuote(s.collect));
  print("submitted the collect job: job " + cid + " (after " + id + ")");
  print(fmt::format("logs: {}/slurm/logs/; progress: lexp status {}", run_dir, run_dir));
}

void CheckOptions(const SlurmOptions& o) {
  LEXP_INPUT_CHECK(o.cpus_per_task >= 1, "--cpus-per-task must be at least 1");
  LEXP_INPUT_CHECK(o.max_parallel >= 0, "--max-parallel must be 0 (no limit) or more");
  for (const auto& [name, v] :
       {std::pair{"--partition", o.partition}, std::pair{"--account", o.account},
        std::pair{"--qos", o.qos}, std::pair{"--time", o.time}, std::pair{"--mem", o.mem},
        std::pair{"--collect-time", o.collect_time}, std::pair{"--collect-mem", o.collect_mem}})
    LEXP_INPUT_CHECK(v.find_first_of(" \t\n'\"$`\\;") == std::string::npos,
                     std::string(name) + " '" + v + "': no spaces, quotes or shell characters");
  // The forms sbatch takes: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
  // days-hours:minutes, days-hours:minutes:seconds (sbatch(1), --time); a size with K, M, G or T.
  static const std::regex time(R"(\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2})");
  for (const auto& [name, v] : {std::pair{"--time", o.time}, std::pair{"--collect-time", o.collect_time}})
    LEXP_INPUT_CHECK(v.empty() || std::regex_match(v, time),
                     std::string(name) + " '" + v +
                         "': allowed: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (as "
                         "sbatch takes it)");
  static const std::regex mem(R"(\d+[KMGT]?)");
  for (const auto& [name, v] : {std::pair{"--mem", o.mem}, std::pair{"--collect-mem", o.collect_mem}})
    LEXP_INPUT_CHECK(v.empty() || std::regex_match(v, mem),
                     std::string(name) + " '" + v +
                         "': allowed: a number of megabytes, or one with K, M, G or "
                         "T (e.g. 2G)");
}

}  // namespace

void WriteSlurmSweep(const RecipeConfig& cfg, const std::string& run_dir_given,
                     const SlurmOptions& o) {
  CheckOptions(o);
  const std::string run_dir = fs::absolute(run_dir_given).lexically_normal().string();
  const std::string bin = JobBinary(o);
  const BinaryDescription binary = DescribeBinary(bin);
  const std::vector<PlanRow> rows = SweepPlan(cfg, run_dir);
  LEXP_INPUT_CHECK(!rows.empty(), "recipe '" + cfg.source_name + "' has no model to train");
  WritePlanFiles(cfg, rows, run_dir);
  WriteScripts(cfg, run_dir, rows.size(), o, bin, NodeNeeds(bin, binary));
  if (NodeLocal(run_dir))
    std::fprintf(stderr,
                 "lexp slurm: warning: --out '%s' is node-local on most clusters (/tmp, "
                 "/var/tmp, /dev/shm, a tmpfs): array tasks on other nodes would write there "
                 "and collect would not find their files; give a directory on a shared file "
                 "system\n",
                 run_dir.c_str());
  if (o.print) {
    o.print(fmt::format("plan: {} rows in {}/plan.tsv; recipe frozen in {}", rows.size(),
                        PlanDirectory(run_dir), FrozenRecipePath(run_dir)));
    o.print("scripts: " + ScriptPaths(run_dir).sweep + ", " + ScriptPaths(run_dir).collect);
    if (!binary.refusal.empty())
      o.print("binary: " + bin + " does not start here (" + binary.refusal +
              "); the nodes it runs on must have what this machine lacks");
    else if (binary.sets.empty())
      o.print("binary: " + bin + " (" + binary.version +
              ": an older lexp without a start-up check of the CPU)");
    else
      o.print("binary: " + bin + "; every node of the array needs the instruction sets: " +
              binary.sets + " (nodes of several CPU kinds: --build-preset avx2 or portable)");
  }
  SubmitOrPrint(run_dir, "", o);
}

void CheckSlurmOptions(const SlurmOptions& o) { CheckOptions(o); }

std::string SlurmJobBinary(const SlurmOptions& o) { return JobBinary(o); }

std::string SlurmCollectScript(const std::string& name, const std::string& log,
                               const SlurmOptions& o, const std::string& bin,
                               const std::string& body) {
  return Header(name, log, o, o.collect_mem.empty() ? o.mem : o.collect_mem, o.collect_time) +
         NodeNeeds(bin, DescribeBinary(bin)) + Prologue(o) + body;
}

void ResubmitSlurmSweep(const std::string& run_dir_given, const SlurmOptions& o) {
  CheckOptions(o);
  const std::string run_dir = fs::absolute(run_dir_given).lexically_normal().string();
  const RecipeConfig cfg = ReadFrozenRecipe(run_dir);
  const std::vector<PlanRow> rows = SweepPlan(cfg, run_dir);
  std::vector<size_t> todo;
  bool with_checkpoint = false;
  for (const auto& s : ReadRowStates(rows)) {
    if (s.state == RowState::kDone || s.state == RowState::kDiverged) continue;
    todo.push_back(s.row.index);
    with_checkpoint = with_checkpoint || s.state == RowState::kRunning;
  }
  if (todo.empty()) {
    if (o.print) o.print("every row is done or diverged: nothing to submit");
    return;
  }
  // The scripts as lexp slurm wrote them (their options stay); the --array list overrides theirs.
  LEXP_INPUT_CHECK(fs::exists(ScriptPaths(run_dir).sweep),
                   "'" + run_dir + "' has no slurm/sweep.sbatch: make it with lexp slurm");
  if (o.print) {
    o.print(
        fmt::format("rows not done: {} of {} ({})", todo.size(), rows.size(), JobListText(todo)));
    if (with_checkpoint)
      o.print(
          "some have a checkpoint: if their jobs still run (squeue), cancel them first; a "
          "resubmitted row resumes from its checkpoint");
  }
  SubmitOrPrint(run_dir, ArraySpec(JobListText(todo), o.max_parallel), o);
}

}  // namespace lexp
