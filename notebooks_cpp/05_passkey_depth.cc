// Figure 05: passkey accuracy (exact match) per (length, depth) cell, one heat map per run of a run
// directory whose task has a depth axis. Usage: 05_passkey_depth RUN_DIR
// (writes RUN_DIR/figures/accuracy_by_length_and_depth.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawDepthHeatmap);
}
