// Affine map y = x W + b with W stored [in, out]. Row chunks (forward, d_x), row groups and column
// chunks (d_W, d_b) have fixed sizes, so results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "nn/ops/gemm.h"
#include "nn/parallel.h"
#include "nn/tensor.h"

namespace lexp {

inline constexpr long kRowGrain = 512;  // rows per GEMM task: large enough to keep the kernel busy
inline constexpr long kColGrain = 64;   // columns per reduction task (norms, embeddings)
// Output columns per weight-gradient task: each task repacks all of x, so fewer, wider tasks.
inline constexpr long kWeightGradColGrain = 128;

template <typename S>
struct LinearParams {
  Mat<S> w;     // [in, out]
  RowVec<S> b;  // [out]
};

// A layer ready for the products of all its row chunks: W prepared once as their right factor
// (GemmOperand: under native bf16 products, converted to bf16 once per pass, not once per chunk).
// The layer's parameters must stay unchanged while it is used.
template <typename S>
struct PreparedLinear {
  const LinearParams<S>* p = nullptr;
  GemmOperand<S> w;
  void Prepare(const LinearParams<S>& params) {
    p = &params;
    w.Prepare(GemmSide::kRight, false, params.w.rows(), params.w.cols(), params.w.data(),
              params.w.cols());
  }
};

// One chunk of rows: y[n, out] = x[n, in] W + b (contiguous rows).
template <typename S>
void LinearRows(const S* x, long n, const PreparedLinear<S>& layer, S* y) {
  const long in = layer.w.rows(), out = layer.w.cols();
  Gemm<S>(false, n, x, in, layer.w, false, y, out);
  MatMap<S>(y, n, out).rowwise() += layer.p->b;
}

// x: [N, in] -> y: [N, out]
template <typename S>
void LinearForward(const Mat<S>& x, const LinearParams<S>& p, Mat<S>& y) {
  Resize(y, x.rows(), p.w.cols());
  PreparedLinear<S> layer;
  layer.Prepare(p);
  ParallelChunks(x.rows(), kRowGrain, [&](long r0, long r1) {
    LinearRows(x.data() + r0 * x.cols(), r1 - r0, layer, y.data() + r0 * y.cols());
  });
}

// How LinearBackward writes d_x: added to what it holds, or written over it (a fresh buffer need
// not be zeroed first).
enum class GradWrite { kAdd, kOverwrite };

// Rows of x per weight-gradient task. The reduction over rows (k = B*T) is cut into fixed groups
// whose partial products are added in group order, so a weight gradient keeps a thread per group
// even when it has one column chunk (a [64, 64] projection). Measured on AVX2 (2 threads): the T
// step 11% faster, the S step unchanged; cutting each group again into k = 256 products for the
// short-product kernels made S 10% slower.
inline constexpr long kWeightGradRowGroup = 1024;

// Reused buffers of LinearBackward; a vector keeps its capacity, so once the largest layer was
// seen the backward pass allocates nothing.
template <typename S>
struct LinearScratch {
  // W^T [out, in] prepared as the right factor of every row chunk of d_x = d_y W^T: a copied
  // transpose (the plain product, a faster kernel) or its bf16 pairs.
  GemmOperand<S> w_t;
  // x_g^T [in, rows of group g] prepared as the left factor of every column chunk of group g's
  // weight gradient (converted to bf16 once per group, not once per chunk).
  std::vector<GemmOperand<S>> x_t;
  std::vector<S> partial;  // [groups - 1, in, out] the weight-gradient partials of groups 1...
  std::vector<S> bias_partial;  // [groups, out] the bias-gradient partials of every group
};

// d_x += d_y W^T (or =, without add) on rows [r0, r1); w_t: W^T prepared (LinearScratch), or null
// (the transposed product on W itself).
template <typename S>
void LinearInputGradRows(const LinearParams<S>& p, const Mat<S>& d_y, Mat<S>& d_x, bool add,
                         const GemmOperand<S>* w_t, long r0, long r1) {
  const long in = p.w.rows(), out = p.w.cols();
  const S* dy = d_y.data() + r0 * out;
  S* dx = d_x.data() + r0 * in;
  if (w_t != nullptr)
    Gemm<S>(false, r1 - r0, dy, out, *w_t, add, dx, in);
  else
    Gemm<S>(false, true, r1 - r0, in, out, dy, out, p.w.data(), out, add, dx, in);
}

// W^T prepared as the right factor of d_x's products.
template <typename S>
void PrepareTransposedWeights(const LinearParams<S>& p, LinearScratch<S>& scratch) {
  scratch.w_t.Prepare(GemmSide::kRight, true, p.w.cols(), p.w.rows(), p.w.data(), p.w.cols());
}

// No work after a chunk of d_x (LinearBackward's default).
struct NoRowWork {
  void operator()(long, long) const {}
};

// The weight and bias gradients of a linear layer, d_W += x^T d_y and d_b += sum_rows d_y, as
// independent tasks a caller may run in any parallel region: PrepareGroup(g) for every group
// (x_g^T), then Task(w) for every w < Tasks(), then Combine(c) for every c < CombineTasks().
// d_W is summed as d_W + P_0 + P_1 + ... over the row groups g (P_g = x_g^T d_y_g), always in that
// order, and d_b likewise from each group's rows summed in order (in the group's task), so the bits
// do not depend on the thread count. Without scratch the groups are not split.
template <typename S>
class WeightGradTasks {
 public:
  WeightGradTasks(const Mat<S>& x, const Mat<S>& d_y, LinearParams<S>& d_p,
                  LinearScratch<S>* scratch)
      : x_(x), d_y_(d_y), d_p_(d_p), scratch_(scratch), rows_(x.rows()), in_(d_p.w.rows()),
        out_(d_p.w.cols()),
        groups_(scratch != nullptr
                    ? std::max(1L, (rows_ + kWeightGradRowGroup - 1) / kWeightGradRowGroup)
                    : 1),
        col_chunks_((out_ + kWeightGradColGrain - 1) / kWeightGradColGrain),
        bias_partial_(scratch != nullptr ? scratch->bias_partial : own_bias_partial_) {
    if (scratch != nullptr) scratch->x_t.resize(static_cast<size_t>(groups_));
    if (groups_ > 1) scratch->partial.resize((groups_ - 1) * in_ * out_);
    bias_partial_.resize(groups_ * out_);
  }
  WeightGradTasks(const WeightGradTasks&) = delete;  // bias_partial_ may refer to its own member
  WeightGradTasks& operator=(const WeightGradTasks&) = delete;
  long Groups() const { return groups_; }
  // Rows [r0, r1) of group g.
  std::pair<long, long> GroupRows(long g) const {
    const long r0 = g * kWeightGradRowGroup;
    return {r0, groups_ == 1 ? rows_ : std::min(rows_, r0 + kWeightGradRowGroup)};
  }
  // x_g^T prepared as the left factor of the group's column chunks (with scratch).
  void PrepareGroup(long g) const {
    const auto [r0, r1] = GroupRows(g);
    scratch_->x_t[g].Prepare(GemmSide::kLeft, true, in_, r1 - r0, x_.data() + r0 * in_, in_);
  }
  long Tasks() const { return groups_ * col_chunks_; }
  // Group g's product for one column chunk: into d_W itself for group 0, else into its partial.
  void Task(long w) const {
    const long g = w / col_chunks_, c = w % col_chunks_;
    const long c0 = c * kWeightGradColGrain, c1 = std::min(out_, c0 + kWeightGradColGrain);
    const auto [r0, r1] = GroupRows(g);
    S* dst = g == 0 ? d_p_.w.data() + c0 : scratch_->partial.data() + (g - 1) * in_ * out_ + c0;
    if (scratch_ != nullptr)
      Gemm<S>(scratch_->x_t[g], false, c1 - c0, d_y_.data() + r0 * out_ + c0, out_, g == 0, dst,
              out_);
    else
      Gemm<S>(true, false, in_, c1 - c0, r1 - r0, x_.data() + r0 * in_, in_,
              d_y_.data() + r0 * out_ + c0, out_, g == 0, dst, out_);
    // The group's d_b partial, row after row: contiguous, vectorised reads of the row-major d_y.
    Eigen::Map<RowVec<S>> db(bias_partial_.data() + g * out_ + c0, c1 - c0);
    db.setZero();
    for (long r = r0; r < r1; ++r) db += d_y_.row(r).segment(c0, c1 - c0);
  }
  // Tasks per group: group g's are Task(g * ColumnChunks() + c) for c < ColumnChunks().
  long ColumnChunks() const { return col_chunks_; }
  // Multiply-adds of a task (the first group's rows, a full column chunk).
  long TaskSize() const {
    const auto [r0, r1] = GroupRows(0);
    return (r1 - r0) * in_ * std::min(out_, kWeightGradColGrain);
  }
  long CombineTasks() const { return col_chunks_; }
  // The other groups' partials and every group's d_b partial added in group order, one column
  // chunk.
  void Combine(long c) const {
    const long c0 = c * kWeightGradColGrain, c1 = std::min(out_, c0 + kWeightGradColGrain);
    for (long g = 1; g < groups_; ++g)
      d_p_.w.middleCols(c0, c1 - c0) +=
          MatMap<S>(scratch_->partial.data() + (g - 1) * in_ * out_, in_, out_)
              .middleCols(c0, c1 - c0);
    auto db = d_p_.b.segment(c0, c1 - c0);
    for (long g = 0; g < groups_; ++g)
      db += Eigen::Map<const RowVec<S>>(bias_partial_.data() + g * out_ + c0, c1 - c0);
  }

