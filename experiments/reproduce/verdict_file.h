// verdict.h5: a claim's verdict with everything it was decided from (layout in data/README.md,
// "Reproduction verdict"). Written once, when the verdict is final (a file that exists is
// complete); read back for the gallery table and the figure.
#pragma once

#include <string>
#include <vector>

#include "experiments/reproduce/claim.h"
#include "experiments/reproduce/criterion.h"

namespace lexp {

struct VerdictRecord {
  Claim claim;  // the claim's text fields and criterion (stages are not stored)
  std::string budget;
  Verdict verdict;
  double minutes = 0;  // wall time of the runs and the judgement, on this machine
};

void WriteVerdictFile(const std::string& path, const VerdictRecord& record);
VerdictRecord ReadVerdictFile(const std::string& path);

}  // namespace lexp
