// What every figure program shares: line styles, key placement, the figures/ directory, and the
// renderer that writes NAME.gp and runs gnuplot on it (notebooks_cpp/figures.h describes the
// NAME.{png,gp,dat} triple each figure leaves).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace lexp {

// Line styles 1..n that stay distinguishable for many series.
std::string SeriesStyles(int n);
// The key of n series: outside, below the panel, so that it hides no curve and no label.
std::string KeyPlacement(int n);
// A perceptually uniform colour map for values in [0, 1] (viridis' anchors: dark purple to yellow;
// ordered in lightness, readable in grey and by colour-blind readers), as a gnuplot command.
std::string ViridisPalette();
// The corner of a plot for its key ("top left", "top right", "bottom left", "bottom right"):
// `preferred` when none of the curves' points (x, y) lies in it, else the first corner with none,
// else the one holding the fewest. A key takes about 45% of the width and 30% of the height; x is
// measured in log2 when the axis is logarithmic.
struct PlotFrame {
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool log_x = false;
};
std::string FreeKeyCorner(const std::vector<std::pair<double, double>>& points,
                          const PlotFrame& frame, const std::string& preferred);
// 'text' quoted for gnuplot (a quote doubled, a newline as a space).
std::string Quote(const std::string& s);
// The formats every figure is drawn in besides PNG: "svg" and "pdf" (for papers); process-wide,
// set once by the command line (lexp ... --format png,svg,pdf). Input errors name what is allowed.
void SetFigureFormats(const std::vector<std::string>& formats);
// Where a figure program writes its data (dir/NAME.dat.tmp): Render puts it in place as
// dir/NAME.dat, whole, so that a killed lexp never leaves a half data file under its name.
std::filesystem::path DatFile(const std::filesystem::path& dir, const std::string& name);
// Whether figures are drawn, or only their data and gnuplot scripts written (`--data-only`: a
// machine without gnuplot, such as a compute node; draw later with `gnuplot NAME.gp` in figures/);
// process-wide, set once by the command line.
void SetFigureDataOnly(bool data_only);
// Writes dir/NAME.gp, runs gnuplot on it, checks dir/NAME.png exists (and NAME.svg / NAME.pdf when
// asked, from the same script with another terminal); returns the PNG's path. With data only, the
// script is written and its path returned.
// The progress line of a drawn figure: "figure: PNG", and when gnuplot printed anything (kept in
// the figure's .log by Render), that it did and where, so that a failed figure is never silent.
std::string FigureLine(const std::string& png);
std::string Render(const std::filesystem::path& dir, const std::string& name,
                   const std::string& script);
// figures/ beside a data file (a theory table or a sweep summary), created if needed.
std::filesystem::path FigureDirNextTo(const std::string& file);
// The runs to draw, by file name without .h5 (globs allowed: "rope*"); process-wide, set once by
// `lexp figures DIR --runs a,b`. Empty (the default): every run of the directory. With a
// selection, figures go to <run_dir>/figures/<a+b>/ and leave the full set in place.
void SetRunSelection(const std::vector<std::string>& runs);
// Whether a run file is in the selection.
bool RunSelected(const std::filesystem::path& run_file);
// <run_dir>/figures (or its selection's subfolder), created if needed.
std::filesystem::path FigureDir(const std::string& run_dir);
// Mean over the LH leading blocks of v ([LH, X], e.g. layers x heads), ignoring NaN entries (NaN
// where every block is NaN).
std::vector<double> MeanOverHeads(const std::vector<double>& v, uint64_t LH, uint64_t X);
// A number for a .dat file: "NaN" when it is not finite (gnuplot leaves such points out).
std::string DatNumber(double x);
// "a,b,c" -> {"a", "b", "c"}: the list attributes of the data files.
std::vector<std::string> SplitCommas(const std::string& text);

// The `main` of a figure program: `PROGRAM RUN_DIR` (or the file it reads), prints the PNG path;
// exit 0, 2 (usage or bad input), 3 (an internal error).
int FigureProgramMain(int argc, char** argv, std::string (*draw)(const std::string& run_dir));

}  // namespace lexp
