#include "analysis/position_probes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "analysis/linear_probe.h"
#include "nn/check.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kSegments = 3;

// Standardisation by the fit set's mean and sd (sd 0 -> 1).
struct Scaler {
  Eigen::RowVectorXd mean, sd;
  explicit Scaler(const Eigen::MatrixXd& x) {
    mean = x.colwise().mean();
    sd = ((x.rowwise() - mean).array().square().colwise().mean()).sqrt();
    for (Eigen::Index c = 0; c < sd.size(); ++c)
      if (!(sd[c] > 1e-12)) sd[c] = 1;
  }
  Eigen::MatrixXd operator()(const Eigen::MatrixXd& x) const {
    return (x.rowwise() - mean).array().rowwise() / sd.array();
  }
};

Eigen::MatrixXd Rows(const Eigen::MatrixXd& z, const std::vector<long>& rows) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(rows.size()), z.cols());
  for (size_t k = 0; k < rows.size(); ++k) out.row(static_cast<Eigen::Index>(k)) = z.row(rows[k]);
  return out;
}

double Rmse(const Eigen::VectorXd& pred, const Eigen::VectorXd& y, const std::vector<long>& rows) {
  if (rows.empty()) return kNaN;
  double s = 0;
  for (long r : rows) s += (pred[r] - y[r]) * (pred[r] - y[r]);
  return std::sqrt(s / static_cast<double>(rows.size()));
}

double ConstantRmse(double c, const Eigen::VectorXd& y, const std::vector<long>& rows) {
  return Rmse(Eigen::VectorXd::Constant(y.size(), c), y, rows);
}

// A probe for target y: fitted on the fit rows, read on the test rows within and outside the fit
// targets' range, beside the constant fit-set mean.
struct TargetReading {
  double fit = kNaN, in = kNaN, beyond = kNaN, chance_in = kNaN, chance_beyond = kNaN;
  Eigen::VectorXd test_prediction;
};

TargetReading ReadTarget(const Eigen::MatrixXd& zf, const Eigen::VectorXd& yf,
                         const Eigen::MatrixXd& zt, const Eigen::VectorXd& yt) {
  TargetReading t;
  const RidgeProbe probe(zf, yf);
  const Eigen::VectorXd pf = probe.Predict(zf);
  t.test_prediction = probe.Predict(zt);
  std::vector<long> all(static_cast<size_t>(yf.size())), in, out;
  for (long r = 0; r < yf.size(); ++r) all[r] = r;
  const double lo = yf.minCoeff(), hi = yf.maxCoeff(), mean = yf.mean();
  for (long r = 0; r < yt.size(); ++r) (yt[r] >= lo && yt[r] <= hi ? in : out).push_back(r);
  t.fit = Rmse(pf, yf, all);
  t.in = Rmse(t.test_prediction, yt, in);
  t.beyond = Rmse(t.test_prediction, yt, out);
  t.chance_in = ConstantRmse(mean, yt, in);
  t.chance_beyond = ConstantRmse(mean, yt, out);
  return t;
}

// Balanced accuracy of scores (> 0: unseen) against labels over rows.
struct Balanced {
  double tp = 0, pos = 0, tn = 0, neg = 0;
  void Add(bool truth, bool said) {
    if (truth) {
      pos += 1;
      tp += said;
    } else {
      neg += 1;
      tn += !said;
    }
  }
  double Value() const { return pos > 0 && neg > 0 ? 0.5 * (tp / pos + tn / neg) : kNaN; }
};

// A least-squares classifier of +-1 labels, thresholded where its balanced accuracy on its own
// training rows is highest (not at 0, which with unequal classes says the larger one everywhere).
class Classifier {
 public:
  Classifier(const Eigen::MatrixXd& z, const std::vector<uint8_t>& label)
      : probe_(z, Targets(label)) {
    const Eigen::VectorXd s = probe_.Predict(z);
    std::vector<std::pair<double, uint8_t>> sorted;
    double pos = 0, neg = 0;
    for (size_t k = 0; k < label.size(); ++k) {
      sorted.push_back({s[k], label[k]});
      (label[k] ? pos : neg) += 1;
    }
    std::sort(sorted.begin(), sorted.end());
    // Threshold below sorted[k]: rows k.. say positive. TPR + TNR at each k.
    double tp = pos, tn = 0, best = -1;
    for (size_t k = 0; k <= sorted.size(); ++k) {
      const double value = tp / pos + tn / neg;
      const bool distinct = k == 0 || k == sorted.size() || sorted[k].first > sorted[k - 1].first;
      if (distinct && value > best) {
        best = value;
        threshold_ = k == 0               ? sorted[0].first - 1
                     : k == sorted.size() ? sorted.back().first + 1
                                          : 0.5 * (sorted[k - 1].first + sorted[k].first);
      }
      if (k < sorted.size()) (sorted[k].second ? tp : tn) += sorted[k].second ? -1 : 1;
    }
  }
  std::vector<uint8_t> Say(const Eigen::MatrixXd& z) const {
    const Eigen::VectorXd s = probe_.Predict(z);
    std::vector<uint8_t> out(static_cast<size_t>(s.size()));
    for (Eigen::Index k = 0; k < s.size(); ++k) out[k] = s[k] > threshold_;
    return out;
  }

