// CoPE, contextual position encoding (Golovneva et al. 2024, arXiv:2405.18719): a key's position
// seen from query i counts the keys between them, each by a gate on the content,
//   g_it = sigmoid(q_i . k_t / sqrt(D)),   p_ij = sum_{t = j..i, visible} g_it  (clamped to npos-1),
// and the logit reads a learned embedding at that fractional position, interpolated between the
// two integer rows around it (z_i[p] = q_i . e[p] is formed once per query):
//   a_ij += (w z_i[ceil p] + (1 - w) z_i[floor p]) / sqrt(D),   w = p - floor p.
// As the authors' ContextPosSelfAttn (facebookresearch/RAM, projects/cope): gates from the
// attention's own keys, the term added before the 1/sqrt(D) (nodiv = true: after it), one table
// [npos, D] per layer shared by its heads, started at zero, npos = the training length + 1.
// Gradients flow into the table, into q_i through z and the gates, and into k_t through the gates
// (w is differentiable in p; floor and ceil are not). npos falls back to the longest position id
// + 1 when the training length is unknown. Deviation: in the encoder layout (the paper and its
// code are decoder-only; the code without a causal mask would count from j to the sequence's end)
// a key after the query counts the gates from i to j, the same in either direction.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `cope` (recipe [encoding_options.cope]; pe/options.h).
struct CopeOptions {
  int npos = 0;
  bool nodiv = false;
  double init_std = 0;
  std::vector<OptionField> Fields() {
    return {{.name = "npos",
             .help = "rows of the position table per layer; positions beyond are clamped to "
                     "npos - 1 (0 = the training length + 1, the authors' block size + 1)",
             .value = &npos, .lo = 0},
            {.name = "nodiv",
             .help = "add the position term after 1/sqrt(D) (false: before it, the authors' "
                     "default)",
             .value = &nodiv},
            {.name = "init_std",
             .help = "table starts N(0, init_std^2) (0: zeros, as the authors' code)",
             .value = &init_std, .lo = 0}};
  }
};

template <typename S>
class Cope final : public PositionEncoding<S> {
 public:
  using Options = CopeOptions;
  Cope(const EncodingShape& shape, const CopeOptions& opt);
  std::string Name() const override { return "cope"; }
  unsigned Sites() const override { return kSiteLogitTerm; }
  void Init(Rng& rng) override;
  std::vector<ParamRef<S>> Parameters() override;

  void AddLogitTerm(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                    const HeadQK<S>& qk, S* scores, long lds) const override;
  void LogitTermBackward(const AttentionContext& ctx, int i0, int i1, int j0, int j1,
                         const HeadQK<S>& qk, S* d_scores, long lds, const HeadQKGrad<S>& grad,
                         int task) override;
  void BeginBackward(int tasks) override;
  void EndBackward() override;
  std::map<std::string, std::vector<double>> Describe() const override;

  int npos() const { return npos_; }
  // Row p of layer `layer`'s table (tests set it by hand).
  S* TableRow(int layer, int p) {
    return table_.data() + (static_cast<long>(layer) * npos_ + p) * D_;
  }

  // One query's contextual positions: gates of its visible keys [begin, end) and their running
  // sums (prefix[t - begin] = sum of the gates of keys begin..t-1).
  struct Row {
    int i = 0, begin = 0, end = 0;
    std::vector<double> gate, prefix;
    bool Visible(const AttentionContext& ctx, int j) const;
    // p_ij before clamping.
    double Position(int j) const;
  };
  void Positions(const AttentionContext& ctx, int i, const HeadQK<S>& qk, Row& row) const;

 private:
  const S* Table(int layer) const { return table_.data() + static_cast<long>(layer) * npos_ * D_; }
  double TermScale() const;

  int D_, L_, npos_;
  bool nodiv_;
  double init_std_;
  Mat<S> table_, d_table_;     // [L * npos, D]
  std::vector<double> slots_;  // per task: [npos, D]
  int tasks_ = 0;
  std::atomic<int> slot_layer_{0};
};

}  // namespace lexp
