// One explicit, seeded, splittable RNG (SplitMix64 seeding a xoshiro256** generator). Streams are split
// by name ("init", "data", "positions", ...) so that adding a draw in one stream never shifts another.
// The normal sampler is our own (Box-Muller) because library distributions differ between libraries.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace lexp {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { Seed(seed); }

  void Seed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : s_) s = SplitMix(x);
    has_spare_ = false;
  }

  // A new independent stream derived from this one's seed material and a name (FNV-1a of the name).
  Rng Split(std::string_view name) const {
    uint64_t h = 1469598103934665603ull;
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return Rng(s_[0] ^ Rotl(s_[1], 17) ^ h);
  }
  Rng Split(uint64_t index) const { return Rng(s_[0] ^ Rotl(s_[2], 29) ^ (index * 0x9E3779B97F4A7C15ull)); }

  uint64_t NextU64() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [lo, hi] inclusive (rejection sampling, unbiased).
  int64_t UniformInt(int64_t lo, int64_t hi) {
    const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
    if (range == 0) return static_cast<int64_t>(NextU64());
    const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t x;
    do {
      x = NextU64();
    } while (x >= limit);
    return lo + static_cast<int64_t>(x % range);
  }
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1;
    do {
      u1 = Uniform();
    } while (u1 <= 0.0);
    const double u2 = Uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

  // Full state, for checkpoints.
  static constexpr int kStateWords = 4;
  const uint64_t* State() const { return s_; }
  void SetState(const uint64_t* s) {
    for (int i = 0; i < 4; ++i) s_[i] = s[i];
    has_spare_ = false;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace lexp
