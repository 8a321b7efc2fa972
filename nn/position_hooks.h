// The interface through which a positional encoding touches the transformer, and nothing else does.
// Eight named sites:
//   1. position ids     token index -> position used (may differ between training and evaluation)
//   2. input embedding  vector added to the token embedding (or a transform of it that may read the
//                       token ids, as complex word-order embeddings do)
//   3. q/k transform    rotation / scaling of each head's queries and keys by position
//   4. logit term       b_h(i, j) or a content-position term (may read q_i, k_j) added after
//                       1/sqrt(D), or a transform of the block of logits (ReLU-and-rescale, a
//                       second rotary pass)
//   5. mask / pattern   which keys query i may see and at what effective distance
//                       (AttentionPattern)
//   6. logit scale      per-query temperature multiplying q.k/sqrt(D) (not the logit term)
//   7. value term       sum_j p_ij r_h(i, j) added to the attention output (relative values, Shaw)
//   8. head mix         a function of every head's logit at (i, j) replacing each head's logit
//                       there, before the mask (DAPE's MLP over the logits and the biases)
// The attention logit of head h is  a_ij = scale_i * q_i.k_j / sqrt(D) + b_h(i, j, q_i, k_j)  for
// visible j (or f_h(i, j, scale_i q_i.k_j / sqrt(D), q_i, k_j) for a transforming logit term), and
// the output  o_i = sum_j p_ij (v_j + r_h(i, j)). nn/ knows only this interface; encodings live in
// pe/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/rng.h"
#include "nn/tensor.h"

namespace lexp {

// A learnable tensor as seen by the optimizer, checkpoints and gradient checks. The optimizer sees
// `size` contiguous elements; files store them with `shape` (row-major) and its `axes` names.
template <typename S>
struct ParamRef {
  ParamRef(std::string name_, S* value_, S* grad_, long size_, std::vector<uint64_t> shape_ = {},
           std::string axes_ = "")
      : name(std::move(name_)),
        value(value_),
        grad(grad_),
        size(size_),
        shape(shape_.empty() ? std::vector<uint64_t>{static_cast<uint64_t>(size_)}
                             : std::move(shape_)),
        axes(axes_.empty() ? "element" : std::move(axes_)) {}
  // A matrix parameter [rows, cols] seen as `axes` (e.g. "in,out"), or with a finer `shape` whose
  // product is rows * cols (e.g. [layer, bucket, head] for a table of layer-major rows).
  ParamRef(std::string name_, Mat<S>& v, Mat<S>& g, std::string axes_,
           std::vector<uint64_t> shape_ = {})
      : ParamRef(std::move(name_), v.data(), g.data(), static_cast<long>(v.size()),
                 shape_.empty() ? std::vector<uint64_t>{static_cast<uint64_t>(v.rows()),
                                                        static_cast<uint64_t>(v.cols())}
                                : std::move(shape_),
                 std::move(axes_)) {}
  ParamRef(std::string name_, RowVec<S>& v, RowVec<S>& g, std::string axes_)
      : ParamRef(std::move(name_), v.data(), g.data(), static_cast<long>(v.size()), {},
                 std::move(axes_)) {}

