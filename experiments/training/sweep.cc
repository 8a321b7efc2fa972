#include "experiments/training/sweep.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

#include "experiments/core/memory_estimate.h"
#include "experiments/core/output_lock.h"
#include "experiments/core/provenance.h"
#include "experiments/core/run_file.h"
#include "experiments/core/steps_cap.h"
#include "experiments/replay/analyze.h"
#include "experiments/training/job_list.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/io/paths.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp {

namespace {

// One model of the sweep, decided before anything runs.
struct PlannedRun {
  RecipeConfig recipe;  // this model's own recipe (task, seed and key-sweep value applied)
  std::string encoding, label, dir;
  std::string sweep_value;  // the key sweep's value for this model ("" without one)
  RunOptions options;
  // The run's name (its file's, and the label it records) and its file.
  std::string Name() const { return options.name.empty() ? encoding : options.name; }
  std::string File() const { return RunFilePath(dir, Name()); }
};

std::vector<PlannedRun> PlanRuns(const RecipeConfig& cfg, const SweepOptions& opt) {
  std::vector<PlannedRun> plan;
  const bool task_sweep = !cfg.tasks.empty(), seed_sweep = !cfg.seeds.empty();
  const bool key_sweep = !cfg.SweepKey().empty();
  for (const auto& task : cfg.Tasks()) {
    const std::string dir =
        task_sweep ? (std::filesystem::path(opt.out_dir) / task).string() : opt.out_dir;
    for (int seed : cfg.Seeds()) {
      const std::vector<RecipeConfig::Variant> variants = cfg.Variants();
      for (size_t v = 0; v < variants.size(); ++v) {
        const RecipeConfig::Variant& variant = variants[v];
        RecipeConfig one = cfg.For(task, seed);
        if (!variant.sets.empty()) ApplyOverrides(one, variant.sets);
        one.jobs = 1;  // a model is one job: its file does not depend on how many ran at once
        // NoPE first: it is the JS reference the others' analyses look for beside them.
        std::vector<std::string> encodings = cfg.encodings;
        std::stable_partition(encodings.begin(), encodings.end(),
                              [](const std::string& e) { return e == "nope"; });
        for (const auto& enc : encodings) {
          // An encoding the swept key leaves alone is one model: trained with the first variant,
          // named without its suffix, its recipe without the override.
          const bool changed = cfg.SweepChanges(enc);
          if (!changed && v > 0) continue;
          PlannedRun r{changed ? one : cfg.For(task, seed),  enc,
                       changed ? enc + variant.suffix : enc, dir,
                       changed ? variant.value : "",         {}};
          r.recipe = WithStepsCap(r.recipe);  // what trains, and what the run file records
          r.recipe.jobs = 1;
          r.options.out_dir = dir;
          r.options.resume = opt.resume;
          r.options.sweep_key = cfg.SweepKey();
          r.options.progress = opt.progress;
          r.options.name =
              seed_sweep ? fmt::format("{}-seed{}", r.label, seed) : (key_sweep ? r.label : "");
          std::string what = r.label;
          if (seed_sweep) what += fmt::format(" seed {}", seed);
          if (task_sweep) what = task + " " + what;
          r.options.label = what;
          plan.push_back(std::move(r));
        }
      }
    }
  }
  for (size_t k = 0; k < plan.size(); ++k)
    plan[k].options.label += fmt::format(" {}/{}", k + 1, plan.size());
  return plan;
}

// Without --resume or --overwrite, a directory that already holds any of the sweep's run files is
// refused: finished runs are never replaced silently.
void RefuseToOverwrite(const std::vector<PlannedRun>& plan, const SweepOptions& opt) {
  if (opt.resume || opt.overwrite) return;
  std::vector<std::string> found;
  for (const auto& r : plan) {
    if (std::filesystem::exists(r.File())) found.push_back(r.File());
  }
  if (found.empty()) return;
  std::string list;
  for (size_t k = 0; k < std::min<size_t>(found.size(), 3); ++k) list += (k ? ", " : "") + found[k];
  if (found.size() > 3) list += fmt::format(" and {} more", found.size() - 3);
  FailInput("'" + opt.out_dir + "' already holds run files of this recipe (" + list +
            "); pass --resume to keep finished models and continue the others, --overwrite to "
            "train them all again, or --out for another directory");
}

// Files the recipe reads must exist before anything is trained (ValidateRecipe checks the recipe
// alone, so a recipe that fine-tunes a run still to be made validates).
void CheckInputFiles(const std::vector<PlannedRun>& plan) {
  for (const auto& r : plan) {
    if (r.recipe.init_from.empty()) continue;
    const std::string at =
        "recipe '" + r.recipe.source_name + "': train.init_from = \"" + r.recipe.init_from + "\"";
    LEXP_INPUT_CHECK(std::filesystem::is_regular_file(r.recipe.init_from),
                     at + " is not a file (a completed run file was expected; paths are "
                          "relative to the working directory)");
    // The weights as the trainer will load them (a completed run, float32, the shapes of this
    // recipe's model), checked before anything is written: a refusal leaves no plan and no
    // failed run file behind.
    try {
      AssembledModel m = AssembleModel(r.recipe, r.encoding);
      std::vector<ParamRef<float>> params;
      for (const auto& p : m.model->Parameters())
        if (!m.model->config().side.Active() || p.name.rfind("side", 0) != 0) params.push_back(p);
      LoadModelWeights(r.recipe.init_from, params);
    } catch (const InputError& e) {
      FailInput(at + ": " + e.what());
    }
  }
}

// The job list of a plan (its rows in plan order).
std::vector<PlanRow> RowsOf(const RecipeConfig& cfg, const std::vector<PlannedRun>& plan) {
  std::vector<PlanRow> rows;
  for (const auto& r : plan) {
    PlanRow row;
    row.index = rows.size();
    row.task = r.recipe.task;
    row.encoding = r.encoding;
    row.label = r.label;
    row.seed = r.recipe.seed;
    row.sweep_key = cfg.SweepKey();
    row.sweep_value = r.sweep_value;
    row.file = r.File();
    RecipeConfig copy = r.recipe;
    row.recipe = RecipeToToml(copy);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

std::vector<PlanRow> SweepPlan(const RecipeConfig& cfg, const std::string& out_dir) {
  SweepOptions opt;
  opt.out_dir = out_dir;
  return RowsOf(cfg, PlanRuns(cfg, opt));
}

std::vector<RunSummary> RunRecipe(const RecipeConfig& cfg, const SweepOptions& opt) {
  CheckMemoryFits(cfg);
  std::vector<PlannedRun> plan = PlanRuns(cfg, opt);
  if (!opt.rows.empty()) {  // --job: those rows alone, each kept when done, resumed when not
    std::vector<PlannedRun> chosen;
    for (size_t k : opt.rows) {
      LEXP_INPUT_CHECK(k < plan.size(),
                       fmt::format("--job {}: the plan of recipe '{}' has {} rows (0-{}; lexp "
                                   "plan lists them)",
                                   k, cfg.source_name, plan.size(), plan.size() - 1));
      chosen.push_back(plan[k]);
      chosen.back().options.resume = true;
    }
    plan = std::move(chosen);
  }
  CheckInputFiles(plan);
  for (const auto& r : plan)
    if (r.recipe.lora_rank > 0 && r.recipe.init_from.empty()) {
      std::fprintf(stderr,
                   "lexp: note: %s: train.lora_rank = %d with no train.init_from trains adapters "
                   "on a frozen random model (LoRA adapts a trained one)\n",
                   r.label.c_str(), r.recipe.lora_rank);
      break;
    }
  // One writer per directory: the whole sweep holds it; --job rows share it, each holding its own
  // row (experiments/core/output_lock.h).
  std::vector<OutputLock> locks;
  locks.emplace_back(opt.out_dir,
                     opt.rows.empty() ? OutputLock::Mode::kExclusive : OutputLock::Mode::kShared);
  for (size_t k : opt.rows) locks.push_back(OutputLock::Row(opt.out_dir, static_cast<long>(k)));
  if (opt.rows.empty()) RefuseToOverwrite(plan, opt);
  std::error_code ec;
  std::filesystem::create_directories(opt.out_dir, ec);
  LEXP_INPUT_CHECK(!ec,
                   "cannot create the output directory '" + opt.out_dir + "': " + ec.message());
  std::vector<std::string> dirs;
  for (const auto& r : plan) {
    if (std::find(dirs.begin(), dirs.end(), r.dir) == dirs.end()) dirs.push_back(r.dir);
    // A task's folder inside --out: never through a link.
    OwnSubdirectory(opt.out_dir, std::filesystem::path(r.dir).lexically_relative(opt.out_dir));
  }
  // The job list of the whole sweep, so that `lexp status` and `lexp collect` read this directory
  // as they read one run in pieces (a --job run reads the plan it was given instead).
  if (opt.rows.empty()) WritePlanFiles(cfg, RowsOf(cfg, plan), opt.out_dir);
  // Models run concurrently with run.jobs > 1, each in a task arena with its share of the threads;
  // progress lines are kept whole.
  const int jobs = SweepJobs(cfg, plan.size());
  std::mutex say;
  const auto progress = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(say);
    if (opt.progress) opt.progress(line);
  };
  std::vector<RunSummary> out(plan.size());
  auto run_one = [&](size_t k, const std::function<void()>* before_analysis) {
    const PlannedRun& r = plan[k];
    RunOptions options = r.options;
    if (options.progress) options.progress = progress;
    if (before_analysis) options.before_analysis = *before_analysis;
    RunSummary s;
    auto fail = [&](RunSummary::Failure failure, const std::string& message) {
      s.encoding = r.encoding;
      s.state = "failed";
      s.failure = failure;
      s.message = message;
      s.path = r.File();
      WriteFailedRunFile(r.recipe, r.encoding, s.path, s.message);
    };
    try {
      s = TrainAndEvaluate(r.recipe, r.encoding, options);
    } catch (const InputError& e) {
      fail(RunSummary::Failure::kInput, e.what());
    } catch (const Error& e) {
      fail(RunSummary::Failure::kInternal, e.what());
    } catch (const std::bad_alloc&) {
      fail(RunSummary::Failure::kInput,
           "out of memory (the estimate made before the run did not foresee it)");
    }
    s.task = r.recipe.task;
    s.seed = r.recipe.seed;
    s.label = r.label;
    if (s.state != "completed")
      progress(fmt::format("[{}] {}{}", r.options.label, s.state,
                           s.message.empty() ? "" : ": " + s.message));
    out[k] = s;
  };
  // With jobs models at once, the last plan.size() % jobs models would each run on its share of
  // the threads while the others' threads idle: they run one after another on all threads.
  const size_t packed = jobs == 1 ? 0 : plan.size() - plan.size() % static_cast<size_t>(jobs);
  if (packed > 0) {
    // Models start in plan order (each group's NoPE run first), jobs at a time; a model's analysis
    // waits for its group's NoPE run to be finished, as a sequential sweep would have it.
    std::vector<long> reference(plan.size(), -1);
    for (size_t k = 0; k < plan.size(); ++k) {
      for (const std::string& beside :
           ReferenceCandidates(plan[k].File(), plan[k].encoding, plan[k].Name(), cfg.SweepKey()))
        for (size_t n = 0; n < k && reference[k] < 0; ++n)
          if (std::filesystem::path(plan[n].File()).lexically_normal() ==
              std::filesystem::path(beside).lexically_normal())
            reference[k] = static_cast<long>(n);
    }
    std::vector<char> done(plan.size(), 0);
    std::mutex done_mu;
    std::condition_variable done_cv;
    const int per_job = std::max(1, ThreadLimit::Active() / jobs);
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::vector<std::thread> workers;
    for (int w = 0; w < jobs; ++w)
      workers.emplace_back([&] {
        tbb::task_arena arena(per_job);
        for (size_t k = next++; k < packed; k = next++) {
          const std::function<void()> wait = [&, k] {
            if (reference[k] < 0) return;
            std::unique_lock<std::mutex> lock(done_mu);
            done_cv.wait(lock, [&] { return done[static_cast<size_t>(reference[k])] != 0; });
          };
          try {
            arena.execute([&] { run_one(k, &wait); });
          } catch (...) {
            std::lock_guard<std::mutex> lock(done_mu);
            if (!error) error = std::current_exception();
          }
          {
            std::lock_guard<std::mutex> lock(done_mu);
            done[k] = 1;
          }
          done_cv.notify_all();
        }
        h5::ClearThreadErrors();  // this thread ends here
      });
    for (auto& t : workers) t.join();
    if (error) std::rethrow_exception(error);
  }
  for (size_t k = packed; k < plan.size(); ++k) run_one(k, nullptr);
  if (!opt.rows.empty()) return out;  // `lexp collect` draws and summarises the whole sweep
  if (opt.figures) {
    for (const auto& dir : dirs)
      for (const auto& png : DrawAllFigures(dir))
        if (opt.progress) opt.progress(FigureLine(png));
  }
  if (cfg.IsSweep()) {
    const std::string summary = WriteSweepSummary(cfg, out, opt.out_dir);
    if (opt.progress) opt.progress("summary: " + summary);
    if (opt.figures) {
      const std::string png = DrawScoreTable(summary);
      if (opt.progress) opt.progress(FigureLine(png));
    }
  }
  return out;
}

int SweepJobs(const RecipeConfig& cfg, size_t models) {
  const int n = static_cast<int>(std::min<size_t>(models, 1024));
  if (cfg.jobs > 0) return std::max(1, std::min(cfg.jobs, n));
  return std::max(1, std::min({ThreadLimit::Active(), n, ModelsThatFitAtOnce(cfg)}));
}

ProtocolScores ScoresOf(const RunSummary& r, int N) {
  if (r.state != "completed") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan};
  }
  return ScoreEvalRows(r.eval, N);
}

