#include "experiments/training/job_list.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/core/output_lock.h"
#include "experiments/core/run_file.h"
#include "experiments/replay/analyze.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/io/paths.h"
#include "notebooks_cpp/figures.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

// Tabs and line breaks would break a TSV row; no recipe value should hold one.
std::string TsvField(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Written through a temporary file and a rename, so that a reader never sees half a file.
void WriteWhole(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    LEXP_INPUT_CHECK(f.good(), "cannot write '" + tmp.string() + "'");
    f << text;
    f.flush();
    LEXP_INPUT_CHECK(f.good(), "cannot write '" + tmp.string() + "' (disk full?)");
  }
  fs::rename(tmp, path);
}

std::string CheckpointOf(const PlanRow& row) {
  const fs::path f(row.file);
  return CheckpointPath(f.parent_path().string(), f.stem().string());
}

// A completed run whose NoPE reference beside it finished after its analysis ran (rows of a job
// list run in any order): its analysis lacks the JS divergence a sequential sweep gives it.
bool MissesItsReference(const PlanRow& row, const std::string& sweep_key) {
  bool completed_reference = false;
  for (const std::string& ref :
       ReferenceCandidates(row.file, row.encoding, fs::path(row.file).stem().string(), sweep_key))
    completed_reference = completed_reference ||
                          (fs::exists(ref) && ReadRunFileHead(ref).state == RunState::kCompleted);
  if (!completed_reference) return false;
  h5::Reader r(row.file);
  if (!r.root().Has("analysis")) return false;
  const h5::Group a = r.root().OpenGroup("analysis");
  return a.Has("geometry") && !a.OpenGroup("geometry").HasAttr("reference");
}

}  // namespace

std::string PlanDirectory(const std::string& run_dir) {
  return (fs::path(run_dir) / "plan").string();
}

std::string FrozenRecipePath(const std::string& run_dir) {
  return (fs::path(PlanDirectory(run_dir)) / "recipe.toml").string();
}

void WritePlanFiles(const RecipeConfig& cfg, const std::vector<PlanRow>& rows,
                    const std::string& run_dir) {
  const fs::path dir = OwnSubdirectory(run_dir, "plan");
  RecipeConfig copy = cfg;
  WriteWhole(dir / "recipe.toml",
             "# The frozen recipe of this run directory (lexp plan): every job of the sweep reads "
             "it.\n# Source: " +
                 cfg.source_name + "\n" + RecipeToToml(copy));
  // The recipe as the user gave it, which run files record beside the effective one: a job run of
  // the frozen recipe records these, as the single-process run does.
  WriteWhole(dir / "source.toml", cfg.source_text);
  WriteWhole(dir / "source_name.txt", cfg.source_name + "\n");
  WriteWhole(dir / "plan.tsv", PlanTable(rows));
  std::string json =
      "{\n  \"recipe\": " + JsonString(FrozenRecipePath(run_dir)) + ",\n  \"rows\": [\n";
  for (const auto& r : rows)
    json += fmt::format(
        "    {{\"index\": {}, \"task\": {}, \"encoding\": {}, \"label\": {}, \"seed\": {}, "
        "\"sweep_key\": {}, \"sweep_value\": {}, \"file\": {}}}{}\n",
        r.index, JsonString(r.task), JsonString(r.encoding), JsonString(r.label), r.seed,
        JsonString(r.sweep_key), JsonString(r.sweep_value), JsonString(r.file),
        r.index + 1 < rows.size() ? "," : "");
  WriteWhole(dir / "plan.json", json + "  ]\n}\n");
}

RecipeConfig ReadFrozenRecipe(const std::string& run_dir) {
  const std::string path = FrozenRecipePath(run_dir);
  LEXP_INPUT_CHECK(fs::is_directory(run_dir), "'" + run_dir + "' is not a directory");
  LEXP_INPUT_CHECK(fs::exists(path), "'" + run_dir + "' has no plan (" + path +
                                         "): give the --out directory of lexp plan, lexp slurm "
                                         "or lexp run");
  auto slurp = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
  };
  RecipeConfig cfg = ParseRecipe(slurp(path), path);
  ValidateRecipe(cfg);
  const fs::path dir = PlanDirectory(run_dir);
  if (fs::exists(dir / "source.toml") && fs::exists(dir / "source_name.txt")) {
    cfg.source_text = slurp(dir / "source.toml");
    cfg.source_name = slurp(dir / "source_name.txt");
    while (!cfg.source_name.empty() && cfg.source_name.back() == '\n') cfg.source_name.pop_back();
  }
  return cfg;
}

