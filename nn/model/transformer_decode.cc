// Incremental decoding (see transformer.h): a key/value cache per block, filled by DecodeStart and
// extended by DecodeAppend a few rows at a time, with the bits of a full forward pass.
#include "nn/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/check.h"

namespace lexp {

template <typename S>
bool Transformer<S>::DecodingRecomputesPrefix() const {
  return enc_->TablesDependOnLength() || enc_->EmbeddingReadsEarlierTokens() ||
         ActivePattern().DependsOnLength() || cfg_.knn.Active() || cfg_.landmark_block > 0 ||
         cfg_.side.Active();
}

template <typename S>
void Transformer<S>::DecodeStart(int B, int capacity, const std::vector<double>& pos) {
  const PrecisionScope precision(cfg_.precision);
  LEXP_CHECK(B > 0 && capacity > 0 && static_cast<int>(pos.size()) == capacity,
             "decode: position ids must cover the capacity");
  const long C = cfg_.d_model, rows = static_cast<long>(B) * capacity;
  dec_B_ = B;
  dec_cap_ = capacity;
  dec_T_ = 0;
  dec_pos_all_ = pos;
  // A retrieved memory is searched again at every step: the whole prefix is recomputed.
  dec_recompute_ = DecodingRecomputesPrefix();
  if (dec_recompute_) {
    dec_tokens_.assign(static_cast<size_t>(B) * capacity, 0);
    return;
  }
  dec_k_.resize(cfg_.n_layers);
  dec_v_.resize(cfg_.n_layers);
  dec_keys_t_.resize(cfg_.n_layers);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    ResizeZero(dec_k_[l], rows, C);
    ResizeZero(dec_v_[l], rows, C);
    ResizeZero(dec_keys_t_[l], static_cast<long>(B) * C, capacity);
  }
  ResizeZero(dec_q_, rows, C);
  if (enc_->Uses(kSiteQKTransform) && enc_->QKTransformDependsOnOtherPositions())
    ResizeZero(dec_kt_, rows, C);
  ResizeZero(dec_att_, rows, C);
}

template <typename S>
bool Transformer<S>::CanDecodeFromForward() const {
  return !DecodingRecomputesPrefix() &&
         !(enc_->Uses(kSiteQKTransform) && enc_->QKTransformDependsOnOtherPositions());
}

template <typename S>
void Transformer<S>::DecodeStartFromForward(const std::vector<int>& seqs, int prefix,
                                            int capacity, const std::vector<double>& pos) {
  LEXP_CHECK(CanDecodeFromForward() && kept_T_ > 0 &&
                 static_cast<int>(kept_k_.size()) == cfg_.n_layers,
             "decode: no keys kept from an evaluation pass (set_keep_keys_for_decoding)");
  LEXP_CHECK(prefix >= 0 && prefix <= kept_T_ && prefix <= capacity,
             "decode: the prefix is longer than the pass");
  const int D = static_cast<int>(seqs.size());
  for (int s : seqs) LEXP_CHECK(s >= 0 && s < kept_B_, "decode: no such sequence in the pass");
  DecodeStart(D, capacity, pos);
  const long C = cfg_.d_model, cap = capacity;
  for (int l = 0; l < cfg_.n_layers; ++l)
    for (int i = 0; i < D; ++i) {
      const long src = static_cast<long>(seqs[i]) * kept_T_, dst = i * cap;
      dec_k_[l].middleRows(dst, prefix) = kept_k_[l].middleRows(src, prefix);
      dec_v_[l].middleRows(dst, prefix) = kept_v_[l].middleRows(src, prefix);
      // Column t of row i*C + c: key t's component c.
      dec_keys_t_[l].block(i * C, 0, C, prefix) =
          kept_k_[l].middleRows(src, prefix).transpose();
    }
  dec_T_ = prefix;
}

