// Numerical precision as a research variable (Wang et al. 2024, "When Precision Meets Position:
// BFloat16 Breaks Down RoPE in Long-Context Training", arXiv:2411.13476). A model runs each of
// three parts in fp32 or bf16:
//  * matmul: every product that goes through Gemm (nn/ops/gemm.h), forward and backward: the
//    linear layers (projections, MLP, head) and attention's q k^T, P V and their gradients; bf16
//    inputs, fp32 accumulation and fp32 output, fp32 master weights and optimizer state, as mixed
//    precision training does (PyTorch's autocast also rounds the output to bf16; lexp keeps it in
//    fp32, so the norms, softmax and residual stream stay fp32). Products an encoding or a memory
//    forms itself stay fp32: the far logits of ReRoPE and of remapped keys (rerope, leaky_rerope;
//    the lambda and sinks patterns and lexp diagnose's distance clamp on RoPE), the own terms of
//    DA, TUPE, DAPE, Shaw and Transformer-XL, the retrieved memory's scores, LoRA's adapters;
//  * rotary: the rotary transform of RoPE and xPos (RotatePairs, pe/rope.h): its inputs, its cos/sin
//    tables, each product and the sum rounded to bf16, as a bf16 `q * cos + rotate_half(q) * sin`;
//  * logits: the attention logits' product q k^T in the forward pass (its gradient products follow
//    `matmul`).
// The active policy is per thread; a model sets it for the length of each pass (PrecisionScope) and
// ParallelChunks / ParallelFor hand it to their tasks, so models of one sweep trained at once in one
// process may differ. Double precision (gradient checks) ignores it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace lexp {

enum class Precision { kFp32, kBf16 };

struct PrecisionPolicy {
  Precision matmul = Precision::kFp32;
  Precision rotary = Precision::kFp32;
  Precision logits = Precision::kFp32;
  bool AllFp32() const {
    return matmul == Precision::kFp32 && rotary == Precision::kFp32 &&
           logits == Precision::kFp32;
  }
  bool operator==(const PrecisionPolicy&) const = default;
};

inline const char* PrecisionName(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }
// "fp32" or "bf16"; anything else is an InputError naming `what` and the allowed values.
Precision ParsePrecision(const std::string& text, const std::string& what);
// "matmul=bf16 rotary=fp32 logits=bf16", as run files record it.
std::string PrecisionPolicyText(const PrecisionPolicy& p);

// The calling thread's policy (fp32 everywhere unless a PrecisionScope set it).
PrecisionPolicy& ActivePrecision();

// Sets the calling thread's policy for its lifetime and puts the previous one back.
class PrecisionScope {
 public:
  explicit PrecisionScope(const PrecisionPolicy& p) : saved_(ActivePrecision()) {
    ActivePrecision() = p;
  }
  ~PrecisionScope() { ActivePrecision() = saved_; }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  PrecisionPolicy saved_;
};

// bfloat16: the upper 16 bits of an fp32, rounded to nearest even (NaN stays a quiet NaN).
// Branch-free, so loops over it vectorize.
inline std::uint16_t FloatToBf16Bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}
inline float Bf16BitsToFloat(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
// x rounded to the nearest bfloat16 (ties to even), as an fp32.
inline float RoundToBf16(float x) { return Bf16BitsToFloat(FloatToBf16Bits(x)); }

}  // namespace lexp