  std::string name;  // "layer0.attn.qkv.w", "pe.t5.table", ...
  S* value;
  S* grad;
  long size;
  std::vector<uint64_t> shape;  // product == size
  std::string axes;             // one comma-separated name per dimension of shape
};

// Mask / pattern site. Causal and bidirectional are the two built-in patterns; the others
// (pe/patterns.h) override KeyBounds/Visible/EffectiveDistance, may differ per head (ForHead) and
// may add a logit offset per visible key (LongNet's merge of overlapping key sets is a softmax with
// ln(multiplicity)).
class AttentionPattern {
 public:
  explicit AttentionPattern(bool causal) : causal_(causal) {}
  virtual ~AttentionPattern() = default;
  virtual std::string Name() const { return causal_ ? "causal" : "bidirectional"; }
  bool causal() const { return causal_; }
  // Keys [*begin, *end) bound the keys query i may see in a sequence of length T.
  virtual void KeyBounds(int i, int T, int* begin, int* end) const {
    *begin = 0;
    *end = causal_ ? i + 1 : T;
  }
  // True when every key inside the bounds is visible (then Visible is never called).
  virtual bool Contiguous() const { return true; }
  virtual bool Visible(int /*i*/, int /*j*/, int /*T*/) const { return true; }
  // Distance at which query i sees key j, for distance-based encodings (positions, not indices).
  virtual double EffectiveDistance(int i, int j, const double* pos) const {
    return pos[i] - pos[j];
  }
  // True when EffectiveDistance is pos[i] - pos[j]; lets hot loops skip the virtual call.
  virtual bool PlainDistance() const { return true; }
  // The pattern that head `head` of `heads` uses (patterns that split heads override it).
  virtual const AttentionPattern& ForHead(int /*head*/, int /*heads*/) const { return *this; }
  // Offset added to the logit of a visible key (HasLogitOffset() = false: none is ever added).
  virtual bool HasLogitOffset() const { return false; }
  virtual double LogitOffset(int /*i*/, int /*j*/, int /*T*/) const { return 0; }
  // True when the keys a query sees depend on the sequence's length (S2-Attn's groups).
  virtual bool DependsOnLength() const { return false; }
  // Memory keys (HasMemory()): query i reads the keys j < MemoryEnd(i) of its bounds as a cached
  // memory. They enter its logits and output as any key, but the backward pass sends no gradient
  // from query i into the states that made them (Transformer-XL's stop-gradient on the cached
  // segment); the parameters that projected them into keys and values still get theirs.
  virtual bool HasMemory() const { return false; }
  virtual int MemoryEnd(int /*i*/) const { return 0; }
  // Landmark attention (nn/ops/landmark.h): a block length L > 0 makes the attention a grouped
  // softmax over blocks of L rows each followed by a landmark row; top_k > 0 keeps each query's
  // top_k blocks only (evaluation).
  virtual int LandmarkBlock() const { return 0; }
  virtual int LandmarkTopK() const { return 0; }
  // Largest |EffectiveDistance| over every visible (query, key) pair, given the span of the
  // positions (PositionSpan); patterns that show keys at a fixed distance (LM-Infinite's cap) can
  // exceed the span.
  virtual double MaxDistance(double span) const { return span; }

 private:
  bool causal_;
};

// max(pos) - min(pos): the largest plain distance between two positions of a batch (0 if empty).
inline double PositionSpan(const std::vector<double>& pos) {
  if (pos.empty()) return 0;
  double lo = pos[0], hi = pos[0];
  for (double p : pos) {
    lo = p < lo ? p : lo;
    hi = p > hi ? p : hi;
  }
  return hi - lo;
}

// Everything an encoding may need to know about the attention call it is plugged into.
struct AttentionContext {
  int layer = 0;
  int head = 0;
  int num_heads = 1;
  int head_dim = 1;
  int T = 0;                    // sequence length (keys = queries)
  const double* pos = nullptr;  // [T] position ids from site 1
  const AttentionPattern* pattern = nullptr;
  bool plain_distance = true;  // pattern->PlainDistance(), cached
  // Site 3 transforms rows [first_row, T) only (x still points at row 0): incremental decoding
  // transforms the new rows of a sequence whose earlier rows were transformed before.
  int first_row = 0;
  double Distance(int i, int j) const {
    return plain_distance ? pos[i] - pos[j] : pattern->EffectiveDistance(i, j, pos);
  }
};

// One (sequence, head) task's queries and keys after site 3: row t of [T, D] at q + t * ld.
template <typename S>
struct HeadQK {
  const S* q;
  const S* k;
  long ld;
};
// Gradients of the same rows (accumulated).
template <typename S>
struct HeadQKGrad {
  S* d_q;
  S* d_k;
  long ld;
};

enum Site : unsigned {
  kSitePositionIds = 1u << 0,
  kSiteEmbedding = 1u << 1,
  kSiteQKTransform = 1u << 2,
  kSiteLogitTerm = 1u << 3,
  kSitePattern = 1u << 4,
  kSiteLogitScale = 1u << 5,
  kSiteValueTerm = 1u << 6,
  kSiteHeadMix = 1u << 7,
};

template <typename S>
class PositionEncoding {
 public:
  virtual ~PositionEncoding() = default;
  virtual std::string Name() const = 0;
  virtual unsigned Sites() const = 0;  // bit mask of Site; the model skips the sites not listed
  bool Uses(Site s) const { return (Sites() & s) != 0; }

