// verdict.h5: a claim's verdict with everything it was decided from (layout in data/README.md,
// "Reproduction verdict"). Written once, when the verdict is final (a file that exists is
// complete); read back for the gallery table and the figure.
#pragma once

#include <string>
#include <vector>

#include "experiments/reproduce/claim.h"
#include "experiments/reproduce/criterion.h"

namespace lexp {

// The claim judged at one number of training steps of its trend stage.
struct TrendPoint {
  int steps = 0;
  bool budget = false;  // the budget's own point (the verdict of the record)
  Verdict verdict;      // read back: verdict, reason and each label's score, lo, hi
};

struct VerdictRecord {
  // lexp-verdict/2 (the rules of VerdictRules()); lexp-verdict/1 files, judged by comparing the
  // two sides' intervals, are read for the table and marked there.
  std::string format = "lexp-verdict/2";
  std::string commit;  // the lexp commit that judged it (provenance's git_commit), when recorded
  Claim claim;  // the claim's text fields and criterion (stages are not stored)
  std::string budget;
  Verdict verdict;
  double minutes = 0;  // wall time of the runs and the judgement, on this machine
  std::string trend_stage;          // [trend].stage, when the claim has a trend
  std::vector<TrendPoint> trend;    // by steps, the budget's own point among them
};

void WriteVerdictFile(const std::string& path, const VerdictRecord& record);
VerdictRecord ReadVerdictFile(const std::string& path);

}  // namespace lexp
