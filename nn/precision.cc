#include "nn/precision.h"

#include "nn/check.h"

namespace lexp {

Precision ParsePrecision(const std::string& text, const std::string& what) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  FailInput(what + " = \"" + text + "\": allowed values are \"fp32\" and \"bf16\"");
}

std::string PrecisionPolicyText(const PrecisionPolicy& p) {
  return std::string("matmul=") + PrecisionName(p.matmul) + " rotary=" + PrecisionName(p.rotary) +
         " logits=" + PrecisionName(p.logits);
}

PrecisionPolicy& ActivePrecision() {
  thread_local PrecisionPolicy policy;
  return policy;
}

}  // namespace lexp
