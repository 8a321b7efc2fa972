// One self-contained HTML page per result directory (`lexp report DIR`, and at the end of run,
// collect, eval and reproduce): the recipe and the build that ran it, a score table of every run
// file, every figure, each model's analysis groups as tables, the runs that failed, diverged or were
// refused with their messages, and links to the HDF5 files. Drawn from the files only, like the
// figures; no script, nothing fetched: figures are embedded as data URIs, so the page opens from a
// cluster's file system or as a mail attachment.
#pragma once

#include <string>
#include <vector>

namespace lexp {

// Writes DIR/report.html (whole, through a temporary file) from the files below DIR: run files up
// to three directories deep (a sweep's task folders, a claim's stages), `figures/` folders, and the
// other lexp files (summary.h5, verdict.h5, base_law.h5) with their root attributes. A file that is
// not a lexp run file, or is damaged, is listed as refused with the reader's message; nothing of it
// is read into the tables. Input error: DIR is not a directory.
struct ReportPage {
  std::string path;                  // DIR/report.html
  std::vector<std::string> refused;  // "FILE: why", one per file listed as refused
};
ReportPage WriteReport(const std::string& dir);

}  // namespace lexp
