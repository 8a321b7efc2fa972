// Figure 11: the RoPE base-scaling law, measured extrapolation limits against the predictions
// (from base_law.h5 of `lexp base-law`).
// Usage: 11_base_law BASE_LAW_H5   (writes figures/base_law.{png,gp,dat} beside the file)
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawBaseLaw); }
