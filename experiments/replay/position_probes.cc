#include "experiments/replay/position_probes.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/linear_probe.h"
#include "experiments/replay/model_replay.h"

namespace lexp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxSequences = 64;  // per set: bounds the memory of the stored states

// Hidden states of every position of `samples` evaluation sequences of length n, per layer.
struct States {
  int T = 0, prompt = 0;
  std::vector<Eigen::MatrixXd> x;  // [L+1] of [rows, C]
  std::vector<int> position, sequence;
};

States Collect(ModelReplay& replay, int n, int samples) {
  const RecipeConfig& cfg = replay.config();
  AssembledModel& m = replay.parts();
  m.model->set_keep_residuals(true);  // every residual stream, not the two an evaluation keeps
  States st;
  st.T = replay.SequenceLength(n);
  const long T = st.T, C = cfg.model.d_model;
  st.x.assign(cfg.model.n_layers + 1, Eigen::MatrixXd(samples * T, C));
  for (long r = 0; r < samples * T; ++r) {
    st.position.push_back(static_cast<int>(r % T));
    st.sequence.push_back(static_cast<int>(r / T));
  }
  MatF logits;
  replay.ForEachEvalBatch(n, samples,
                          [&](const Batch& b, const std::vector<double>& pos, int first) {
                            m.model->Forward(b.tokens, b.B, b.T, pos, false, false, logits);
                            st.prompt = b.prompt;
                            // The batch's rows, sequence-major like the states.
                            for (size_t l = 0; l < st.x.size(); ++l)
                              st.x[l].middleRows(first * T, b.B * T) =
                                  m.model->Residual(static_cast<int>(l)).cast<double>();
                          });
  return st;
}

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

double Rmse(const Eigen::VectorXd& pred, const Eigen::VectorXd& y, const std::vector<long>& rows) {
  if (rows.empty()) return kNaN;
  double s = 0;
  for (long r : rows) s += (pred[r] - y[r]) * (pred[r] - y[r]);
  return std::sqrt(s / static_cast<double>(rows.size()));
}

}  // namespace

PositionProbes MeasurePositionProbes(const std::string& run_file) {
  PositionProbes p;
  ModelReplay replay(run_file);
  const RecipeConfig& cfg = replay.config();
  const std::vector<int> lengths = cfg.EvalLengths();
  p.train_length = cfg.train_max_length;
  p.long_length = *std::max_element(lengths.begin(), lengths.end());
  p.samples = std::min(cfg.eval_samples, kMaxSequences);
  const States fit = Collect(replay, p.train_length, p.samples);
  const States test = Collect(replay, p.long_length, p.samples);
  p.train_tokens = fit.T;
  p.long_tokens = test.T;
  p.has_separator = fit.prompt > 0 && test.prompt > 0;
  const int L = cfg.model.n_layers;
  const long nf = static_cast<long>(fit.position.size()),
             nt = static_cast<long>(test.position.size());
  Eigen::VectorXd y_fit(nf), y_test(nt), s_fit(nf), s_test(nt), beyond(nt);
  for (long r = 0; r < nf; ++r) {
    y_fit[r] = fit.position[r];
    s_fit[r] = fit.position[r] - (fit.prompt - 1);
  }
  std::vector<long> in_range, past, last, half_fit, half_test;
  for (long r = 0; r < nt; ++r) {
    y_test[r] = test.position[r];
    s_test[r] = test.position[r] - (test.prompt - 1);
    const bool b = test.position[r] >= fit.T;
    beyond[r] = b ? 1.0 : -1.0;
    (b ? past : in_range).push_back(r);
    if (test.position[r] == test.T - 1) last.push_back(r);
    (test.sequence[r] % 2 == 0 ? half_fit : half_test).push_back(r);
  }
  for (int l = 0; l <= L; ++l) {
    const Scaler scale(fit.x[l]);
    const Eigen::MatrixXd zf = scale(fit.x[l]), zt = scale(test.x[l]);
    const RidgeProbe index(zf, y_fit);
    const Eigen::VectorXd pf = index.Predict(zf), pt = index.Predict(zt);
    std::vector<long> all_fit(nf);
    for (long r = 0; r < nf; ++r) all_fit[r] = r;
    p.index_rmse_fit.push_back(Rmse(pf, y_fit, all_fit));
    p.index_rmse_in_range.push_back(Rmse(pt, y_test, in_range));
    p.index_rmse_beyond.push_back(Rmse(pt, y_test, past));
    double lp = 0;
    for (long r : last) lp += pt[r] / static_cast<double>(last.size());
    p.index_last_predicted.push_back(last.empty() ? kNaN : lp);
    if (p.has_separator) {
      const RidgeProbe sep(zf, s_fit);
      const Eigen::VectorXd st = sep.Predict(zt);
      p.separator_rmse_in_range.push_back(Rmse(st, s_test, in_range));
      p.separator_rmse_beyond.push_back(Rmse(st, s_test, past));
    } else {
      p.separator_rmse_in_range.push_back(kNaN);
      p.separator_rmse_beyond.push_back(kNaN);
    }
    // "Beyond the training length" from the long sequences: fit on even, test on odd ones.
    double acc = kNaN;
    if (!past.empty() && !in_range.empty()) {
      Eigen::MatrixXd za(half_fit.size(), zt.cols());
      Eigen::VectorXd ya(half_fit.size());
      for (size_t k = 0; k < half_fit.size(); ++k) {
        za.row(static_cast<Eigen::Index>(k)) = zt.row(half_fit[k]);
        ya[static_cast<Eigen::Index>(k)] = beyond[half_fit[k]];
      }
      const RidgeProbe cls(za, ya);
      const Eigen::VectorXd score = cls.Predict(zt);
      double tp = 0, pn = 0, tn = 0, nn = 0;
      for (long r : half_test) {
        const bool truth = beyond[r] > 0, said = score[r] > 0;
        if (truth) {
          pn += 1;
          tp += said;
        } else {
          nn += 1;
          tn += !said;
        }
      }
      if (pn > 0 && nn > 0) acc = 0.5 * (tp / pn + tn / nn);
    }
    p.beyond_accuracy.push_back(acc);
    // Out of distribution: squared Mahalanobis distance to the training-length states of the even
    // sequences, cut at the 99th percentile over the odd ones.
    auto rows_of = [](const Eigen::MatrixXd& z, const std::vector<long>& rows) {
      Eigen::MatrixXd out(static_cast<Eigen::Index>(rows.size()), z.cols());
      for (size_t k = 0; k < rows.size(); ++k)
        out.row(static_cast<Eigen::Index>(k)) = z.row(rows[k]);
      return out;
    };
    std::vector<long> fit_even, fit_odd;
    for (long r = 0; r < nf; ++r) (fit.sequence[r] % 2 == 0 ? fit_even : fit_odd).push_back(r);
    const Eigen::MatrixXd ref = rows_of(zf, fit_even), held = rows_of(zf, fit_odd);
    auto fraction = [&](const std::vector<long>& rows) {
      return rows.empty() ? kNaN : OutlierRate(ref, held, rows_of(zt, rows));
    };
    p.ood_in_range.push_back(fraction(in_range));
    p.ood_beyond.push_back(fraction(past));
  }
  return p;
}

