#include "experiments/report/report_page.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "experiments/core/evaluation.h"
#include "experiments/core/run_file.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Relative(const fs::path& p, const fs::path& dir) {
  return fs::relative(p, dir).generic_string();
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.3f}", v);
}

// The files below dir, up to three levels deep, in path order; hidden folders, checkpoints and the
// plan's internals are not results.
std::vector<fs::path> FilesBelow(const fs::path& dir) {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory()) {
      if (it.depth() >= 3 || name.rfind('.', 0) == 0 || name == "plan" || name == "checkpoints")
        it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct RunEntry {
  fs::path path;
  RunFileHead head;
  std::vector<EvalRow> eval;
  std::map<std::string, std::string> provenance;
  std::vector<std::vector<std::string>> analysis;  // group, attribute, value
};

struct Refused {
  fs::path path;
  std::string why;
};

// Root attributes that say which build and machine wrote a file.
const std::vector<std::string>& ProvenanceKeys() {
  static const std::vector<std::string> keys = {
      "lexp_version", "git_commit",    "build_flavour", "gemm_backend", "cpu_model",
      "cpu_instruction_sets", "threads", "precision",  "start_time",   "end_time"};
  return keys;
}

bool IsChecksumAttribute(const std::string& name) {
  return name == "checksum" || name == "attributes_checksum";
}

RunEntry ReadRunEntry(const fs::path& path) {
  RunEntry e;
  e.path = path;
  e.head = ReadRunFileHead(path.string());
  if (HasFinalWeights(e.head.state) || e.head.state == RunState::kDiverged) {
    const h5::Reader reader(path.string());
    if (reader.root().Has("eval")) e.eval = ReadEvalRows(path.string());
  }
  const h5::Reader reader(path.string());
  const h5::Group& root = reader.root();
  for (const std::string& key : ProvenanceKeys())
    if (root.HasAttr(key)) e.provenance[key] = root.AttrAsText(key);
  if (root.Has("analysis") && root.IsGroup("analysis")) {
    const h5::Group analysis = root.OpenGroup("analysis");
    for (const std::string& child : analysis.Children()) {
      if (!analysis.IsGroup(child)) continue;
      const h5::Group g = analysis.OpenGroup(child);
      for (const std::string& attr : g.AttrNames())
        if (!IsChecksumAttribute(attr)) e.analysis.push_back({child, attr, g.AttrAsText(attr)});
    }
  }
  return e;
}

// Mean of a score over the evaluated lengths in (lo, hi], NaN when none.
double MeanOver(const std::vector<EvalRow>& rows, int lo, int hi, double EvalRow::*score) {
  double sum = 0;
  int n = 0;
  for (const EvalRow& r : rows) {
    if (r.length > lo && r.length <= hi) {
      sum += r.*score;
      ++n;
    }
  }
  return n > 0 ? sum / n : std::nan("");
}

const char* kStyle = R"(
body { font-family: sans-serif; margin: 2em auto; max-width: 75em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
figure { display: inline-block; margin: 0.5em; max-width: 48%; vertical-align: top; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; }
.warn { color: #a40; } .bad { color: #b00; }
)";

void ScoreTable(const std::vector<RunEntry>& runs, std::ostringstream& html) {
  html << "<h2 id=\"scores\">Scores</h2>\n"
       << "<p>Mean over the evaluated lengths of each range (every length weighs the same); N is "
          "the run's longest training length. Exact match is over the whole answer, its end "
          "included, where the task has one.</p>\n"
       << "<table class=\"scores\"><tr><th>run</th><th>task</th><th>seed</th><th>state</th>"
          "<th>N</th><th>decoding</th><th>token accuracy, lengths &le; N</th>"
          "<th>token accuracy, lengths &gt; N</th><th>exact match, lengths &gt; N</th>"
          "<th>loss (nats per token), lengths &gt; N</th><th>longest length</th><th>file</th></tr>\n";
  for (const RunEntry& r : runs) {
    const int n = r.head.train_max_length;
    int longest = 0;
    for (const EvalRow& row : r.eval) longest = std::max(longest, row.length);
    const std::string decoding = r.eval.empty() ? "-" : DecodingName(r.eval.front().decoding);
    html << "<tr><td>" << Escape(r.head.label) << "</td><td>" << Escape(r.head.task) << "</td>"
         << "<td class=\"num\">" << r.head.seed << "</td><td"
         << (r.head.state == RunState::kCompleted ? "" : " class=\"bad\"") << ">"
         << RunStateName(r.head.state) << "</td><td class=\"num\">" << n << "</td><td>" << decoding
         << "</td><td class=\"num\">" << Number(MeanOver(r.eval, 0, n, &EvalRow::token_accuracy))
         << "</td><td class=\"num\">"
         << Number(MeanOver(r.eval, n, 1 << 30, &EvalRow::token_accuracy))
         << "</td><td class=\"num\">"
         << Number(MeanOver(r.eval, n, 1 << 30, &EvalRow::exact_match))
         << "</td><td class=\"num\">" << Number(MeanOver(r.eval, n, 1 << 30, &EvalRow::loss))
         << "</td><td class=\"num\">" << (longest > 0 ? std::to_string(longest) : "-")
         << "</td><td><a href=\"" << Escape(r.head.path) << "\">" << Escape(r.head.path)
         << "</a></td></tr>\n";
  }
  html << "</table>\n";
}

void Figures(const fs::path& dir, const std::vector<fs::path>& files, std::ostringstream& html) {
  html << "<h2 id=\"figures\">Figures</h2>\n";
  int drawn = 0;
  for (const fs::path& f : files) {
    if (f.parent_path().filename() != "figures") continue;
    const std::string ext = f.extension().string();
    const bool svg = ext == ".svg";
    if (!svg && ext != ".png") continue;
    fs::path svg_twin = f;
    svg_twin.replace_extension(".svg");
    if (!svg && fs::exists(svg_twin)) continue;  // the vector version is shown instead
    const std::string bytes = ReadBytes(f);
    const std::string rel = Relative(f, dir);
    html << "<figure><img alt=\"" << Escape(rel) << "\" src=\"data:image/"
         << (svg ? "svg+xml" : "png") << ";base64," << Base64(bytes) << "\"><figcaption>"
         << Escape(rel);
    fs::path data = f, log = f;
    data.replace_extension(".dat");
    log.replace_extension(".log");
    if (fs::exists(data))
      html << " (<a href=\"" << Escape(Relative(data, dir)) << "\">data</a>)";
    if (fs::exists(log) && fs::file_size(log) > 0)
      html << "<br><span class=\"warn\">gnuplot said: " << Escape(ReadBytes(log).substr(0, 400))
           << "</span>";
    html << "</figcaption></figure>\n";
    ++drawn;
  }
  // A figure that failed leaves a log and no picture.
  for (const fs::path& f : files) {
    if (f.parent_path().filename() != "figures" || f.extension() != ".log") continue;
    fs::path png = f, svg = f;
    png.replace_extension(".png");
    svg.replace_extension(".svg");
    if (fs::exists(png) || fs::exists(svg)) continue;
    html << "<p class=\"bad\">figure " << Escape(Relative(f, dir))
         << " was not drawn: " << Escape(ReadBytes(f).substr(0, 400)) << "</p>\n";
  }
  if (drawn == 0) html << "<p>No figure in this directory (lexp figures DIR draws them).</p>\n";
}

void OtherFiles(const fs::path& dir, const std::vector<fs::path>& others,
                std::ostringstream& html) {
  if (others.empty()) return;
  html << "<h2 id=\"files\">Other result files</h2>\n";
  for (const fs::path& f : others) {
    const std::string rel = Relative(f, dir);
    html << "<h3><a href=\"" << Escape(rel) << "\">" << Escape(rel) << "</a></h3>\n";
    const h5::Reader reader(f.string());
    html << "<table><tr><th>attribute</th><th>value</th></tr>\n";
    for (const std::string& a : reader.root().AttrNames()) {
      if (IsChecksumAttribute(a)) continue;
      html << "<tr><td>" << Escape(a) << "</td><td>" << Escape(reader.root().AttrAsText(a))
           << "</td></tr>\n";
    }
    html << "</table>\n";
  }
}

std::string RecipeText(const fs::path& dir, const std::vector<RunEntry>& runs) {
  const fs::path frozen = dir / "plan" / "recipe.toml";
  if (fs::exists(frozen)) return ReadBytes(frozen);
  for (const RunEntry& r : runs) {
    const h5::Reader reader(r.path.string());
    if (reader.root().Has("config") && reader.root().OpenGroup("config").Has("recipe"))
      return reader.root().OpenGroup("config").ReadString("recipe");
  }
  return "";
}

}  // namespace

ReportPage WriteReport(const std::string& dir_text) {
  const fs::path dir(dir_text);
  LEXP_INPUT_CHECK(fs::is_directory(dir), "lexp report: " + dir_text + " is not a directory");
  const std::vector<fs::path> files = FilesBelow(dir);
  std::vector<RunEntry> runs;
  std::vector<fs::path> others;
  std::vector<Refused> refused;
  for (const fs::path& f : files) {
    if (f.extension() != ".h5") continue;
    const std::string name = f.filename().string();
    try {
      if (name == "summary.h5" || name == "verdict.h5" || name == "base_law.h5" ||
          name == "theory.h5" || name == "pe_table.h5") {
        h5::Reader check(f.string());
        check.root().VerifyAll();
        others.push_back(f);
      } else {
        runs.push_back(ReadRunEntry(f));
        runs.back().head.path = Relative(f, dir);
      }
    } catch (const InputError& e) {
      refused.push_back({f, e.what()});
    }
  }

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>lexp report: "
       << Escape(dir.filename().string().empty() ? dir_text : dir.filename().string())
       << "</title>\n<style>" << kStyle << "</style></head><body>\n";
  html << "<h1>lexp report: " << Escape(dir_text) << "</h1>\n<p>" << runs.size()
       << " run files, " << others.size() << " other result files; written from the files by "
       << "<code>lexp report</code>. Sections: <a href=\"#scores\">scores</a>, "
       << "<a href=\"#figures\">figures</a>, <a href=\"#problems\">runs that did not complete</a>, "
       << "<a href=\"#analyses\">analyses</a>, <a href=\"#recipe\">recipe and build</a>.</p>\n";

  // A claim's directory: its statement and verdict first.
  for (const fs::path& f : others) {
    if (f.filename() != "verdict.h5") continue;
    const h5::Reader reader(f.string());
    const h5::Group& v = reader.root();
    const auto text = [&](const char* name) {
      return v.HasAttr(name) ? Escape(v.AttrAsText(name)) : std::string("-");
    };
    html << "<h2 id=\"verdict\">Claim " << text("id") << ": " << text("verdict") << "</h2>\n<p>"
         << text("statement") << "</p>\n<p><b>" << text("verdict") << "</b> (budget "
         << text("budget") << "): " << text("reason") << "</p>\n";
  }
  if (!runs.empty()) ScoreTable(runs, html);
  Figures(dir, files, html);

  html << "<h2 id=\"problems\">Runs that did not complete</h2>\n";
  int problems = 0;
  for (const RunEntry& r : runs) {
    if (r.head.state == RunState::kCompleted) continue;
    html << "<p class=\"bad\">" << Escape(r.head.path) << ": " << RunStateName(r.head.state)
         << (r.head.message.empty() ? "" : ": " + Escape(r.head.message)) << "</p>\n";
    ++problems;
  }
  for (const Refused& r : refused) {
    html << "<p class=\"bad\">" << Escape(Relative(r.path, dir))
         << ": refused, not read into this page: " << Escape(r.why) << "</p>\n";
    ++problems;
  }
  if (problems == 0) html << "<p>None: every run file here is complete.</p>\n";

  OtherFiles(dir, others, html);

  html << "<h2 id=\"analyses\">Analyses</h2>\n";
  for (const RunEntry& r : runs) {
    html << "<details><summary>" << Escape(r.head.label) << " (" << Escape(r.head.path) << "): "
         << r.analysis.size() << " values</summary>\n";
    if (r.analysis.empty()) {
      html << "<p>No analysis in this file.</p>\n";
    } else {
      html << "<table class=\"analysis\"><tr><th>analysis</th><th>attribute</th><th>value</th></tr>\n";
      for (const auto& row : r.analysis)
        html << "<tr><td>" << Escape(row[0]) << "</td><td>" << Escape(row[1]) << "</td><td>"
             << Escape(row[2]) << "</td></tr>\n";
      html << "</table>\n";
    }
    html << "</details>\n";
  }

  html << "<h2 id=\"recipe\">Recipe and build</h2>\n";
  const std::string recipe = RecipeText(dir, runs);
  if (!recipe.empty()) html << "<details open><summary>recipe</summary><pre>" << Escape(recipe)
                            << "</pre></details>\n";
  if (!runs.empty()) {
    html << "<table class=\"provenance\"><tr><th>attribute (" << Escape(runs.front().head.path)
         << ")</th><th>value</th></tr>\n";
    for (const auto& [key, value] : runs.front().provenance)
      html << "<tr><td>" << Escape(key) << "</td><td>" << Escape(value) << "</td></tr>\n";
    html << "</table>\n";
  }
  html << "</body></html>\n";

  const fs::path path = dir / "report.html";
  const fs::path tmp = dir / "report.html.tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    LEXP_INPUT_CHECK(out.good(), "lexp report: cannot write " + tmp.string());
    out << html.str();
    out.close();
    LEXP_INPUT_CHECK(out.good(), "lexp report: could not write all of " + tmp.string());
  }
  fs::rename(tmp, path);
  ReportPage page{path.string(), {}};
  for (const Refused& r : refused) page.refused.push_back(r.path.string() + ": " + r.why);
  return page;
}

}  // namespace lexp