std::string PlanTable(const std::vector<PlanRow>& rows) {
  std::string out = "index\ttask\tencoding\tlabel\tseed\tsweep_key\tsweep_value\tfile\n";
  for (const auto& r : rows)
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", r.index, TsvField(r.task),
                       TsvField(r.encoding), TsvField(r.label), r.seed,
                       TsvField(r.sweep_key.empty() ? "-" : r.sweep_key),
                       TsvField(r.sweep_value.empty() ? "-" : r.sweep_value), TsvField(r.file));
  return out;
}

std::vector<size_t> ParseJobList(const std::string& text) {
  const std::string what = "--job '" + text +
                           "': expected a row index, a range K1-K2 or a comma-separated list of "
                           "them (e.g. 3, 0-5, 0,2,7-9)";
  std::vector<size_t> out;
  std::stringstream parts(text);
  std::string part;
  auto number = [&](const std::string& s) -> size_t {
    LEXP_INPUT_CHECK(
        !s.empty() && s.size() < 10 &&
            std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }),
        what);
    return static_cast<size_t>(std::stoul(s));
  };
  while (std::getline(parts, part, ',')) {
    const size_t dash = part.find('-');
    const size_t a = number(part.substr(0, dash));
    const size_t b = dash == std::string::npos ? a : number(part.substr(dash + 1));
    LEXP_INPUT_CHECK(a <= b, what + " (a range must not run backwards)");
    for (size_t k = a; k <= b; ++k)
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  LEXP_INPUT_CHECK(!out.empty(), what);
  return out;
}

std::string JobListText(const std::vector<size_t>& rows) {
  std::vector<size_t> v = rows;
  std::sort(v.begin(), v.end());
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", v[i]) : fmt::format("{}-{}", v[i], v[j]);
    i = j + 1;
  }
  return out;
}

const char* RowStateName(RowState s) {
  switch (s) {
    case RowState::kDone:
      return "done";
    case RowState::kRunning:
      return "running";
    case RowState::kFailed:
      return "failed";
    case RowState::kDiverged:
      return "diverged";
    case RowState::kPending:
      return "pending";
  }
  return "pending";
}

std::vector<RowStatus> ReadRowStates(const std::vector<PlanRow>& rows) {
  std::vector<RowStatus> out;
  for (const auto& row : rows) {
    RowStatus s;
    s.row = row;
    if (fs::exists(row.file)) {
      const RunFileHead head = ReadRunFileHead(row.file);
      s.message = head.message;
      // The file must be this row's: a run of another recipe placed at its name (or copied from
      // another sweep) would be read into this one's scores.
      if (!row.recipe.empty()) {
        std::string stored;
        {
          h5::Reader r(row.file);
          LEXP_INPUT_CHECK(r.root().Has("config") && r.root().OpenGroup("config").Has("recipe"),
                           "'" + row.file + "' holds no recipe (/config/recipe)");
          stored = r.root().OpenGroup("config").ReadString("recipe");
        }
        RecipeConfig theirs = ParseRecipe(stored, row.file + ":/config/recipe");
        LEXP_INPUT_CHECK(
            RecipeToToml(theirs) == row.recipe && head.encoding == row.encoding,
            "'" + row.file + "' is not the run of row " + std::to_string(row.index) +
                " of the plan: its recipe (or its encoding, '" + head.encoding +
                "') differs from the row's (a file of another recipe or sweep; move it away, or "
                "run the row again with lexp run --job " +
                std::to_string(row.index) + " --overwrite)");
      }
      switch (head.state) {
        case RunState::kCompleted:
          s.state = RowState::kDone;
          break;
        case RunState::kDiverged:
          s.state = RowState::kDiverged;
          break;
        case RunState::kFailed:
          s.state = RowState::kFailed;
          break;
        case RunState::kAnalyzing:    // trained; its analysis still to come (or killed there)
        case RunState::kInterrupted:  // stopped; its checkpoint resumes it
          s.state = RowState::kRunning;
          break;
      }
    } else if (fs::exists(CheckpointOf(row))) {
      s.state = RowState::kRunning;  // training, or killed with its checkpoint kept
    }
    out.push_back(s);
  }
  return out;
}