namespace {

struct SeedStats {
  double mean = std::numeric_limits<double>::quiet_NaN(), sd = mean, max = mean;
  int n = 0;
};

SeedStats Stats(const std::vector<double>& v) {
  SeedStats s;
  double sum = 0, mx = -1;
  for (double x : v)
    if (!std::isnan(x)) {
      sum += x;
      mx = std::max(mx, x);
      ++s.n;
    }
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  s.max = mx;
  double ss = 0;
  for (double x : v)
    if (!std::isnan(x)) ss += (x - s.mean) * (x - s.mean);
  s.sd = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  return s;
}

}  // namespace

std::string WriteSweepSummary(const RecipeConfig& cfg, const std::vector<RunSummary>& runs,
                              const std::string& out_dir) {
  const std::vector<std::string> tasks = cfg.Tasks();
  const std::vector<int> seeds = cfg.Seeds();
  const std::vector<std::string> labels = cfg.ModelLabels();
  const uint64_t T = tasks.size(), E = labels.size(), S = seeds.size();
  std::vector<double> ruoss(T * E * S), kz(T * E * S), ind(T * E * S);
  std::vector<std::string> states(T * E * S, "missing");
  for (const auto& r : runs) {
    const auto ti = std::find(tasks.begin(), tasks.end(), r.task) - tasks.begin();
    const auto ei = std::find(labels.begin(), labels.end(), r.label) - labels.begin();
    const auto si = std::find(seeds.begin(), seeds.end(), r.seed) - seeds.begin();
    LEXP_CHECK(ti < static_cast<long>(T) && ei < static_cast<long>(E) &&
                   si < static_cast<long>(S),
               "summary: run '" + r.label + "' (task " + r.task + ", seed " +
                   std::to_string(r.seed) + ") is not a row of the recipe's sweep");
    const uint64_t at = (ti * E + ei) * S + si;
    const ProtocolScores p = ScoresOf(r, cfg.train_max_length);
    ruoss[at] = p.ruoss;
    kz[at] = p.kazemnejad_exact;
    ind[at] = p.in_distribution;
    states[at] = r.state;
  }
  std::vector<double> mean(T * E), sd(T * E), mx(T * E), kz_mean(T * E);
  for (uint64_t i = 0; i < T * E; ++i) {
    const SeedStats s = Stats({ruoss.begin() + i * S, ruoss.begin() + (i + 1) * S});
    mean[i] = s.mean;
    sd[i] = s.sd;
    mx[i] = s.max;
    kz_mean[i] = Stats({kz.begin() + i * S, kz.begin() + (i + 1) * S}).mean;
  }
  const std::string path = (std::filesystem::path(out_dir) / "summary.h5").string();
  h5::Writer w(path);
  WriteProvenance(w.root(), ThreadLimit::Active());
  RecipeConfig copy = cfg;
  w.root().CreateGroup("config").WriteString("recipe", RecipeToToml(copy));
  auto join = [](const auto& v) {
    std::string s;
    for (const auto& x : v) s += fmt::format("{}{}", s.empty() ? "" : ",", x);
    return s;
  };
  w.root().SetAttr("tasks", join(tasks));
  w.root().SetAttr("encodings", join(labels));  // with the key-sweep suffix when there is one
  if (!cfg.SweepKey().empty()) w.root().SetAttr("sweep", cfg.SweepKey());
  w.root().SetAttr("seeds", join(seeds));
  w.root().SetAttr("train_max_length", cfg.train_max_length);
  int M = 0;
  for (int n : cfg.EvalLengths()) M = std::max(M, n);
  w.root().SetAttr("max_eval_length", M);
  h5::Group g = w.root().CreateGroup("scores");
  g.WriteDoubles(
      "ruoss", ruoss, {T, E, S}, "task,encoding,seed",
      "token accuracy averaged over the evaluated lengths N+1..M (NaN: run not completed)");
  g.WriteDoubles("kazemnejad_exact", kz, {T, E, S}, "task,encoding,seed",
                 "exact match averaged over the evaluated lengths N+1..2N");
  g.WriteDoubles("in_distribution", ind, {T, E, S}, "task,encoding,seed",
                 "token accuracy averaged over the evaluated lengths 1..N");
  g.WriteDoubles("ruoss_mean", mean, {T, E}, "task,encoding", "mean over completed seeds");
  g.WriteDoubles("ruoss_sd", sd, {T, E}, "task,encoding",
                 "sample standard deviation over seeds (0 with one seed)");
  g.WriteDoubles("ruoss_max", mx, {T, E}, "task,encoding",
                 "max over seeds (the published convention of Deletang et al. and Ruoss et al.)");
  g.WriteDoubles("kazemnejad_exact_mean", kz_mean, {T, E}, "task,encoding", "mean over seeds");
  std::string st;
  for (const auto& x : states) st += (st.empty() ? "" : ",") + x;
  g.SetAttr("states", st);
  w.Commit();
  return path;
}