 private:
  static Eigen::VectorXd Targets(const std::vector<uint8_t>& label) {
    Eigen::VectorXd y(static_cast<Eigen::Index>(label.size()));
    for (size_t k = 0; k < label.size(); ++k) y[k] = label[k] ? 1.0 : -1.0;
    return y;
  }
  RidgeProbe probe_;
  double threshold_ = 0;
};

std::vector<uint8_t> Labels(const std::vector<uint8_t>& unseen, const std::vector<long>& rows) {
  std::vector<uint8_t> out;
  for (long r : rows) out.push_back(unseen[r]);
  return out;
}

}  // namespace

const char* SegmentName(int segment) {
  switch (static_cast<Segment>(segment)) {
    case Segment::kInput:
      return "input";
    case Segment::kSeparator:
      return "separator";
    case Segment::kAnswer:
      return "answer";
  }
  return "?";
}

PositionProbeReading ReadPositionProbes(const ProbeRows& fit, const ProbeRows& test) {
  PositionProbeReading p;
  const long nf = fit.x.rows(), nt = test.x.rows();
  LEXP_CHECK(nf > 1 && nt > 0 && fit.x.cols() == test.x.cols(),
             "position probes: fit and test sets of the same width");
  for (const ProbeRows* s : {&fit, &test})
    LEXP_CHECK(static_cast<long>(s->position.size()) == s->x.rows() &&
                   s->separator.size() == s->position.size() &&
                   s->segment.size() == s->position.size() &&
                   s->sequence.size() == s->position.size(),
               "position probes: one position, separator, segment and sequence per row");
  const Scaler scale(fit.x);
  const Eigen::MatrixXd zf = scale(fit.x), zt = scale(test.x);

  // Index probe.
  Eigen::VectorXd yf(nf), yt(nt);
  for (long r = 0; r < nf; ++r) yf[r] = fit.position[r];
  for (long r = 0; r < nt; ++r) yt[r] = test.position[r];
  const TargetReading index = ReadTarget(zf, yf, zt, yt);
  p.index_rmse_fit = index.fit;
  p.index_rmse_in_range = index.in;
  p.index_rmse_beyond = index.beyond;
  p.index_chance_in_range = index.chance_in;
  p.index_chance_beyond = index.chance_beyond;
  const int last = *std::max_element(test.position.begin(), test.position.end());
  double lp = 0, nl = 0;
  for (long r = 0; r < nt; ++r)
    if (test.position[r] == last) {
      lp += index.test_prediction[r];
      nl += 1;
    }
  p.index_last_predicted = lp / nl;
  {
    // Held out in distribution: fitted on the even fit sequences, read on the odd ones.
    std::vector<long> even, odd;
    for (long r = 0; r < nf; ++r) (fit.sequence[r] % 2 == 0 ? even : odd).push_back(r);
    p.index_rmse_held_out = p.index_chance_held_out = kNaN;
    if (even.size() > 1 && !odd.empty()) {
      Eigen::VectorXd ye(static_cast<Eigen::Index>(even.size())),
          yo(static_cast<Eigen::Index>(odd.size()));
      for (size_t k = 0; k < even.size(); ++k) ye[k] = yf[even[k]];
      for (size_t k = 0; k < odd.size(); ++k) yo[k] = yf[odd[k]];
      const Eigen::VectorXd po = RidgeProbe(Rows(zf, even), ye).Predict(Rows(zf, odd));
      std::vector<long> all(odd.size());
      for (size_t k = 0; k < odd.size(); ++k) all[k] = static_cast<long>(k);
      p.index_rmse_held_out = Rmse(po, yo, all);
      p.index_chance_held_out = ConstantRmse(ye.mean(), yo, all);
    }
  }

  // Separator probe, when the fit set can tell the two targets apart.
  std::set<int> separators(fit.separator.begin(), fit.separator.end());
  const bool every_row_has_one =
      *std::min_element(fit.separator.begin(), fit.separator.end()) >= 0 &&
      *std::min_element(test.separator.begin(), test.separator.end()) >= 0;
  p.separator_applicable = every_row_has_one && separators.size() >= 2;
  p.separator_rmse_in_range = p.separator_rmse_beyond = kNaN;
  p.separator_chance_in_range = p.separator_chance_beyond = kNaN;
  if (!every_row_has_one) {
    p.separator_note = "no separator (the encoder layout)";
  } else if (separators.size() < 2) {
    p.separator_note =
        "the separator sits at one position in every fit sequence, so the distance to it is the "
        "index minus a constant: the two probes would be one";
  } else {
    Eigen::VectorXd sf(nf), st(nt);
    for (long r = 0; r < nf; ++r) sf[r] = fit.position[r] - fit.separator[r];
    for (long r = 0; r < nt; ++r) st[r] = test.position[r] - test.separator[r];
    const TargetReading sep = ReadTarget(zf, sf, zt, st);
    p.separator_rmse_in_range = sep.in;
    p.separator_rmse_beyond = sep.beyond;
    p.separator_chance_in_range = sep.chance_in;
    p.separator_chance_beyond = sep.chance_beyond;
  }

  // Seen and unseen test rows: is there a fit row of the same segment and position?
  std::set<std::pair<int, int>> seen;
  for (long r = 0; r < nf; ++r) seen.insert({fit.segment[r], fit.position[r]});
  std::vector<uint8_t> unseen(static_cast<size_t>(nt));
  for (long r = 0; r < nt; ++r) {
    unseen[r] = !seen.count({test.segment[r], test.position[r]});
    (unseen[r] ? p.rows_unseen : p.rows_seen) += 1;
  }

  // Beyond classifier within segments, and pooled with the segment-only baseline.
  Balanced within;
  for (int g = 0; g < kSegments; ++g) {
    std::vector<long> even, odd;
    bool both[2] = {false, false};
    for (long r = 0; r < nt; ++r) {
      if (test.segment[r] != g) continue;
      (test.sequence[r] % 2 == 0 ? even : odd).push_back(r);
      both[unseen[r]] = true;
    }
    const std::vector<uint8_t> le = Labels(unseen, even);
    if (!both[0] || !both[1] || even.empty() || odd.empty() ||
        std::count(le.begin(), le.end(), 1) == 0 || std::count(le.begin(), le.end(), 0) == 0)
      continue;
    const std::vector<uint8_t> said = Classifier(Rows(zt, even), le).Say(Rows(zt, odd));
    for (size_t k = 0; k < odd.size(); ++k) within.Add(unseen[odd[k]], said[k]);
    p.segments_classified +=
        (p.segments_classified.empty() ? "" : ",") + std::string(SegmentName(g));
  }
  p.beyond_accuracy = within.Value();
  {
    std::vector<long> even, odd;
    for (long r = 0; r < nt; ++r) (test.sequence[r] % 2 == 0 ? even : odd).push_back(r);
    Balanced pooled, segment_only;
    const std::vector<uint8_t> le = Labels(unseen, even);
    if (!odd.empty() && std::count(le.begin(), le.end(), 1) > 0 &&
        std::count(le.begin(), le.end(), 0) > 0) {
      const std::vector<uint8_t> said = Classifier(Rows(zt, even), le).Say(Rows(zt, odd));
      // The best rule that knows only the segment: say "unseen" for a segment when its share of
      // the unseen rows exceeds its share of the seen ones (each segment then adds the larger of
      // the two to TPR + TNR).
      double seen_in[kSegments] = {0, 0, 0}, unseen_in[kSegments] = {0, 0, 0}, ns = 0, nu = 0;
      for (long r : odd) {
        (unseen[r] ? unseen_in : seen_in)[test.segment[r]] += 1;
        (unseen[r] ? nu : ns) += 1;
      }
      for (size_t k = 0; k < odd.size(); ++k) {
        const long r = odd[k];
        const int g = test.segment[r];
        pooled.Add(unseen[r], said[k]);
        segment_only.Add(unseen[r], nu > 0 && ns > 0 && unseen_in[g] / nu > seen_in[g] / ns);
      }
    }
    p.beyond_accuracy_pooled = pooled.Value();
    p.beyond_segment_baseline = segment_only.Value();
  }

  // Out of distribution, each segment against its own fit states.
  double out_seen = 0, out_unseen = 0, n_seen = 0, n_unseen = 0;
  for (int g = 0; g < kSegments; ++g) {
    std::vector<long> ref, held, t_seen, t_unseen;
    for (long r = 0; r < nf; ++r)
      if (fit.segment[r] == g) (fit.sequence[r] % 2 == 0 ? ref : held).push_back(r);
    for (long r = 0; r < nt; ++r)
      if (test.segment[r] == g) (unseen[r] ? t_unseen : t_seen).push_back(r);
    if (static_cast<int>(std::min(ref.size(), held.size())) < p.kMinSegmentRows) continue;
    if (t_seen.empty() && t_unseen.empty()) continue;
    const Eigen::MatrixXd a = Rows(zf, ref), b = Rows(zf, held);
    if (!t_seen.empty()) {
      out_seen += OutlierRate(a, b, Rows(zt, t_seen)) * static_cast<double>(t_seen.size());
      n_seen += static_cast<double>(t_seen.size());
    }
    if (!t_unseen.empty()) {
      out_unseen += OutlierRate(a, b, Rows(zt, t_unseen)) * static_cast<double>(t_unseen.size());
      n_unseen += static_cast<double>(t_unseen.size());
    }
    p.segments_ood += (p.segments_ood.empty() ? "" : ",") + std::string(SegmentName(g));
  }
  p.ood_seen = n_seen > 0 ? out_seen / n_seen : kNaN;
  p.ood_unseen = n_unseen > 0 ? out_unseen / n_unseen : kNaN;
  return p;
}

}  // namespace lexp
