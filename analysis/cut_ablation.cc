#include "analysis/cut_ablation.h"

#include <cmath>
#include <limits>

#include "analysis/binomial.h"
#include "nn/check.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return x.empty() ? kNaN : s / static_cast<double>(x.size());
}

// Per sequence: the mean loss over the lengths in `pick`.
std::vector<double> PerSequence(const std::vector<std::vector<double>>& by_length,
                                const std::vector<bool>& pick, size_t S) {
  std::vector<double> out(S, 0.0);
  double k = 0;
  for (size_t e = 0; e < by_length.size(); ++e) {
    if (!pick[e]) continue;
    for (size_t s = 0; s < S; ++s) out[s] += by_length[e][s];
    k += 1;
  }
  for (double& v : out) v /= k;
  return out;
}

}  // namespace

CutAblationVerdict JudgeCutAblation(const CutAblationInput& in, double confidence) {
  CutAblationVerdict v;
  const size_t cuts = in.loss.size(), E = in.lengths.size();
  LEXP_CHECK(cuts >= 1, "cut ablation: no cut");
  std::vector<bool> beyond(E), within(E);
  bool any_beyond = false, any_within = false;
  for (size_t e = 0; e < E; ++e) {
    beyond[e] = in.lengths[e] > in.train_length;
    within[e] = !beyond[e];
    any_beyond = any_beyond || beyond[e];
    any_within = any_within || within[e];
  }
  size_t S = std::numeric_limits<size_t>::max();
  for (const auto& cut : in.loss) {
    LEXP_CHECK(cut.size() == E, "cut ablation: a cut without every length");
    for (const auto& l : cut) S = std::min(S, l.size());
  }
  for (const auto& cut : in.loss)
    for (const auto& l : cut) LEXP_CHECK(l.size() == S, "cut ablation: unequal sequence counts");
  for (auto* x :
       {&v.beyond_loss, &v.beyond_lo, &v.beyond_hi, &v.beyond_difference, &v.difference_lo,
        &v.difference_hi, &v.in_distribution_loss, &v.in_distribution_cost, &v.cost_lo, &v.cost_hi})
    x->assign(cuts, kNaN);
  v.better_than_chance.assign(cuts, 0);
  v.helps.assign(cuts, 0);
  v.applicable = any_beyond && any_within && S >= 2;
  if (!v.applicable) return v;
  const std::vector<double> beyond_none = PerSequence(in.loss.back(), beyond, S),
                            within_none = PerSequence(in.loss.back(), within, S);
  double best = std::numeric_limits<double>::infinity(), best_ok = best;
  for (size_t c = 0; c < cuts; ++c) {
    const std::vector<double> b = PerSequence(in.loss[c], beyond, S),
                              w = PerSequence(in.loss[c], within, S);
    std::vector<double> db(S), dw(S);
    for (size_t s = 0; s < S; ++s) {
      db[s] = b[s] - beyond_none[s];
      dw[s] = w[s] - within_none[s];
    }
    const Interval ib = MeanInterval(b, confidence), id = MeanInterval(db, confidence),
                   iw = MeanInterval(dw, confidence);
    v.beyond_loss[c] = Mean(b);
    v.beyond_lo[c] = ib.lo;
    v.beyond_hi[c] = ib.hi;
    v.beyond_difference[c] = Mean(db);
    v.difference_lo[c] = id.lo;
    v.difference_hi[c] = id.hi;
    v.in_distribution_loss[c] = Mean(w);
    v.in_distribution_cost[c] = Mean(dw);
    v.cost_lo[c] = iw.lo;
    v.cost_hi[c] = iw.hi;
    v.better_than_chance[c] = ib.hi < in.chance_loss;
    v.helps[c] = id.hi < 0 && v.better_than_chance[c];
    if (v.beyond_loss[c] < best) {
      best = v.beyond_loss[c];
      v.lowest = static_cast<int>(c);
    }
    if (v.helps[c] && v.beyond_loss[c] < best_ok) {
      best_ok = v.beyond_loss[c];
      v.boundary = static_cast<int>(c);
    }
  }
  return v;
}

}  // namespace lexp
