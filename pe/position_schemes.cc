#include "pe/position_schemes.h"

#include <algorithm>

#include "nn/check.h"

namespace lexp {

const std::vector<std::string>& PositionSchemes() {
  static const std::vector<std::string> k = {"identity", "randomized", "pose", "shift", "clamp"};
  return k;
}

std::vector<double> SampleSortedPositions(int T, int L, Rng& rng) {
  LEXP_INPUT_CHECK(T <= L, "randomized positions: a sequence of " + std::to_string(T) +
                               " tokens needs at least as many positions; max_position is " +
                               std::to_string(L));
  std::vector<double> pos;
  pos.reserve(T);
  // Selection sampling: keep i with probability (still needed) / (still available).
  for (int i = 0; i < L && static_cast<int>(pos.size()) < T; ++i)
    if (rng.Uniform() * (L - i) < T - static_cast<int>(pos.size())) pos.push_back(i);
  return pos;
}

std::vector<double> PosePositions(int T, int Lt, Rng& rng) {
  LEXP_CHECK(T >= 1 && T <= Lt, "pose: window longer than the target length");
  const int l0 = static_cast<int>(rng.UniformInt(1, (T + 1) / 2));
  const int u = static_cast<int>(rng.UniformInt(0, Lt - T));
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = t < l0 ? t : t + u;
  return pos;
}

template <typename S>
WithPositionScheme<S>::WithPositionScheme(std::unique_ptr<PositionEncoding<S>> inner,
                                          const PositionSchemeConfig& c, std::string name)
    : ForwardingEncoding<S>(std::move(inner)), c_(c), name_(std::move(name)) {
  LEXP_INPUT_CHECK(c.max_position > 0, "position scheme '" + c.name + "' needs max_position > 0");
}

template <typename S>
void WithPositionScheme<S>::PositionIds(int T, bool training, Rng& rng,
                                        std::vector<double>& pos) const {
  if (c_.name == "randomized" && (training || c_.sample_at_eval)) {
    pos = SampleSortedPositions(T, c_.max_position, rng);
  } else if (c_.name == "pose" && training && T <= c_.max_position) {
    pos = PosePositions(T, c_.max_position, rng);
  } else if (c_.name == "shift" && training) {
    const double k = static_cast<double>(rng.UniformInt(0, c_.max_position));
    pos.resize(T);
    for (int t = 0; t < T; ++t) pos[t] = t + k;
  } else {
    this->inner().PositionIds(T, training, rng, pos);
    if (c_.name == "clamp" && !training)
      for (double& p : pos) p = std::min(p, static_cast<double>(c_.max_position - 1));
  }
}

template class WithPositionScheme<float>;
template class WithPositionScheme<double>;

}  // namespace lexp
