// Figure 06: perplexity vs evaluation length for language-modelling runs (task markov_lm), with the
// source's entropy rate as the floor. Usage: 06_perplexity_vs_length RUN_DIR
// (writes RUN_DIR/figures/perplexity_vs_length.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawPerplexityVsLength);
}
