// Figure 03: each RoPE scaling rule's per-pair wavelength against the original, and the bias
// families' b(d) over distance, from the file `lexp pe-table` writes.
// Usage: 03_pe_table PE_TABLE_FILE   (writes <file's dir>/figures/pe_table.{png,gp,dat})
#include "notebooks_cpp/figures.h"

int main(int argc, char** argv) { return lexp::FigureProgramMain(argc, argv, lexp::DrawPeTable); }