std::string WritePositionProbes(const PositionProbes& p, const h5::Group& analysis) {
  analysis.Remove("position_probes");
  h5::Group g = analysis.CreateGroup("position_probes");
  const uint64_t K = p.index_rmse_fit.size();
  g.SetAttr("source",
            "evaluation stream replayed: fit on eval sequences at the training length, tested on "
            "the longest evaluation length (experiments/replay/position_probes.h)");
  g.SetAttr("train_length", p.train_length);
  g.SetAttr("train_tokens", p.train_tokens);
  g.SetAttr("long_length", p.long_length);
  g.SetAttr("long_tokens", p.long_tokens);
  g.SetAttr("samples", p.samples);
  g.SetAttr("has_separator", static_cast<int64_t>(p.has_separator));
  const std::string ax = "residual";
  g.WriteDoubles("index_rmse_fit", p.index_rmse_fit, {K}, ax,
                 "tokens: RMSE of the linear probe for the absolute index on its own fit set "
                 "(residual 0: the embedded input; L: the last block's output)");
  g.WriteDoubles("index_rmse_in_range", p.index_rmse_in_range, {K}, ax,
                 "tokens: the same probe on the long sequences' positions t < train_tokens");
  g.WriteDoubles("index_rmse_beyond", p.index_rmse_beyond, {K}, ax,
                 "tokens: and on their positions t >= train_tokens");
  g.WriteDoubles("index_last_predicted", p.index_last_predicted, {K}, ax,
                 "tokens: mean predicted index of the last position (true: long_tokens - 1)");
  g.WriteDoubles("separator_rmse_in_range", p.separator_rmse_in_range, {K}, ax,
                 "tokens: probe for the signed distance to the separator (NaN: no separator)");
  g.WriteDoubles("separator_rmse_beyond", p.separator_rmse_beyond, {K}, ax, "the same, beyond");
  g.WriteDoubles("beyond_accuracy", p.beyond_accuracy, {K}, ax,
                 "balanced accuracy of a linear classifier of t >= train_tokens, fitted on half of "
                 "the long sequences and tested on the other half (0.5: no linear signal)");
  g.WriteDoubles("ood_in_range", p.ood_in_range, {K}, ax,
                 "fraction of long-sequence states at t < train_tokens beyond the 99th "
                 "percentile of the training-length states' Mahalanobis distance (0.01 expected)");
  g.WriteDoubles("ood_beyond", p.ood_beyond, {K}, ax, "the same at t >= train_tokens");
  const uint64_t k = K - 1;
  return fmt::format(
      "position probes (last block, fit at n = {}, tested at n = {}): index RMSE {:.1f} tokens "
      "in range, {:.1f} beyond (last position predicted {:.1f} of {}); beyond-training "
      "classifier {:.2f}; out-of-distribution states {:.2f} in range, {:.2f} beyond\n",
      p.train_length, p.long_length, p.index_rmse_in_range[k], p.index_rmse_beyond[k],
      p.index_last_predicted[k], p.long_tokens - 1, p.beyond_accuracy[k], p.ood_in_range[k],
      p.ood_beyond[k]);
}

}  // namespace lexp