std::string SeedSummaryTable(const RecipeConfig& cfg, const std::vector<RunSummary>& runs) {
  std::string s = fmt::format(
      "score per task and encoding over seeds {}: token accuracy averaged over lengths {}..M "
      "(mean ± sd, max), and exact match over {}..{} (mean)\n",
      fmt::format("{}", fmt::join(cfg.Seeds(), ",")), cfg.train_max_length + 1,
      cfg.train_max_length + 1, 2 * cfg.train_max_length);
  // The label column as wide as the longest label (at least 14), so the numbers stay in columns.
  size_t width = 14;
  for (const auto& enc : cfg.ModelLabels()) width = std::max(width, enc.size());
  for (const auto& task : cfg.Tasks()) {
    s += task + "\n";
    for (const auto& enc : cfg.ModelLabels()) {
      std::vector<double> r, k;
      for (const auto& run : runs)
        if (run.task == task && run.label == enc) {
          const ProtocolScores p = ScoresOf(run, cfg.train_max_length);
          r.push_back(p.ruoss);
          k.push_back(p.kazemnejad_exact);
        }
      const SeedStats a = Stats(r), b = Stats(k);
      // One completed seed has no spread to show: its score alone, in the same columns.
      const std::string spread = a.n > 1 ? fmt::format(" ± {:.3f}", a.sd) : std::string(8, ' ');
      s += fmt::format("  {:<{}} {:.3f}{}  max {:.3f}   exact {:.3f}   ({} of {} seeds)\n", enc,
                       width, a.mean, spread, a.max, b.mean, a.n, r.size());
    }
  }
  return s;
}

