// Figure 02: attention entropy (against ln of the visible keys) and max logit vs probe length.
// Usage: 02_attention_vs_length RUN_DIR   (writes RUN_DIR/figures/attention_vs_length.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  return lexp::FigureProgramMain(argc, argv, lexp::DrawAttentionVsLength);
}
