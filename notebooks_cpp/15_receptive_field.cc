// Figure 15: the gradient receptive field, the share of the input gradient of the last output by
// distance and the effective context against length (from /analysis/receptive_field of each run,
// written by lexp analyze). Usage: 15_receptive_field RUN_DIR   (writes
// RUN_DIR/figures/receptive_field.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawReceptiveField);
}
