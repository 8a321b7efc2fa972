// Figure 09: entropy under log-n, YaRN and the Lambda mask (from /analysis/entropy_variants of each
// run, written by lexp analyze). Usage: 09_entropy_variants RUN_DIR   (writes
// RUN_DIR/figures/entropy_variants.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawEntropyVariants);
}