 private:
  const Mat<S>& x_;
  const Mat<S>& d_y_;
  LinearParams<S>& d_p_;
  LinearScratch<S>* scratch_;
  long rows_, in_, out_, groups_, col_chunks_;
  std::vector<S> own_bias_partial_;
  std::vector<S>& bias_partial_;
};

// Forward: y = x W + b.  Backward: d_x += d_y W^T;  d_W += x^T d_y;  d_b += sum_rows d_y (the
// weight and bias gradients as WeightGradTasks). d_x may be null when the input needs no
// gradient. Without scratch, d_x uses the transposed (NT) product and the groups are not split.
// after_dx(r0, r1) runs on the rows of d_x just written, while they are in cache (the next
// layer's row-wise backward: GELU's slope, say), in the same parallel region.
template <typename S, typename AfterDx = NoRowWork>
void LinearBackward(const Mat<S>& x, const LinearParams<S>& p, const Mat<S>& d_y, Mat<S>* d_x,
                    LinearParams<S>& d_p, GradWrite write = GradWrite::kAdd,
                    LinearScratch<S>* scratch = nullptr, const AfterDx& after_dx = AfterDx()) {
  const long rows = x.rows(), out = p.w.cols();
  const bool add = write == GradWrite::kAdd;
  if (d_x != nullptr && !add) Resize(*d_x, rows, p.w.rows());
  const bool transposed_w = d_x != nullptr && scratch != nullptr;
  const WeightGradTasks<S> weights(x, d_y, d_p, scratch);
  const long groups = weights.Groups();
  // The shared factors, prepared before the products: W^T, and each group's x_g^T (converting
  // ones in a parallel region of their own).
  if (scratch != nullptr) {
    const auto prepare = [&](long t) {
      if (t == groups) {
        PrepareTransposedWeights(p, *scratch);
        return;
      }
      weights.PrepareGroup(t);
    };
    const long tasks = groups + (transposed_w ? 1 : 0);
    if (GemmOperand<S>::PrepareConverts())
      ParallelFor(tasks, prepare);
    else
      for (long t = 0; t < tasks; ++t) prepare(t);
  }
  const long dx_tasks = d_x != nullptr ? (rows + kRowGrain - 1) / kRowGrain : 0;
  // d_x for rows [r0, r1).
  const auto input_grad = [&](long r0, long r1) {
    LinearInputGradRows(p, d_y, *d_x, add, transposed_w ? &scratch->w_t : nullptr, r0, r1);
    after_dx(r0, r1);
  };
  // One parallel region for both products: they are independent, and each writes its own memory,
  // so their order changes no value. The kind with the larger tasks is listed first (a heuristic:
  // TBB splits the range in halves and steals right halves, so the last tasks to run tend to be
  // the right-hand ones, and a thread that finds no work left then waits on a short task). A weight
  // task is group_rows(0) x in x min(out, kWeightGradColGrain) multiply-adds, a d_x task kRowGrain
  // x in x out: with groups of 1024 rows the weight tasks are the larger (or equal) for outputs up
  // to 256 wide (every layer of a T model), d_x's for wider ones.
  const long weight_tasks = weights.Tasks();
  const bool weights_first = weights.TaskSize() >= std::min(rows, kRowGrain) * p.w.rows() * out;
  const auto dx_task = [&](long i) {
    input_grad(i * kRowGrain, std::min(rows, (i + 1) * kRowGrain));
  };
  ParallelFor(weight_tasks + dx_tasks, [&](long t) {
    if (weights_first) {
      if (t < weight_tasks) return weights.Task(t);
      return dx_task(t - weight_tasks);
    }
    if (t < dx_tasks) return dx_task(t);
    weights.Task(t - dx_tasks);
  });
  ParallelFor(weights.CombineTasks(), [&](long c) { weights.Combine(c); });
}

// The input gradient alone, d_x += d_y W^T (kAdd) or d_x = d_y W^T (kOverwrite), in the row
// chunks and products of LinearBackward's: the same bits as its d_x.
template <typename S>
void LinearInputGrad(const LinearParams<S>& p, const Mat<S>& d_y, Mat<S>& d_x, GradWrite write,
                     LinearScratch<S>* scratch) {
  const bool add = write == GradWrite::kAdd;
  if (!add) Resize(d_x, d_y.rows(), p.w.rows());
  PrepareTransposedWeights(p, *scratch);
  ParallelChunks(d_y.rows(), kRowGrain, [&](long r0, long r1) {
    LinearInputGradRows(p, d_y, d_x, add, &scratch->w_t, r0, r1);
  });
}

}  // namespace lexp