// One block over the n new rows x [B*n, C] (positions t0..t0+n of each sequence), in place: the
// forward of BlockForward, with keys and values of rows < t0 taken from the decode cache.
template <typename S>
void Transformer<S>::DecodeBlock(int l, Mat<S>& x, int t0, int n) {
  auto& c = dec_c_;
  const int B = dec_B_, T = t0 + n, H = cfg_.n_heads, D = cfg_.HeadDim();
  const long C = cfg_.d_model, cap = dec_cap_;
  BlockQkv(l, x, c, /*split=*/false);  // [B*n, 3C]
  for (int b = 0; b < B; ++b)
    for (int r = 0; r < n; ++r) {
      const long src = static_cast<long>(b) * n + r, dst = b * cap + t0 + r;
      dec_q_.row(dst) = c.qkv.row(src).head(C);
      dec_k_[l].row(dst) = c.qkv.row(src).segment(C, C);
      dec_v_[l].row(dst) = c.qkv.row(src).tail(C);
    }
  const Mat<S>* keys = &dec_k_[l];
  const Mat<S>* keys_t = &dec_keys_t_[l];
  if (enc_->Uses(kSiteQKTransform) && !enc_->QKTransformDependsOnOtherPositions()) {
    // The cached keys stay transformed: only the new rows are (RoPE: O(n) a step, not O(T)).
    ApplyQKTransform(l, {{&dec_q_, true}, {&dec_k_[l], false}}, B, T, cap, dec_pos_, false, t0);
  } else if (enc_->Uses(kSiteQKTransform)) {
    // Every key transformed again from the raw cache, as the transform of a row may have moved.
    for (int b = 0; b < B; ++b) dec_kt_.middleRows(b * cap, T) = dec_k_[l].middleRows(b * cap, T);
    ApplyQKTransform(l, {{&dec_q_, true}, {&dec_kt_, false}}, B, T, cap, dec_pos_, false);
    keys = &dec_kt_;
    keys_t = nullptr;  // every key moved: transposed per step by the attention instead
  }
  if (keys_t != nullptr) {
    // The new keys into the transposed cache (column t of row b*C + c: key t's component c).
    Mat<S>& kt = dec_keys_t_[l];
    for (int b = 0; b < B; ++b)
      for (int r = 0; r < n; ++r) {
        const S* key = keys->data() + (b * cap + t0 + r) * C;
        for (long ch = 0; ch < C; ++ch) kt(b * C + ch, t0 + r) = key[ch];
      }
  }
  AttentionShape sh{B, T, H, D, t0, dec_cap_};
  AttentionForward(dec_q_, *keys, dec_v_[l], sh, dec_pos_, ActivePattern(), *enc_, l, false, c.attn,
                   dec_att_, keys_t);
  Resize(c.att, static_cast<long>(B) * n, C);
  for (int b = 0; b < B; ++b)
    c.att.middleRows(static_cast<long>(b) * n, n) = dec_att_.middleRows(b * cap + t0, n);
  BlockAfterAttention(l, x, c, x, false);
}

template <typename S>
void Transformer<S>::DecodeAppend(const std::vector<int>& tokens, int n, Mat<S>& logits) {
  const PrecisionScope precision(cfg_.precision);
  const int B = dec_B_, t0 = dec_T_;
  LEXP_CHECK(B > 0 && n > 0 && t0 + n <= dec_cap_, "decode: beyond the capacity of DecodeStart");
  LEXP_CHECK(static_cast<long>(tokens.size()) == static_cast<long>(B) * n,
             "decode: tokens size is not B*n");
  dec_T_ = t0 + n;
  dec_pos_.assign(dec_pos_all_.begin(), dec_pos_all_.begin() + dec_T_);
  if (dec_recompute_) {
    const int T = dec_T_, V = cfg_.vocab;
    dec_prefix_.resize(static_cast<size_t>(B) * T);
    for (int b = 0; b < B; ++b) {
      std::copy(tokens.begin() + static_cast<long>(b) * n,
                tokens.begin() + static_cast<long>(b + 1) * n,
                dec_tokens_.begin() + static_cast<long>(b) * dec_cap_ + t0);
      std::copy(dec_tokens_.begin() + static_cast<long>(b) * dec_cap_,
                dec_tokens_.begin() + static_cast<long>(b) * dec_cap_ + T,
                dec_prefix_.begin() + static_cast<long>(b) * T);
    }
    Forward(dec_prefix_, B, T, dec_pos_, false, false, dec_logits_);
    Resize(logits, static_cast<long>(B) * n, V);
    for (int b = 0; b < B; ++b)
      logits.middleRows(static_cast<long>(b) * n, n) =
          dec_logits_.middleRows(static_cast<long>(b) * T + t0, n);
    return;
  }
  enc_->Prepare(dec_pos_, ActivePattern().MaxDistance(PositionSpan(dec_pos_)));
  EmbeddingForward(tokens, p_.tok_emb, dec_x_);
  if (enc_->Uses(kSiteEmbedding)) {
    dec_pos_new_.assign(dec_pos_.begin() + t0, dec_pos_.end());
    enc_->AddEmbedding(dec_pos_new_, tokens, B, dec_x_);
  }
  for (int l = 0; l < cfg_.n_layers; ++l) DecodeBlock(l, dec_x_, t0, n);
  LayerNormForward(dec_x_, p_.ln_f, dec_y_, dec_lnf_);
  LinearForward(dec_y_, p_.head, logits);
}