std::string StatusReport(const std::vector<RowStatus>& states) {
  std::string out;
  for (const RowState st : {RowState::kDone, RowState::kRunning, RowState::kFailed,
                            RowState::kDiverged, RowState::kPending}) {
    std::vector<size_t> idx;
    for (const auto& s : states)
      if (s.state == st) idx.push_back(s.row.index);
    out += fmt::format("{:<9} {:>5}{}\n", RowStateName(st), idx.size(),
                       idx.empty() ? "" : "   rows " + JobListText(idx));
  }
  for (const auto& s : states)
    if (s.state == RowState::kFailed || s.state == RowState::kDiverged)
      out += fmt::format("row {} ({} {}, seed {}): {}: {}\n", s.row.index, s.row.task, s.row.label,
                         s.row.seed, RowStateName(s.state), s.message);
  return out;
}

CollectResult CollectSweep(const std::string& run_dir, bool figures,
                           const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const RecipeConfig cfg = ReadFrozenRecipe(run_dir);
  const std::vector<PlanRow> rows = SweepPlan(cfg, run_dir);
  const OutputLock lock(run_dir);  // collect analyses and draws there: one writer at a time
  CollectResult res;
  res.states = ReadRowStates(rows);
  // The JS references that finished after the runs that look for them (analysing again keeps a
  // done row done).
  for (const auto& s : res.states)
    if (s.state == RowState::kDone && MissesItsReference(s.row, cfg.SweepKey())) {
      say(fmt::format("row {}: analysing {} again, now that its NoPE reference is done",
                      s.row.index, s.row.file));
      AnalyzeRunFile(s.row.file, "", AnalysisSelection::GeometryOnly(), false);
    }
  std::vector<std::string> dirs;
  for (const auto& s : res.states) {
    const PlanRow& row = s.row;
    RunSummary r;
    r.encoding = row.encoding;
    r.label = row.label;
    r.task = row.task;
    r.seed = row.seed;
    r.path = row.file;
    r.message = s.message;
    r.state = s.state == RowState::kDone       ? "completed"
              : s.state == RowState::kDiverged ? "diverged"
              : s.state == RowState::kFailed   ? "failed"
                                               : "missing";
    if (s.state == RowState::kDone) r.eval = ReadEvalRows(row.file);
    res.runs.push_back(r);
    const std::string dir = fs::path(row.file).parent_path().string();
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  if (figures)
    for (const auto& dir : dirs)
      if (fs::exists(dir))
        for (const auto& png : DrawAllFigures(dir)) say(FigureLine(png));
  if (cfg.IsSweep()) {
    const std::string summary = WriteSweepSummary(cfg, res.runs, run_dir);
    say("summary: " + summary);
    if (figures) say(FigureLine(DrawScoreTable(summary)));
    res.report += SeedSummaryTable(cfg, res.runs);
  } else {
    res.report += SummaryTable(cfg, res.runs);
  }
  std::vector<size_t> missing, failed, diverged;
  for (const auto& s : res.states) {
    if (s.state == RowState::kFailed) failed.push_back(s.row.index);
    if (s.state == RowState::kDiverged) diverged.push_back(s.row.index);
    if (s.state == RowState::kRunning || s.state == RowState::kPending)
      missing.push_back(s.row.index);
  }
  res.report += fmt::format("collected {} of {} rows", rows.size() - missing.size() - failed.size(),
                            rows.size());
  if (!missing.empty()) res.report += "; missing rows " + JobListText(missing);
  if (!failed.empty()) res.report += "; failed rows " + JobListText(failed);
  if (!diverged.empty()) res.report += "; diverged rows " + JobListText(diverged);
  res.report += "\n";
  return res;
}

}  // namespace lexp
