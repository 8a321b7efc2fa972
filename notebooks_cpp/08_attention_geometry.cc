// Figure 08: attention geometry of a run directory (from each run's /analysis/geometry, written by
// `lexp analyze` and at the end of training): logit running max over distance (LM-Infinite),
// entropy against the number of visible keys with the uniform ln n, the mean attended distance and
// the empirical attention expectation on the longest probe; the JS divergence against NoPE and the
// resolution of the expectation over the probe lengths.
// Usage: 08_attention_geometry RUN_DIR   (writes RUN_DIR/figures/attention_geometry.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawAttentionGeometry);
}