  // Called once per forward pass, before any other site, with the batch's position ids and the
  // largest |distance| at which a query may see a key (AttentionPattern::MaxDistance: the span of
  // the positions, or more under a pattern that caps distances), so that encodings can build tables
  // covering every distance the pass can produce (rotation angles, bucket maps) outside the hot
  // loops.
  virtual void Prepare(const std::vector<double>& /*pos*/, double /*max_distance*/) {}

  // Site 1. Fills pos[t] for t in [0, T); one position vector is shared by the whole batch.
  virtual void PositionIds(int T, bool /*training*/, Rng& /*rng*/, std::vector<double>& pos) const {
    pos.resize(T);
    for (int t = 0; t < T; ++t) pos[t] = t;
  }

  // Site 2. x: [B*T, C] token embeddings of `tokens` [B*T]; adds e(pos[t]) to every row of sequence
  // position t (or transforms the rows in place).
  virtual void AddEmbedding(const std::vector<double>& /*pos*/, const std::vector<int>& /*tokens*/,
                            int /*B*/, Mat<S>& /*x*/) {}
  // d_x: [B*T, C], the gradient w.r.t. the output of AddEmbedding; accumulates the embedding's
  // parameter gradients and, for a transform, replaces d_x by the gradient w.r.t. its input.
  virtual void EmbeddingBackward(const std::vector<double>& /*pos*/,
                                 const std::vector<int>& /*tokens*/, int /*B*/, Mat<S>& /*d_x*/) {}

  // Site 3. x: [T, D] rows with leading dimension ld, one (sequence, head); transformed in place.
  virtual void TransformQK(const AttentionContext& /*ctx*/, bool /*is_query*/, S* /*x*/,
                           long /*ld*/) const {}
  // d_x: [T, D]; replaces the gradient w.r.t. the transformed vectors by the gradient w.r.t. the
  // untransformed ones (multiplies by the transposed Jacobian), in place.
  virtual void TransformQKBackward(const AttentionContext& /*ctx*/, bool /*is_query*/, S* /*d_x*/,
                                   long /*ld*/) const {}

  // Site 4. On entry scores[(i-i0)*lds + (j-j0)] holds scale_i q_i.k_j / sqrt(D) for queries [i0,
  // i1) and keys [j0, j1) (masked keys included; the mask is applied afterwards). Adds b(i, j) to
  // it, or replaces it by a function of it. qk: this task's queries and keys after site 3.
  virtual void AddLogitTerm(const AttentionContext& /*ctx*/, int /*i0*/, int /*i1*/, int /*j0*/,
                            int /*j1*/, const HeadQK<S>& /*qk*/, S* /*scores*/,
                            long /*lds*/) const {}
  // Backward of site 4 for one (sequence, head) task. On entry d_scores (layout of scores) is the
  // gradient w.r.t. the output of AddLogitTerm; an additive term leaves it alone, a transform
  // replaces it by the gradient w.r.t. its input. Accumulates into grad.d_q / grad.d_k the gradient
  // of terms that read q or k, and parameter gradients into the per-task slot `task` (see
  // BeginBackward).
  virtual void LogitTermBackward(const AttentionContext& /*ctx*/, int /*i0*/, int /*i1*/,
                                 int /*j0*/, int /*j1*/, const HeadQK<S>& /*qk*/, S* /*d_scores*/,
                                 long /*lds*/, const HeadQKGrad<S>& /*grad*/, int /*task*/) {}
  // True when site 4's term is additive and reads nothing learnable (neither q, k nor a
  // parameter): LogitTermBackward would do nothing, and the attention backward skips it.
  virtual bool LogitTermIsConstant() const { return false; }
  // Site 7. out[(i-i0)*ldo + c] += sum_{j in [j0, j1)} p[(i-i0)*ldp + (j-j0)] * r_h(i, j)[c], with
  // p the (possibly unnormalised) attention weights of visible keys (0 where masked), out [i1-i0,
  // D].
  virtual void AddValueTerm(const AttentionContext& /*ctx*/, int /*i0*/, int /*i1*/, int /*j0*/,
                            int /*j1*/, const S* /*p*/, long /*ldp*/, S* /*out*/,
                            long /*ldo*/) const {}
  // Backward of site 7: d_p[(i-i0)*ldd + (j-j0)] += d_out_i . r_h(i, j); parameter gradients into
  // the per-task slot `task`. d_out: [i1-i0, D] rows with stride ldo.
  virtual void ValueTermBackward(const AttentionContext& /*ctx*/, int /*i0*/, int /*i1*/,
                                 int /*j0*/, int /*j1*/, const S* /*p*/, long /*ldp*/,
                                 const S* /*d_out*/, long /*ldo*/, S* /*d_p*/, long /*ldd*/,
                                 int /*task*/) {}
  // Called before/after the parallel backward of one attention layer with `tasks` independent tasks
  // (only for encodings with site 4, 7 or 8);
  // EndBackward reduces the per-task slots into the gradients in task order (bit-identical).
  virtual void BeginBackward(int /*tasks*/) {}
  virtual void EndBackward() {}

