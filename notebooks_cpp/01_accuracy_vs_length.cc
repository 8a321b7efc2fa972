// Figure 01: token accuracy and exact match vs evaluation length, one line per encoding.
// Usage: 01_accuracy_vs_length RUN_DIR   (writes RUN_DIR/figures/accuracy_vs_length.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawAccuracyVsLength);
}