template <typename S>
void Transformer<S>::DecodeKeep(const std::vector<int>& keep) {
  const int B = dec_B_;
  LEXP_CHECK(!keep.empty(), "decode: DecodeKeep needs at least one sequence to keep");
  for (size_t i = 0; i < keep.size(); ++i)
    LEXP_CHECK(keep[i] >= 0 && keep[i] < B && (i == 0 || keep[i] > keep[i - 1]),
               "decode: DecodeKeep takes increasing indices of the decoding batch");
  const int kept = static_cast<int>(keep.size());
  if (kept == B) return;
  const long cap = dec_cap_, T = dec_T_, C = cfg_.d_model;
  // Moves the block [b*stride, b*stride + rows) x [0, cols) to row i*stride for the kept b (i <= b:
  // in place), then drops the rows of the others. Only the decoded part (T positions) is moved.
  auto compact = [&](Mat<S>& m, long stride, long rows, long cols) {
    if (m.rows() == 0) return;
    for (int i = 0; i < kept; ++i)
      if (keep[i] != i)
        m.block(i * stride, 0, rows, cols) = m.block(keep[i] * stride, 0, rows, cols);
    m.conservativeResize(kept * stride, Eigen::NoChange);
  };
  dec_B_ = kept;
  if (dec_recompute_) {
    for (int i = 0; i < kept; ++i)
      std::copy(dec_tokens_.begin() + keep[i] * cap, dec_tokens_.begin() + keep[i] * cap + T,
                dec_tokens_.begin() + i * cap);
    dec_tokens_.resize(static_cast<size_t>(kept) * cap);
    return;
  }
  for (int l = 0; l < cfg_.n_layers; ++l) {
    compact(dec_k_[l], cap, T, C);
    compact(dec_v_[l], cap, T, C);
    compact(dec_keys_t_[l], C, C, T);
  }
  compact(dec_q_, cap, T, C);
  compact(dec_kt_, cap, T, C);
  compact(dec_att_, cap, T, C);
}

template bool Transformer<float>::DecodingRecomputesPrefix() const;
template void Transformer<float>::DecodeStart(int B, int capacity, const std::vector<double>& pos);
template void Transformer<float>::DecodeBlock(int l, Mat<float>& x, int t0, int n);
template void Transformer<float>::DecodeAppend(
    const std::vector<int>& tokens, int n, Mat<float>& logits);
template void Transformer<float>::DecodeKeep(const std::vector<int>& keep);
template bool Transformer<float>::CanDecodeFromForward() const;
template void Transformer<float>::DecodeStartFromForward(const std::vector<int>& seqs, int prefix,
                                                       int capacity,
                                                       const std::vector<double>& pos);
template bool Transformer<double>::DecodingRecomputesPrefix() const;
template void Transformer<double>::DecodeStart(int B, int capacity, const std::vector<double>& pos);
template void Transformer<double>::DecodeBlock(int l, Mat<double>& x, int t0, int n);
template void Transformer<double>::DecodeAppend(
    const std::vector<int>& tokens, int n, Mat<double>& logits);
template void Transformer<double>::DecodeKeep(const std::vector<int>& keep);
template bool Transformer<double>::CanDecodeFromForward() const;
template void Transformer<double>::DecodeStartFromForward(const std::vector<int>& seqs, int prefix,
                                                       int capacity,
                                                       const std::vector<double>& pos);

}  // namespace lexp
