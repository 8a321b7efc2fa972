// Figure 07: the closed-form rotary analyses of `lexp theory` (expectation proxies for RoPE, xPos
// and a scaling rule; RoFormer's decay bound; pair periods with the critical dimension).
// Usage: 07_theory THEORY_FILE   (writes <file's dir>/figures/theory.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawTheory); }
