// Closed-form side of the rotary analyses (Su et al. 2021; Sun et al. 2022; Liu et al. 2023):
//  * critical dimension (Liu et al. 2023, arXiv:2310.05209, Theorem 1):
//      d_extra = 2 ceil((d/2) log_b(T_train / 2 pi)); pairs below d_extra/2 complete a period in
//      training, the others never do;
//  * base-scaling law for bases above 10^4: T_extra = 2 pi b^(d_extra / d), its inverse (the base
//    that reaches a target length), and the small-base critical values b1 = 2T/pi, b2 = T/pi,
//    b3 = T/2pi (and the exact full-period base (T/2pi)^(d/(d-2)));
//  * RoFormer's long-term decay bound D(r) = (2/d) sum_{j=1}^{d/2} |sum_{k<j} e^{i r theta_k}|;
//  * the deterministic attention-expectation proxy of the xPos paper, q = k = all ones:
//      RoPE s(n) = 2 sum_k cos(n theta_k),  xPos s(n) = 2 sum_k zeta_k^(n/B) cos(n theta_k);
//  * attention resolution R(s) = sum_{i=0}^{N} e^{s_i} (e^{s_i} - e^{s_{i+1}}) / (sum e^{s_i})^2
//  with
//    convention A (e^{s_{N+1}} = 0, the sequence ends; lexp's choice) or B (the i = N term
//    dropped).
// All in double. The formulas of Liu et al. and the xPos paper were taken from public code and
// secondary accounts, not checked against the paper text; the tests' reference numbers are
// evaluations of exactly these expressions.
#pragma once

#include <cstddef>
#include <vector>

namespace lexp::theory {

struct CriticalDimension {
  double ratio;  // (d/2) log_b(T / 2 pi), the fractional pair index whose period is T
  int d_extra;   // 2 ceil(ratio), clamped to [0, d]
};
CriticalDimension CriticalDim(int d, double T_train, double base);

// Period 2 pi b^(2k/d) of pair k (tokens).
double PairPeriod(int d, double base, int k);

double ExtrapolationLimit(double base, int d_extra, int d);  // T_extra = 2 pi b^(d_extra/d)
double BaseForLength(double target, double T_train);         // 10^4^(log_{T/2pi}(target/2pi))
struct SmallBaseCriticals {
  double quarter, half, full;  // b1 = 2T/pi, b2 = T/pi, b3 = T/(2 pi)
};
SmallBaseCriticals SmallBaseCriticalValues(double T_train);
double FullPeriodBase(double T_train, int d);  // (T / 2 pi)^(d / (d - 2))

// D(r) for each r of `distances`.
std::vector<double> DecayBound(int d, double base, const std::vector<double>& distances);

// s(n) for n = 0..max_distance (RoPE when xpos_scale_base <= 0, else xPos with gamma).
std::vector<double> ExpectationProxy(int d, double base, long max_distance,
                                     double xpos_scale_base = 0, double xpos_gamma = 0.4);
// The same for any per-pair frequencies theta (a scaling rule's) and per-pair decay zeta^(n/B)
// (zeta empty: none).
std::vector<double> ExpectationProxyFor(const std::vector<double>& theta,
                                        const std::vector<double>& zeta, double scale_base,
                                        long max_distance);

// Closed-form supremum over distances of a rotary logit (the ceiling of LM-Infinite's logit
// explosion, for rotary encodings): with complex pairs h_k = q_k conj(k_k) the
// logit at distance n is sum_k Re(h_k e^{i n theta_k}) <= sum_k |q_k| |k_k|, and integer distances
// come arbitrarily close when the theta_k are rationally independent (Kronecker), so training on
// short distances sees only part of the range a long context reaches. Pair norms |q_k|, |k_k| as
// inputs.
double RotaryLogitSupremum(const std::vector<double>& q_pair_norm,
                           const std::vector<double>& k_pair_norm);
// max over n = 0..max_distance of sum_k Re(h_k e^{i n theta_k}), h_k given as (re, im) pairs.
double RotaryLogitMaxOver(const std::vector<double>& h_re, const std::vector<double>& h_im,
                          const std::vector<double>& theta, long max_distance);

// The two readings A, B of the xPos paper's resolution sum (its end terms).
enum class ResolutionConvention { kSequenceEnds, kDropLast };
// s: scores s[0..N] at distances 0..N; NaN marks a distance with no score (a gap). Across a gap
// the curve is not joined: the term of distance i is left out when s[i] or s[i + 1] is missing,
// and a missing score adds nothing to the normalisation. Missing scores after the last one are no
// gap: the curve ends there (convention A's end term belongs to that last score). NaN when every
// score is missing. A flat curve of K present scores with no gap has R_A = 1/K^2, whatever its
// level: compare resolutions of different lengths at the same N, or against that baseline.
double AttentionResolution(const std::vector<double>& s,
                           ResolutionConvention c = ResolutionConvention::kSequenceEnds);

// What lexp reports of a measured curve s (NaN gaps allowed): convention A and B over every
// distance, A over the first `window` distances only (the same N at every length), and A of a flat
// curve with the same gaps over both (1/K^2 for K distances: the fall that length alone causes).
struct CurveResolutions {
  double a = 0, b = 0, window = 0, flat = 0, flat_window = 0;
};
CurveResolutions ResolutionsOf(const std::vector<double>& s, std::size_t window);

}  // namespace lexp::theory
