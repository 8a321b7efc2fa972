#include "notebooks_cpp/figure_data.h"

#include <algorithm>
#include <filesystem>

#include "nn/check.h"
#include "notebooks_cpp/figure_kit.h"

namespace fs = std::filesystem;

namespace lexp {

RunData ReadRun(const std::string& path) {
  h5::Reader r(path);
  RunData d;
  d.encoding = RunLabel(r.root());
  d.train_max_length = static_cast<int>(r.root().AttrInt("train_max_length"));
  d.state = r.root().OpenGroup("status").AttrString("state");
  if (r.root().Has("eval") && r.root().OpenGroup("eval").Has("length")) {
    h5::Group ev = r.root().OpenGroup("eval");
    std::vector<uint64_t> got;
    for (auto v : ev.ReadIntsShaped("length", {kAny}, &got))
      d.length.push_back(static_cast<double>(v));
    const uint64_t E = got[0];
    d.accuracy = ev.ReadDoublesShaped("token_accuracy", {E});
    d.exact = ev.ReadDoublesShaped("exact_match", {E});
    d.loss = ev.ReadDoublesShaped("loss", {E});
    if (ev.HasAttr("source_entropy_rate")) d.entropy_rate = ev.AttrDouble("source_entropy_rate");
    if (ev.HasAttr("chance_token_accuracy")) d.chance = ev.AttrDouble("chance_token_accuracy");
    if (ev.Has("depth_exact_match")) {
      for (auto v : ev.ReadIntsShaped("depth", {kAny}, &got))
        d.depth.push_back(static_cast<double>(v));
      d.depth_exact = ev.ReadDoublesShaped("depth_exact_match", {E, got[0]});
    }
    if (ev.Has("token_accuracy_ci")) {
      const auto ci = ev.ReadDoublesShaped("token_accuracy_ci", {E, 2});
      for (size_t i = 0; 2 * i + 1 < ci.size(); ++i) {
        d.accuracy_lo.push_back(ci[2 * i]);
        d.accuracy_hi.push_back(ci[2 * i + 1]);
      }
    }
  }
  if (r.root().Has("analysis") && r.root().OpenGroup("analysis").Has("probe_length")) {
    h5::Group an = r.root().OpenGroup("analysis");
    std::vector<uint64_t> got;
    for (auto v : an.ReadIntsShaped("probe_length", {kAny}, &got))
      d.probe_length.push_back(static_cast<double>(v));
    const uint64_t P = got[0];
    d.entropy = an.ReadDoublesShaped("entropy_mean", {P});
    d.log_visible = an.ReadDoublesShaped("log_visible_keys", {P});
    d.max_logit = an.ReadDoublesShaped("max_logit_mean", {P});
  }
  return d;
}

std::vector<RunData> ReadRuns(const std::string& run_dir) {
  std::vector<RunData> runs;
  for (const auto& p : FindRunFiles(run_dir)) runs.push_back(ReadRun(p));
  LEXP_INPUT_CHECK(!runs.empty(), "no run files (*.h5) in '" + run_dir + "'");
  return runs;
}

int RunFileFormat(const h5::Group& root) {
  const std::string file = root.FileName();
  LEXP_INPUT_CHECK(root.HasAttr("format"),
                   "'" + file + "' is not a lexp run file (no root attribute 'format')");
  const std::string format = root.AttrString("format");
  int version = 0;
  for (int v : {1, 2, 3})
    if (format == "lexp-run/" + std::to_string(v)) version = v;
  LEXP_INPUT_CHECK(version > 0, "'" + file + "': format '" + format +
                                    "' is not one this lexp reads (lexp-run/1, lexp-run/2, "
                                    "lexp-run/3)");
  const bool sealed = root.Sealed();
  LEXP_INPUT_CHECK(version == 3 || !sealed, "'" + file + "' carries checksums but says format '" +
                                                format + "' (the file is damaged)");
  LEXP_INPUT_CHECK(version < 3 || sealed,
                   "'" + file +
                       "' says format 'lexp-run/3' but carries no checksums (the file "
                       "is damaged or was changed by another program)");
  return version;
}

std::string RunFileState(const h5::Group& root) {
  const std::string file = root.FileName();
  LEXP_INPUT_CHECK(root.Has("status") && root.OpenGroup("status").HasAttr("state"),
                   "'" + file + "' is not a finished lexp run file (no /status)");
  const std::string state = root.OpenGroup("status").AttrString("state");
  bool known = false;
  for (const char* s : {"analyzing", "completed", "diverged", "interrupted", "failed"})
    known = known || state == s;
  LEXP_INPUT_CHECK(known, "'" + file + "': /status@state is '" + state +
                              "', not one of analyzing, completed, diverged, interrupted, failed");
  // What a file in that state always holds (a trained and evaluated run; a completed one also its
  // analysis): a group missing from it is damage, not a run without it.
  std::vector<const char*> needs;
  if (state == "analyzing" || state == "completed") needs = {"config", "model", "eval"};
  if (state == "completed") needs.push_back("analysis");
  for (const char* g : needs)
    LEXP_INPUT_CHECK(root.Has(g) && root.IsGroup(g), "'" + file + "' is " + state +
                                                         " but has no /" + g +
                                                         " (the file is damaged or was changed)");
  return state;
}

std::vector<std::string> FindRunFiles(const std::string& run_dir) {
  LEXP_INPUT_CHECK(fs::is_directory(run_dir), "'" + run_dir + "' is not a directory");
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".h5" &&
        name.find(".ckpt.") == std::string::npos && name != "summary.h5" && name != "base_law.h5" &&
        RunSelected(e.path())) {
      h5::Reader r(e.path().string());
      RunFileFormat(r.root());
      RunFileState(r.root());
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RunLabel(const h5::Group& root) {
  return root.HasAttr("label") ? root.AttrString("label") : root.AttrString("encoding");
}

// Runs of one encoding over a seed sweep share a curve: files "<label>-seed<k>" group under
// <label>, and their evaluations under a scaling rule "<label>-seed<k>+<rule>" (lexp eval) under
// "<label>+<rule>".
std::string GroupKey(const std::string& label) {
  const auto plus = label.find('+');
  const std::string head = label.substr(0, plus);
  const std::string tail = plus == std::string::npos ? "" : label.substr(plus);
  const auto at = head.rfind("-seed");
  if (at == std::string::npos || at + 5 == head.size()) return label;
  for (size_t i = at + 5; i < head.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(head[i]))) return label;
  return head.substr(0, at) + tail;
}

// /analysis/geometry as this lexp writes it (LM-Infinite's last-query bound in its length groups).
bool HasCurrentGeometry(const h5::Group& geo) {
  for (const auto& child : geo.Children())
    if (child.rfind("length_", 0) == 0 && geo.OpenGroup(child).Has("logit_bound_last_query"))
      return true;
  return false;
}

// The geometry group of the longest probe length, and that of the training length.
bool GeometryEnds(const h5::Group& geo, std::string* train, std::string* longest) {
  int64_t best = -1;
  const int64_t N = geo.HasAttr("train_length") ? geo.AttrInt("train_length") : -1;
  for (const auto& child : geo.Children()) {
    if (child.rfind("length_", 0) != 0) continue;
    const int64_t n = geo.OpenGroup(child).AttrInt("length");
    if (n == N) *train = child;
    if (n > best) {
      best = n;
      *longest = child;
    }
  }
  return !train->empty() && !longest->empty() && *train != *longest &&
         geo.OpenGroup(*longest).Has("head_class");
}

bool HasHeadsData(const h5::Group& geometry) {
  std::string train, longest;
  return GeometryEnds(geometry, &train, &longest);
}

}  // namespace lexp
