#include "experiments/sweep.h"

#include <fmt/core.h>

#include <filesystem>

#include "experiments/provenance.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figures.h"

namespace lexp {

void WriteFailedRunFile(const RecipeConfig& cfg, const std::string& encoding,
                        const std::string& path, const std::string& message) {
  h5::Writer w(path);
  WriteProvenance(w.root(), ThreadLimit::Active());
  w.root().SetAttr("seed", cfg.seed);
  w.root().SetAttr("encoding", encoding);
  w.root().SetAttr("task", cfg.task);
  w.root().SetAttr("train_max_length", cfg.train_max_length);
  RecipeConfig copy = cfg;
  w.root().CreateGroup("config").WriteString("recipe", RecipeToToml(copy));
  h5::Group st = w.root().CreateGroup("status");
  st.SetAttr("state", "failed");
  st.SetAttr("message", message);
  st.SetAttr("steps_completed", static_cast<int64_t>(0));
  w.root().SetAttr("end_time", UtcNow());
  w.Commit();
}

std::vector<RunSummary> RunRecipe(const RecipeConfig& cfg, const SweepOptions& opt) {
  std::filesystem::create_directories(opt.out_dir);
  std::vector<RunSummary> out;
  const int total = static_cast<int>(cfg.encodings.size());
  for (int i = 0; i < total; ++i) {
    const std::string& enc = cfg.encodings[i];
    RunOptions ro;
    ro.out_dir = opt.out_dir;
    ro.resume = opt.resume;
    ro.progress = opt.progress;
    ro.label = fmt::format("{} {}/{}", enc, i + 1, total);
    RunSummary s;
    try {
      s = TrainAndEvaluate(cfg, enc, ro);
    } catch (const Error& e) {
      s.encoding = enc;
      s.state = "failed";
      s.message = e.what();
      s.path = RunFilePath(opt.out_dir, enc);
      WriteFailedRunFile(cfg, enc, s.path, s.message);
      if (opt.progress) opt.progress("[" + ro.label + "] failed: " + s.message);
    }
    if (opt.progress && s.state != "completed")
      opt.progress(fmt::format("[{}] {}{}", ro.label, s.state,
                               s.message.empty() ? "" : ": " + s.message));
    out.push_back(s);
  }
  if (opt.figures) {
    for (const auto& png : DrawAllFigures(opt.out_dir))
      if (opt.progress) opt.progress("figure: " + png);
  }
  return out;
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
  s += fmt::format("{:<12} {:<10} {:>9}", "encoding", "state", "mean<=N");
  for (int n : cols) s += fmt::format(" {:>7}", "n=" + std::to_string(n));
  s += fmt::format(" {:>9}\n", "mean>N");
  for (const auto& r : runs) {
    s += fmt::format("{:<12} {:<10}", r.encoding, r.state);
    double in = 0, out = 0;
    int ni = 0, no = 0;
    for (const auto& e : r.eval) {
      if (e.length <= N) {
        in += e.token_accuracy;
        ++ni;
      } else {
        out += e.token_accuracy;
        ++no;
      }
    }
    s += ni ? fmt::format(" {:>9.3f}", in / ni) : fmt::format(" {:>9}", "-");
    for (int n : cols) {
      std::string cell = "-";
      for (const auto& e : r.eval)
        if (e.length == n) cell = fmt::format("{:.3f}", e.token_accuracy);
      s += fmt::format(" {:>7}", cell);
    }
    s += no ? fmt::format(" {:>9.3f}\n", out / no) : fmt::format(" {:>9}\n", "-");
  }
  return s;
}

}  // namespace lexp
