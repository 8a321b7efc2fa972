// Figure 10: rotary pairs of rope runs against the critical dimension (from /analysis/rotary):
// periods covered in training and at the longest evaluation, each pair's contribution to the
// logits, and the post-critical ablation with the predicted boundary.
// Usage: 10_rotary_pairs RUN_DIR   (writes RUN_DIR/figures/rotary_pairs.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawRotaryPairs);
}
