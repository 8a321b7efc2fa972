// Figure 02: attention entropy (against ln of the visible keys) and max logit vs probe length.
// Usage: 02_attention_vs_length RUN_DIR   (writes RUN_DIR/figures/attention_vs_length.{png,gp,dat})
#include <cstdio>
#include <exception>

#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
    return 2;
  }
  try {
    std::printf("%s\n", lexp::DrawAttentionVsLength(argv[1]).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
