// `lexp slurm`: a sweep's job list (experiments/training/job_list.h) as a SLURM job array. Writes
// <run dir>/slurm/sweep.sbatch, one array task per plan row running
//   lexp --threads $SLURM_CPUS_PER_TASK run <run dir>/plan/recipe.toml --out <run dir> --job $ID
// (binary, recipe and directory as absolute paths; one log per task,
// slurm/logs/<array>_<task>.out), and slurm/collect.sbatch, which runs `lexp collect <run dir>`
// once the array has ended, with resources of its own and figures drawn only where gnuplot is
// (--dependency=afterany, given on the sbatch line). Both scripts run the --setup lines before
// strict mode (module and virtualenv scripts often fail under set -u), export
// HDF5_USE_FILE_LOCKING=FALSE (HDF5's locks fail on some Lustre and NFS mounts; lexp locks its
// output directory itself) and name the instruction sets the binary needs. Without --submit it
// prints the two sbatch lines; with it, submits both and prints the job ids. --resubmit submits the
// rows that have no final run file or failed (an explicit --array list), then collect again.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"

namespace lexp {

struct SlurmOptions {
  std::string partition, account, qos;
  std::string time = "04:00:00";  // per array task
  int cpus_per_task = 1;          // one thread per model: the fastest packing lexp measured
  std::string mem;                // per task; empty: the memory estimate of one model, rounded up
  int max_parallel = 0;           // array tasks at once (0: as many as SLURM allows)
  std::string setup;              // shell lines run before lexp (module load ..., a venv, ...)
  std::string binary;             // the lexp the jobs run; empty: this one
  std::string build_preset;       // or the binary of this source tree's build/<preset>/
  std::string collect_time = "01:00:00";  // the collect job's own limits
  std::string collect_mem;                // empty: as an array task's (it may replay a model)
  bool submit = false;
  std::function<void(const std::string&)> print;
};

// Writes the plan and both scripts for a new run directory; submits them when asked.
void WriteSlurmSweep(const RecipeConfig& cfg, const std::string& run_dir, const SlurmOptions& opt);
// Submits the rows of an existing run directory that are not done (missing, killed or failed),
// then collect. Prints what it submitted; nothing to do is not an error.
void ResubmitSlurmSweep(const std::string& run_dir, const SlurmOptions& opt);

// For scripts of other commands (lexp reproduce --slurm): the options checked, the binary the jobs
// run, and a one-task job script with the collect job's resources (--collect-time,
// --collect-mem, else --mem), what a node needs to run that binary, the prologue (--setup before
// strict mode, HDF5's file locking off), then `body`.
void CheckSlurmOptions(const SlurmOptions& opt);
std::string SlurmJobBinary(const SlurmOptions& opt);
std::string SlurmCollectScript(const std::string& name, const std::string& log,
                               const SlurmOptions& opt, const std::string& bin,
                               const std::string& body);

}  // namespace lexp
