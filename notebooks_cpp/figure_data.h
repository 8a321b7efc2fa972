// What the figure programs read from run files, shared by them: the run files of a directory, a
// run's label and seed group, its evaluation and attention summaries (RunData), and the checks of
// which analyses a run holds.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

// A shape entry that matches any extent: the anchor dataset of a group fixes the others' shapes.
inline constexpr uint64_t kAny = h5::Group::kAnySize;

// The format version of a run file (root attribute `format`): 1 and 2 (written before checksums,
// read unverified) or 3 (sealed: every dataset and attribute carries a checksum, nn/io/hdf5.h).
// Input errors name the file: no format, an unknown one, a sealed file that claims an older format
// or a format-3 file without its seal.
int RunFileFormat(const h5::Group& root);
// /status@state of a run file, checked against the states lexp writes (completed, analyzing,
// diverged, interrupted, failed) and against the groups a file in that state holds (/config,
// /model, /eval, and for a completed run /analysis); an input error naming the file otherwise.
std::string RunFileState(const h5::Group& root);

// Run files of a directory (completed or not), sorted by path: *.h5 except checkpoints and the
// sweep outputs summary.h5 and base_law.h5, and only the selected runs (SetRunSelection). Each is
// checked (RunFileFormat, RunFileState): a damaged or foreign file among them is an input error
// naming it, never a run read into the others.
std::vector<std::string> FindRunFiles(const std::string& run_dir);
// A run file's label (encoding plus any sweep suffix); its encoding in files without one.
std::string RunLabel(const h5::Group& root);
// Runs of one encoding over a seed sweep share a curve: files "<label>-seed<k>" group under
// <label>.
std::string GroupKey(const std::string& label);

// A run's /eval and /analysis summaries, as the accuracy, attention, depth and perplexity figures
// draw them.
struct RunData {
  std::string encoding, state;
  int train_max_length = 0;
  std::vector<double> length, accuracy, exact;
  std::vector<double> accuracy_lo, accuracy_hi;  // Clopper-Pearson bounds (empty in old files)
  std::vector<double> depth, depth_exact;        // tasks with a depth axis: [length, depth]
  std::vector<double> loss;                      // nats per scored token, per length
  double entropy_rate = std::numeric_limits<double>::quiet_NaN();  // language-modelling sources
  double chance = std::numeric_limits<double>::quiet_NaN();  // token accuracy of a uniform guess
  std::vector<double> probe_length, entropy, log_visible, max_logit;
};
RunData ReadRun(const std::string& path);
// Every run of a directory; an input error when there is none.
std::vector<RunData> ReadRuns(const std::string& run_dir);

// /analysis/geometry as this lexp writes it (LM-Infinite's last-query bound in its length groups).
bool HasCurrentGeometry(const h5::Group& geometry);
// The geometry groups of the training length and of the longest probe, when both exist.
bool GeometryEnds(const h5::Group& geometry, std::string* train, std::string* longest);
// True when a run's /analysis/geometry holds what DrawHeads draws: the training length and a
// longer one with head classes.
bool HasHeadsData(const h5::Group& geometry);

}  // namespace lexp