std::string SummaryTable(const RecipeConfig& cfg, const std::vector<RunSummary>& runs) {
  const std::vector<int> lengths = cfg.EvalLengths();
  // Columns: a few lengths that tell the story (N/2, N, 2N, 4N, 8N where evaluated).
  std::vector<int> cols;
  const int N = cfg.train_max_length;
  for (int want : {N / 2, N, N + 1, 2 * N, 4 * N, 8 * N})
    for (int n : lengths)
      if (n == want && (cols.empty() || cols.back() != n)) cols.push_back(n);
  std::string s = fmt::format("token accuracy by evaluation length (trained on 1..{}):\n", N);
  // The label column as wide as the longest label (at least 12), so the numbers stay in columns.
  size_t label_width = 12;
  for (const auto& r : runs)
    label_width = std::max(label_width, (r.label.empty() ? r.encoding : r.label).size());
  s += fmt::format("{:<{}} {:<10} {:>9}", "encoding", label_width, "state", "mean<=N");
  for (int n : cols) s += fmt::format(" {:>7}", "n=" + std::to_string(n));
  s += fmt::format(" {:>9} {:>13}\n", "mean>N", "exact N+1..2N");
  for (const auto& r : runs) {
    s += fmt::format("{:<{}} {:<10}", r.label.empty() ? r.encoding : r.label, label_width,
                     r.state);
    const ProtocolScores p = ScoreEvalRows(r.eval, N);
    auto cell = [](double x, int width) {
      return std::isnan(x) ? fmt::format(" {:>{}}", "-", width)
                           : fmt::format(" {:>{}.3f}", x, width);
    };
    s += cell(p.in_distribution, 9);
    for (int n : cols) {
      std::string accuracy = "-";
      for (const auto& e : r.eval)
        if (e.length == n) accuracy = fmt::format("{:.3f}", e.token_accuracy);
      s += fmt::format(" {:>7}", accuracy);
    }
    s += cell(p.ruoss, 9) + cell(p.kazemnejad_exact, 13) + "\n";
  }
  return s;
}

}  // namespace lexp
