// Figure 04: the task x encoding score table of a sweep (max over seeds of the token accuracy on
// lengths N+1..M, mean ± sd in each cell), from the summary.h5 that `lexp run` writes for a task or
// seed sweep. Usage: 04_score_table SUMMARY_FILE   (writes <file's dir>/figures/score_table.*)
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawScoreTable);
}
