#include "experiments/reproduce/claim_slurm.h"

#include <fmt/core.h>

#include <filesystem>
#include <fstream>

#include "experiments/core/shell.h"
#include "experiments/training/sweep.h"
#include "nn/check.h"
#include "nn/io/paths.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  LEXP_INPUT_CHECK(f.good(), "cannot write '" + path + "'");
  f.close();
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
}

}  // namespace

void WriteClaimSlurm(const Claim& claim, const std::string& claim_ref,
                     const ReproduceOptions& opt_given, const SlurmOptions& slurm) {
  CheckSlurmOptions(slurm);
  LEXP_INPUT_CHECK(claim.testable, "claim " + claim.id + " is not testable at this scale (" +
                                       claim.untestable_reason + "): nothing to run");
  ReproduceOptions opt = opt_given;
  opt.out_root = fs::absolute(opt.out_root).lexically_normal().string();
  const std::string dir = ClaimDir(claim, opt);
  const std::string bin = SlurmJobBinary(slurm);
  auto print = [&](const std::string& s) {
    if (slurm.print) slurm.print(s);
  };
  // Each training stage's array and collect, in the order they must run.
  std::string chain;
  int arrays = 0;
  SlurmOptions stage_slurm = slurm;
  stage_slurm.submit = false;
  stage_slurm.print = nullptr;
  for (const ClaimRoot& root : PlanClaimRoots(claim, opt.budget, dir)) {
    for (size_t i = 0; i < claim.stages.size(); ++i) {
      if (claim.stages[i].EvaluatesOnly()) continue;  // run by the last job, from the files
      RecipeConfig cfg = root.recipes[i];
      if (opt.jobs > 0) cfg.jobs = opt.jobs;
      const fs::path run_dir = fs::path(root.dir) / "runs" / claim.stages[i].name;
      WriteSlurmSweep(cfg, run_dir.string(), stage_slurm);
      const std::string what =
          root.budget ? claim.stages[i].name
                      : fmt::format("{} at {} steps", claim.stages[i].name, root.steps);
      chain += fmt::format(
          "# stage {}: {} models\n"
          "a=$(sbatch --parsable ${{after:+--dependency=afterok:$after}} {})\n"
          "a=${{a%%;*}}\n"
          "c=$(sbatch --parsable --dependency=afterany:$a {})\n"
          "after=${{c%%;*}}\n"
          "echo \"stage {}: array job $a, its collect job $after\"\n",
          what, SweepPlan(cfg, run_dir.string()).size(),
          ShellQuote((run_dir / "slurm" / "sweep.sbatch").string()),
          ShellQuote((run_dir / "slurm" / "collect.sbatch").string()), what);
      ++arrays;
    }
  }
  const fs::path slurm_dir = OwnSubdirectory(dir, "slurm");
  OwnSubdirectory(slurm_dir, "logs");
  const std::string judge_path = (slurm_dir / "judge.sbatch").string();
  const std::string judge = SlurmCollectScript(
      "lexp-" + claim.id + "-judge", (slurm_dir / "logs" / "judge_%j.out").string(), slurm, bin,
      fmt::format(
          "# Judges claim {} from the arrays' files (stages that evaluate run here).\n"
          "figures=\"\"\ncommand -v gnuplot > /dev/null || figures=\"--no-figures\"\n"
          "exec {} --threads \"${{SLURM_CPUS_PER_TASK:-1}}\" reproduce {} --budget {} --out {} "
          "--collect $figures\n",
          claim.id, ShellQuote(bin), ShellQuote(claim_ref), opt.budget,
          ShellQuote(opt.out_root)));
  WriteExecutable(judge_path, judge);
  const std::string submit_path = (slurm_dir / "submit.sh").string();
  WriteExecutable(
      submit_path,
      fmt::format("#!/bin/bash\n# Claim {} at the {} budget as SLURM jobs: {} arrays, each after "
                  "the previous stage's collect,\n# then the judgement. Written by lexp reproduce "
                  "--slurm.\nset -euo pipefail\nafter=\"\"\n{}"
                  "j=$(sbatch --parsable --dependency=afterok:$after {})\n"
                  "echo \"judgement: job ${{j%%;*}}; verdict: {}/verdict.h5\"\n",
                  claim.id, opt.budget, arrays, chain, ShellQuote(judge_path), dir));
  print(fmt::format("claim {}: {} stage arrays and the judgement: {}", claim.id, arrays,
                    submit_path));
  if (!slurm.submit) {
    print("submit with: bash " + ShellQuote(submit_path));
    return;
  }
  const ShellResult r = RunShell("bash " + ShellQuote(submit_path) + " 2>&1");
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  LEXP_INPUT_CHECK(r.ran && r.exit_code == 0,
                   "lexp reproduce --slurm --submit: " + submit_path + " failed: " + out);
  print(out);
}

}  // namespace lexp
