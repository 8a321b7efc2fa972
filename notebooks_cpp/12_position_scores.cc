// Figure 12: loss by absolute position and the last-window decomposition into the cost of extra
// keys and of unseen positions (from /analysis/position_scores of each run, written by lexp
// analyze). Usage: 12_position_scores RUN_DIR   (writes
// RUN_DIR/figures/position_scores.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPositionScores);
}
