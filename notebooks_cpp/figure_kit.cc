#include "notebooks_cpp/figure_kit.h"

#include <fmt/core.h>
#include <fnmatch.h>
#include <gnuplot-iostream.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <sstream>

#include "nn/check.h"
#include "nn/io/paths.h"

namespace fs = std::filesystem;

namespace lexp {

// Line styles 1..n that stay distinguishable for many series: ten colours (Tableau 10), then the
// same colours dashed, with a different point type per series.
std::string SeriesStyles(int n) {
  static const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#000000"};
  std::string s;
  for (int i = 0; i < n; ++i)
    s += fmt::format("set style line {} lw 2 lc rgb '{}' dt {} pt {} ps 0.6\n", i + 1,
                     kColours[i % 10], 1 + (i / 10) % 4, 1 + i % 13);
  return s;
}

// Many series: the key goes outside, to the right, so it hides no curve.
std::string FreeKeyCorner(const std::vector<std::pair<double, double>>& points,
                          const PlotFrame& frame, const std::string& preferred) {
  auto at = [&](double x) { return frame.log_x ? std::log2(std::max(x, 1e-300)) : x; };
  const double xl = at(frame.x_lo), xh = at(frame.x_hi);
  const std::vector<std::string> corners = {preferred, "top left", "top right", "bottom left",
                                            "bottom right"};
  size_t best = 0, fewest = static_cast<size_t>(-1);
  for (size_t c = 0; c < corners.size(); ++c) {
    const bool top = corners[c].rfind("top", 0) == 0;
    const bool left = corners[c].find("left") != std::string::npos;
    size_t inside = 0;
    for (const auto& [x, y] : points) {
      const double fx = xh > xl ? (at(x) - xl) / (xh - xl) : 0.5;
      const double fy = frame.y_hi > frame.y_lo ? (y - frame.y_lo) / (frame.y_hi - frame.y_lo) : 0.5;
      if ((left ? fx <= 0.45 : fx >= 0.55) && (top ? fy >= 0.7 : fy <= 0.3)) ++inside;
    }
    if (inside < fewest) {
      fewest = inside;
      best = c;
    }
    if (inside == 0) break;
  }
  return corners[best];
}

std::string ViridisPalette() {
  return "set palette defined (0 '#440154', 0.125 '#472d7b', 0.25 '#3b528b', 0.375 '#2c728e', "
         "0.5 '#21918c', 0.625 '#28ae80', 0.75 '#5ec962', 0.875 '#addc30', 1 '#fde725')\n";
}

std::string KeyPlacement(int n) {
  // Below the panel, in rows of up to four entries: off the data whatever the curves do.
  return "set key outside below center horizontal maxcols " + std::to_string(std::min(n, 4)) +
         " samplen 2\n";
}

std::string Quote(const std::string& s) {
  // gnuplot's single-quoted strings double a quote and cannot span lines.
  std::string out = "'";
  for (const char ch : s) {
    if (ch == '\'')
      out += "''";
    else if (ch == '\n')
      out += ' ';
    else
      out += ch;
  }
  return out + "'";
}

namespace {

std::vector<std::string>& ExtraFormats() {
  static std::vector<std::string> formats;
  return formats;
}

bool& DataOnly() {
  static bool data_only = false;
  return data_only;
}

// The script for another terminal: "set terminal pngcairo size W,H ..." (pixels) becomes svg at the
// same size or pdfcairo at W/100 x H/100 inches, and NAME.png becomes NAME.<format>.
std::string ScriptFor(const std::string& script, const std::string& name,
                      const std::string& format) {
  std::string s = script;
  const std::string term = "set terminal pngcairo size ";
  const size_t at = s.find(term);
  LEXP_CHECK(at != std::string::npos, "figure '" + name + "': no pngcairo terminal line");
  const size_t comma = s.find(',', at + term.size());
  size_t end = comma + 1;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  const double w = std::stod(s.substr(at + term.size(), comma - at - term.size()));
  const double h = std::stod(s.substr(comma + 1, end - comma - 1));
  const std::string size = format == "svg"
                               ? fmt::format("svg size {:g},{:g}", w, h)
                               : fmt::format("pdfcairo size {:g}in,{:g}in", w / 100, h / 100);
  s.replace(at, end - at, "set terminal " + size);
  const std::string out = "set output '" + name + ".png'";
  const size_t o = s.find(out);
  LEXP_CHECK(o != std::string::npos, "figure '" + name + "': no PNG output line");
  s.replace(o, out.size(), "set output '" + name + "." + format + "'");
  return s;
}

// Runs gnuplot on script_file (in dir), which must write `out`; its messages go to `log`, which
// is kept when gnuplot printed anything and removed otherwise.
void RunGnuplot(const fs::path& dir, const fs::path& script_file, const fs::path& out,
                const fs::path& log) {
  fs::remove(out);
  {
    // gnuplot's own messages (an empty panel's "all points y value undefined", say) go to the log
    // beside the script, not to the user's terminal; "; true" keeps its exit status from
    // gnuplot-iostream, which would print "pclose returned error". A missing output is an error.
    std::string quoted = "'";
    for (char c : log.string()) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    Gnuplot g("gnuplot > " + quoted + "' 2>&1; true");
    g << "cd " << Quote(dir.string()) << "\n";
    g << "load " << Quote(script_file.filename().string()) << "\n";
  }  // closes the pipe and waits for gnuplot
  std::string said;
  {
    std::ifstream f(log);
    std::stringstream text;
    text << f.rdbuf();
    said = text.str();
  }
  LEXP_CHECK(fs::exists(out) && fs::file_size(out) > 0,
             "gnuplot did not write '" + out.string() + "' (script " + script_file.string() +
                 "): " + said.substr(said.size() > 600 ? said.size() - 600 : 0));
  if (said.find_first_not_of(" \n\t") == std::string::npos) fs::remove(log);
}

// Writes text to path through a temporary renamed into place: a killed lexp leaves no half file.
void WriteWhole(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    LEXP_INPUT_CHECK(f.good(), "cannot write '" + tmp.string() + "' (disk full?)");
  }
  fs::rename(tmp, path);
}

// Draws the script into dir/NAME.<format>: gnuplot writes NAME.<format>.tmp (through a script of
// its own that says so), renamed into place once whole; its messages go to `log`.
void Draw(const fs::path& dir, const std::string& name, const std::string& script,
          const std::string& format, const fs::path& log) {
  const std::string out = "set output '" + name + "." + format + "'";
  std::string s = script;
  const size_t o = s.find(out);
  LEXP_CHECK(o != std::string::npos, "figure '" + name + "': no " + format + " output line");
  s.replace(o, out.size(), "set output '" + name + "." + format + ".tmp'");
  const fs::path run = dir / (name + "." + format + ".run.gp");
  WriteWhole(run, s);
  const fs::path target = dir / (name + "." + format), tmp = target.string() + ".tmp";
  RunGnuplot(dir, run, tmp, log);
  fs::remove(run);
  fs::rename(tmp, target);
}

}  // namespace

