// Figure 14: linear probes for position in each residual stream, fitted at the training length and
// tested beyond it, and how far the states leave their training distribution (from
// /analysis/position_probes of each run, written by lexp analyze). Usage: 14_position_probes
// RUN_DIR (writes RUN_DIR/figures/position_probes.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPositionProbes);
}