  // Site 8 (the attention then runs per sequence, all heads of a query block together;
  // nn/ops/attention_head_mix.h). heads[h] is head h's context, qk[h] its queries and keys after
  // site 3. On entry scores[h][(i-i0)*lds + (j-j0)] holds head h's logit after sites 6 and 4 for
  // queries [i0, i1) and keys [j0, j1), masked keys included (the mask is applied afterwards);
  // replaces every head's logit by a function of all heads' logits at the same (i, j).
  virtual void MixHeads(const AttentionContext* /*heads*/, int /*i0*/, int /*i1*/, int /*j0*/,
                        int /*j1*/, const HeadQK<S>* /*qk*/, S* const* /*scores*/,
                        long /*lds*/) const {}
  // Backward of site 8 for one sequence `sequence`: `scores` holds the forward's input (the
  // logits before the mix), d_scores the gradient w.r.t. its output, replaced by the gradient
  // w.r.t. its input; q/k gradients of terms that read them go to grad[h], parameter gradients to
  // the per-task slots (BeginBackward is called with sequences * heads tasks, task = sequence *
  // heads + h).
  virtual void MixHeadsBackward(const AttentionContext* /*heads*/, int /*i0*/, int /*i1*/,
                                int /*j0*/, int /*j1*/, const HeadQK<S>* /*qk*/,
                                const S* const* /*scores*/, S* const* /*d_scores*/, long /*lds*/,
                                const HeadQKGrad<S>* /*grad*/, int /*sequence*/) {}

  // Site 6. Temperature on q.k/sqrt(D) for query i.
  virtual S LogitScale(const AttentionContext& /*ctx*/, int /*i*/) const { return S(1); }

  // Learnable parameters (names start with "pe."), empty for fixed encodings.
  virtual std::vector<ParamRef<S>> Parameters() { return {}; }
  // Deterministic initialisation of the learnable parameters.
  virtual void Init(Rng& /*rng*/) {}
  // Called after every optimizer step: projections that keep parameters in their domain
  // (KERPLE clamps its parameters to >= 0.01 as the reference code does).
  virtual void AfterOptimizerStep() {}
  // True when the tables of sites 1-3 at a position depend on the sequence's length (RoPE's
  // dynamic scaling rules): incremental decoding then recomputes the whole prefix at every step.
  virtual bool TablesDependOnLength() const { return false; }
  // True when site 2's vector for a token depends on the tokens before it (Abacus numbers the
  // digits of each number): incremental decoding then recomputes the whole prefix at every step.
  virtual bool EmbeddingReadsEarlierTokens() const { return false; }
  // True unless site 3 transforms the row at position p the same whatever the other positions:
  // then incremental decoding keeps the cached keys transformed and transforms only the new rows.
  // xPos, whose scale is centred on the middle position, keeps the default (every key again).
  virtual bool QKTransformDependsOnOtherPositions() const { return true; }
  // What a run file should record that the options do not show: defaults resolved against the
  // run (FIRE's threshold, xPos's scale base) and values derived from learned parameters (FIRE's
  // threshold after training), by name.
  virtual std::map<std::string, std::vector<double>> Describe() const { return {}; }
};

}  // namespace lexp