void SetFigureDataOnly(bool data_only) { DataOnly() = data_only; }

void SetFigureFormats(const std::vector<std::string>& formats) {
  std::vector<std::string> extra;
  for (const auto& f : formats) {
    LEXP_INPUT_CHECK(f == "png" || f == "svg" || f == "pdf",
                     "--format '" + f + "': figures are drawn as png, svg or pdf");
    if (f != "png" && std::find(extra.begin(), extra.end(), f) == extra.end()) extra.push_back(f);
  }
  ExtraFormats() = extra;
}

fs::path DatFile(const fs::path& dir, const std::string& name) { return dir / (name + ".dat.tmp"); }

// Writes the script, runs it through gnuplot-iostream, checks the PNG exists. The figure's data
// (written to DatFile) and every file are put in place whole.
std::string Render(const fs::path& dir, const std::string& name, const std::string& script) {
  const fs::path gp = dir / (name + ".gp"), png = dir / (name + ".png");
  const fs::path dat = DatFile(dir, name);
  if (fs::exists(dat)) fs::rename(dat, dir / (name + ".dat"));
  WriteWhole(gp, script);
  if (DataOnly()) return gp.string();
  for (const auto& format : ExtraFormats()) {
    // The variant's messages are the PNG's with another terminal: not kept.
    const fs::path log = dir / (name + "." + format + ".log");
    Draw(dir, name, ScriptFor(script, name, format), format, log);
    fs::remove(log);
  }
  Draw(dir, name, script, "png", dir / (name + ".log"));
  return png.string();
}

std::string FigureLine(const std::string& png) {
  const fs::path log = fs::path(png).replace_extension(".log");
  if (!fs::exists(log)) return "figure: " + png;
  return "figure: " + png + " (gnuplot printed messages, so it may be incomplete: " +
         log.string() + ")";
}

// figures/ beside a data file (a theory table or a sweep summary), created if needed.
fs::path FigureDirNextTo(const std::string& file) {
  const fs::path parent = fs::path(file).parent_path();
  return OwnSubdirectory(parent, "figures");
}

// "a,b,c" -> {"a", "b", "c"}: the list attributes of the data files.
std::string DatNumber(double x) {
  return std::isfinite(x) ? fmt::format("{:g}", x) : std::string("NaN");
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  return out;
}

namespace {
std::vector<std::string>& RunSelection() {
  static std::vector<std::string> runs;
  return runs;
}
}  // namespace

void SetRunSelection(const std::vector<std::string>& runs) { RunSelection() = runs; }

bool RunSelected(const fs::path& run_file) {
  if (RunSelection().empty()) return true;
  const std::string stem = run_file.stem().string();
  for (const std::string& glob : RunSelection())
    if (fnmatch(glob.c_str(), stem.c_str(), 0) == 0) return true;
  return false;
}

fs::path FigureDir(const std::string& run_dir) {
  fs::path dir = "figures";
  if (!RunSelection().empty()) {
    std::string sub;
    for (const std::string& r : RunSelection()) sub += (sub.empty() ? "" : "+") + r;
    for (char& ch : sub)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-' &&
          ch != '+')
        ch = '_';
    dir /= sub;
  }
  return OwnSubdirectory(run_dir, dir);
}

std::vector<double> MeanOverHeads(const std::vector<double>& v, uint64_t LH, uint64_t X) {
  std::vector<double> sum(X, 0.0), n(X, 0.0);
  for (uint64_t lh = 0; lh < LH; ++lh)
    for (uint64_t x = 0; x < X; ++x)
      if (std::isfinite(v[lh * X + x])) {
        sum[x] += v[lh * X + x];
        n[x] += 1;
      }
  for (uint64_t x = 0; x < X; ++x)
    sum[x] = n[x] > 0 ? sum[x] / n[x] : std::numeric_limits<double>::quiet_NaN();
  return sum;
}

int FigureProgramMain(int argc, char** argv, std::string (*draw)(const std::string& run_dir)) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
    return 2;
  }
  try {
    std::printf("%s\n", draw(argv[1]).c_str());
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error (please report): %s\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace lexp
