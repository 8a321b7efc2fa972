// Figure 13: heads inside and beyond the training length: sink mass, local mass and positional
// share per head, and which part of the logits leaves its trained range (from /analysis/geometry
// of each run, written by lexp analyze). Usage: 13_heads RUN_DIR   (writes
// RUN_DIR/figures/heads.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawHeads); }
