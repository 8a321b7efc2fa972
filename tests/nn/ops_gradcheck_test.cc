// Finite-difference gradient checks (double) for every op of nn/ and for the whole transformer.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "nn/model/transformer.h"
#include "nn/ops/attention.h"
#include "nn/ops/cross_entropy.h"
#include "nn/ops/embedding.h"
#include "nn/ops/gelu.h"
#include "nn/ops/layernorm.h"
#include "nn/ops/linear.h"
#include "pe/patterns.h"
#include "pe/registry.h"
#include "tests/testing/attention_gradcheck.h"
#include "tests/testing/gradcheck.h"

namespace lexp {
namespace {

using testing::AttentionGradCase;
using testing::CheckAttentionGradients;
using testing::CheckGradients;
using testing::CopyGrads;
using testing::FillNormal;

// Options for heads of width 4 (rope_partial's default 25% would rotate no pair).
std::map<std::string, std::string> TinyOptions(const std::string& encoding) {
  if (encoding == "rope_partial") return {{"fraction", "0.5"}};
  if (encoding == "da") return {{"init_w", "0.5"}};
  if (encoding == "shaw") return {{"clip", "3"}};  // saturates inside the tiny sequences
  // Rows for the attention cases' 80 positions after an offset of up to 2.
  if (encoding == "abacus") return {{"rows", "84"}, {"max_k", "2"}};
  if (encoding == "position_coupling") return {{"rows", "84"}, {"max_start", "2"}};
  // Positions partly past the table, and a table that is not zero (zero: no gradient reaches
  // the gates).
  if (encoding == "cope") return {{"npos", "24"}, {"init_std", "0.5"}};
  if (encoding == "dape") return {{"width", "4"}};
  return {};
}

// Loss = sum(out * W) with fixed random W, so d_out = W.
double Project(const MatD& out, const MatD& w) { return out.cwiseProduct(w).sum(); }

TEST(GradCheck, Linear) {
  Rng rng(1);
  MatD x(5, 4), d_x;
  LinearParams<double> p, g;
  p.w.resize(4, 3);
  p.b.resize(3);
  FillNormal(x, rng);
  FillNormal(p.w, rng);
  FillNormal(p.b, rng);
  MatD w(5, 3);
  FillNormal(w, rng);
  auto loss = [&] {
    MatD y;
    LinearForward(x, p, y);
    return Project(y, w);
  };
  g.w.setZero(4, 3);
  g.b.setZero(3);
  d_x.setZero(5, 4);
  LinearBackward(x, p, w, &d_x, g);
  std::vector<ParamRef<double>> params = {{"x", x.data(), d_x.data(), x.size()},
                                          {"w", p.w.data(), g.w.data(), p.w.size()},
                                          {"b", p.b.data(), g.b.data(), p.b.size()}};
  EXPECT_EQ(CheckGradients(loss, params, CopyGrads(params), 100).checked, 20 + 12 + 3);
}

TEST(GradCheck, LayerNorm) {
  Rng rng(2);
  MatD x(4, 6), d_x, w(4, 6);
  LayerNormParams<double> p, g;
  p.g.resize(6);
  p.b.resize(6);
  FillNormal(x, rng);
  FillNormal(p.g, rng);
  FillNormal(p.b, rng);
  FillNormal(w, rng);
  LayerNormCache<double> c;
  auto loss = [&] {
    MatD y;
    LayerNormCache<double> cc;
    LayerNormForward(x, p, y, cc);
    return Project(y, w);
  };
  MatD y;
  LayerNormForward(x, p, y, c);
  g.g.setZero(6);
  g.b.setZero(6);
  d_x.setZero(4, 6);
  LayerNormBackward(p, c, w, d_x, g);
  std::vector<ParamRef<double>> params = {{"x", x.data(), d_x.data(), x.size()},
                                          {"g", p.g.data(), g.g.data(), p.g.size()},
                                          {"b", p.b.data(), g.b.data(), p.b.size()}};
  CheckGradients(loss, params, CopyGrads(params), 100);
}

TEST(GradCheck, Gelu) {
  Rng rng(3);
  MatD x(3, 7), w(3, 7), d_x = MatD::Zero(3, 7);
  FillNormal(x, rng, 2.0);
  FillNormal(w, rng);
  auto loss = [&] {
    MatD y;
    GeluForward(x, y);
    return Project(y, w);
  };
  GeluBackward(x, w, d_x);
  std::vector<ParamRef<double>> params = {{"x", x.data(), d_x.data(), x.size()}};
  CheckGradients(loss, params, CopyGrads(params), 100);
}

TEST(GradCheck, Embedding) {
  Rng rng(4);
  MatD table(5, 3), d_table = MatD::Zero(5, 3), w(6, 3);
  FillNormal(table, rng);
  FillNormal(w, rng);
  const std::vector<int> tokens = {0, 3, 3, 1, 4, 0};
  auto loss = [&] {
    MatD x;
    EmbeddingForward(tokens, table, x);
    return Project(x, w);
  };
  EmbeddingBackward(tokens, w, d_table);
  std::vector<ParamRef<double>> params = {{"table", table.data(), d_table.data(), table.size()}};
  CheckGradients(loss, params, CopyGrads(params), 100);
}

TEST(GradCheck, CrossEntropyMasked) {
  Rng rng(5);
  MatD logits(6, 4), d_logits;
  FillNormal(logits, rng);
  const std::vector<int> targets = {1, 0, 3, 2, 2, 1};
  const std::vector<uint8_t> mask = {0, 1, 1, 0, 1, 1};
  auto loss = [&] {
    return CrossEntropyForwardBackward<double>(logits, targets, mask, nullptr, nullptr, nullptr)
        .MeanLoss();
  };
  CrossEntropyForwardBackward<double>(logits, targets, mask, &d_logits, nullptr, nullptr);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(d_logits(0, c), 0.0) << "unmasked rows get no gradient";
  std::vector<ParamRef<double>> params = {
      {"logits", logits.data(), d_logits.data(), logits.size()}};
  CheckGradients(loss, params, CopyGrads(params), 100);
}

// Attention with each built-in encoding, causal and bidirectional, through q, k, v (and T5's
// table).
struct AttentionCase {
  std::string encoding;
  bool causal;
};

void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << c.encoding << (c.causal ? " causal" : " bidirectional");
}

EncodingShape AttentionCaseShape(bool causal) {
  return EncodingShape{8, 2, 1, causal, 80, 42, 7, 3};  // tokens 0..2 digits (abacus)
}

// One encoding's attention under `pattern` against finite differences: 2 sequences of T = 70
// (crossing the 64-query block boundary), 2 heads of width 4, through q, k, v (and the encoding's
// own parameters).
void CheckAttentionOf(const std::string& encoding, bool causal, const AttentionPattern& pattern,
                      uint64_t seed) {
  // FIRE's threshold 42 / 4 = 10.5: queries past it normalise by their own position, and no
  // integer position sits on the kink of max(L, p).
  auto enc = CreateEncoding<double>(encoding, TinyOptions(encoding), AttentionCaseShape(causal));
  Rng pe_rng(9);
  enc->Init(pe_rng);
  AttentionGradCase gc;
  gc.shape = AttentionShape{2, 70, 2, 4};
  gc.pattern = &pattern;
  gc.encoding = enc.get();
  gc.pos.resize(70);
  std::iota(gc.pos.begin(), gc.pos.end(), 0.0);
  gc.transform_qk = true;
  gc.max_per_tensor = 60;
  gc.seed = seed;
  CheckAttentionGradients(gc);
}

class AttentionGradCheck : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionGradCheck, MatchesFiniteDifferences) {
  const auto& tc = GetParam();
  CheckAttentionOf(tc.encoding, tc.causal, AttentionPattern(tc.causal), 6);
}

// Every registered encoding, causal and bidirectional; an encoding that refuses the bidirectional
// layout (xpos, fire: keys ahead would be amplified or mis-normalised; abacus: the answer slots
// are blanks, not digits) is checked causal only.

std::vector<AttentionCase> AttentionCases() {
  std::vector<AttentionCase> out;
  for (const auto& info : ListEncodings())
    for (const bool causal : {true, false}) {
      if (!causal) {
        try {
          CreateEncoding<double>(info.name, TinyOptions(info.name), AttentionCaseShape(false));
        } catch (const InputError&) {
          continue;
        }
      }
      out.push_back({info.name, causal});
    }
  return out;
}

TEST(AttentionGradCheckCases, EveryRegisteredEncodingHasOneAndOnlyDecoderOnesLackTheEncoderCase) {
  const auto cases = AttentionCases();
  for (const auto& info : ListEncodings()) {
    const bool causal = std::any_of(cases.begin(), cases.end(), [&](const AttentionCase& c) {
      return c.encoding == info.name && c.causal;
    });
    const bool bidirectional = std::any_of(cases.begin(), cases.end(), [&](const AttentionCase& c) {
      return c.encoding == info.name && !c.causal;
    });
    EXPECT_TRUE(causal) << info.name;
    EXPECT_EQ(bidirectional, info.name != "xpos" && info.name != "fire" && !info.reads_digits)
        << info.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, AttentionGradCheck, ::testing::ValuesIn(AttentionCases()),
                         [](const auto& param_info) {
                           return param_info.param.encoding +
                                  (param_info.param.causal ? "_causal" : "_bidirectional");
                         });

// Attention under every sparse pattern (per-head masks for dilated and shifted_sparse, remapped
// distances for lambda and sinks) against finite differences of its own forward pass. The
// backward reads the stored probabilities, zero outside each head's mask, and the pattern's
// distances: a backward that took lambda's or sinks' distances as plain fails here (checked by
// mutation). T = 70 crosses the 64-query block boundary and holds several groups, windows and
// segments. (Recurrence reads its memory without a gradient by design:
// tests/nn/segment_recurrence_test.cc.)
struct PatternCase {
  std::string name;
  PatternConfig config;
  std::string encoding;
};

void PrintTo(const PatternCase& c, std::ostream* os) { *os << c.name << " " << c.encoding; }

class PatternGradCheck : public ::testing::TestWithParam<PatternCase> {};

TEST_P(PatternGradCheck, MatchesFiniteDifferences) {
  const auto& tc = GetParam();
  PatternConfig config = tc.config;
  config.heads = 2;
  CheckAttentionOf(tc.encoding, /*causal=*/true, *CreatePattern(config), 7);
}

std::vector<PatternCase> PatternCases() {
  std::vector<PatternCase> out;
  auto add = [&](const std::string& name, PatternConfig c) {
    c.name = name;
    for (const char* encoding : {"rope", "alibi", "dape"}) out.push_back({name, c, encoding});
  };
  PatternConfig c;
  c.window = 9;
  add("sliding_window", c);
  c.window = 8;  // bca's blocks are even
  add("bca", c);
  c.global = 3;
  c.window = 10;
  add("lambda", c);
  add("sinks", c);
  PatternConfig dilated;
  dilated.segments = {8, 32};
  dilated.dilations = {1, 2};
  add("dilated", dilated);
  PatternConfig s2;
  s2.ratio = 0.25;
  add("shifted_sparse", s2);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Patterns, PatternGradCheck, ::testing::ValuesIn(PatternCases()),
                         [](const auto& param_info) {
                           return param_info.param.name + "_" + param_info.param.encoding;
                         });

// The gradient with respect to the embedded input (used by the gradient receptive field): with
// every token of a sequence distinct, moving row `token` of the embedding table moves exactly the
// input of that one position, so the central difference of the loss along tok_emb[token][c] must
// equal InputGradient() at that position and column.
TEST(GradCheck, InputGradientMatchesFiniteDifferences) {
  for (const bool causal : {true, false}) {
    ModelConfig cfg;
    cfg.vocab = 12;
    cfg.d_model = 8;
    cfg.n_heads = 2;
    cfg.n_layers = 2;
    cfg.d_ff = 12;
    cfg.causal = causal;
    EncodingShape es{cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.causal, 16, 6, cfg.vocab};
    auto enc = CreateEncoding<double>("rope", {}, es);
    Transformer<double> model(cfg, enc.get());
    Rng rng(5);
    model.Init(rng);
    const int B = 1, T = 6;
    const std::vector<int> tokens = {3, 7, 1, 10, 4, 8};  // distinct
    std::vector<int> targets = {1, 2, 3, 4, 5, 6};
    std::vector<uint8_t> mask = {0, 0, 0, 0, 0, 1};  // the last position only
    std::vector<double> pos;
    enc->PositionIds(T, false, rng, pos);
    MatD logits, d_logits;
    model.Forward(tokens, B, T, pos, true, false, logits);
    CrossEntropyForwardBackward<double>(logits, targets, mask, &d_logits, nullptr, nullptr);
    model.Backward(tokens, d_logits);
    const MatD g = model.InputGradient();
    ASSERT_EQ(g.rows(), T);
    auto params = model.Parameters();
    double* emb = params[0].value;  // tok_emb [V, C]
    ASSERT_EQ(params[0].name, "tok_emb");
    auto loss = [&] {
      MatD z;
      model.Forward(tokens, B, T, pos, false, false, z);
      return CrossEntropyForwardBackward<double>(z, targets, mask, nullptr, nullptr, nullptr)
          .MeanLoss();
    };
    for (int j = 0; j < T; ++j)
      for (int c = 0; c < cfg.d_model; ++c) {
        double& w = emb[tokens[j] * cfg.d_model + c];
        const double keep = w, h = 1e-5;
        w = keep + h;
        const double up = loss();
        w = keep - h;
        const double down = loss();
        w = keep;
        const double numeric = (up - down) / (2 * h);
        EXPECT_NEAR(g(j, c), numeric, 1e-7 + 1e-5 * std::abs(numeric))
            << (causal ? "causal" : "encoder") << " position " << j << " column " << c;
      }
  }
}

// The whole model, every parameter tensor, for each encoding and both LayerNorm placements.
struct ModelCase {
  std::string encoding;
  bool pre_ln;
  bool causal;
};

void PrintTo(const ModelCase& c, std::ostream* os) {
  *os << c.encoding << (c.pre_ln ? " pre-LN" : " post-LN") << (c.causal ? " causal" : " encoder");
}

class ModelGradCheck : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelGradCheck, EveryParameterMatchesFiniteDifferences) {
  const auto& tc = GetParam();
  ModelConfig cfg;
  cfg.vocab = 7;
  cfg.d_model = 8;
  cfg.n_heads = 2;
  cfg.n_layers = 2;
  cfg.d_ff = 12;
  cfg.pre_ln = tc.pre_ln;
  cfg.causal = tc.causal;
  // Training length 6: FIRE's threshold 1.5 lies between positions (max(L, p) has a kink at L = p).
  // Tokens below vocab / 2 are digits for the encodings that number them (abacus).
  EncodingShape es{cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.causal, 16, 6, cfg.vocab,
                   cfg.vocab / 2};
  auto enc = CreateEncoding<double>(tc.encoding, TinyOptions(tc.encoding), es);
  Transformer<double> model(cfg, enc.get());
  Rng rng(11);
  model.Init(rng);
  const int B = 2, T = 5;
  std::vector<int> tokens(B * T), targets(B * T);
  std::vector<uint8_t> mask(B * T);
  for (int i = 0; i < B * T; ++i) {
    tokens[i] = static_cast<int>(rng.UniformInt(0, 6));
    targets[i] = static_cast<int>(rng.UniformInt(0, 6));
    mask[i] = (i % 3 != 0);
  }
  std::vector<double> pos;
  enc->PositionIds(T, true, rng, pos);
  auto loss = [&] {
    MatD logits;
    model.Forward(tokens, B, T, pos, false, false, logits);
    return CrossEntropyForwardBackward<double>(logits, targets, mask, nullptr, nullptr, nullptr)
        .MeanLoss();
  };
  MatD logits, d_logits;
  model.ZeroGrad();
  model.Forward(tokens, B, T, pos, true, false, logits);
  CrossEntropyForwardBackward<double>(logits, targets, mask, &d_logits, nullptr, nullptr);
  model.Backward(tokens, d_logits);
  auto params = model.Parameters();
  const auto res = CheckGradients(loss, params, CopyGrads(params), 6);
  EXPECT_GT(res.checked, 50);
}

// Cases chosen for what they exercise (both LayerNorm placements, encoder and causal layouts),
// then every other registered encoding pre-LN and causal: a new encoding gets its gradient check
// from the registry without an edit here.
std::vector<ModelCase> ModelCases() {
  std::vector<ModelCase> cases = {ModelCase{"nope", true, true},
                                  ModelCase{"sinusoidal", true, true},
                                  ModelCase{"learned", true, true},
                                  ModelCase{"alibi", true, true},
                                  ModelCase{"rope", true, true},
                                  ModelCase{"t5", true, true},
                                  ModelCase{"rope", false, true},
                                  ModelCase{"t5", true, false},
                                  ModelCase{"rope_partial", true, true},
                                  ModelCase{"xpos", true, true},
                                  ModelCase{"kerple_log", true, true},
                                  ModelCase{"kerple_power", true, false},
                                  ModelCase{"sandwich", true, true},
                                  ModelCase{"fire", true, true},
                                  ModelCase{"learned", false, false},
                                  ModelCase{"shaw", true, true},
                                  ModelCase{"shaw", true, false},
                                  ModelCase{"transformer_xl", true, true},
                                  ModelCase{"transformer_xl", false, false},
                                  ModelCase{"tupe", true, true},
                                  ModelCase{"tupe", false, false},
                                  ModelCase{"da", true, true},
                                  ModelCase{"da", true, false},
                                  ModelCase{"cape", true, true},
                                  ModelCase{"random_shift", true, true},
                                  ModelCase{"complex_order", true, true},
                                  ModelCase{"complex_order", false, false},
                                  ModelCase{"floater", true, true},
                                  ModelCase{"floater", true, false}};
  for (const auto& info : ListEncodings()) {
    const bool listed = std::any_of(cases.begin(), cases.end(),
                                    [&](const ModelCase& c) { return c.encoding == info.name; });
    if (!listed) cases.push_back({info.name, true, true});
  }
  return cases;
}

TEST(ModelGradCheckCases, EveryRegisteredEncodingHasOne) {
  const auto cases = ModelCases();
  for (const auto& info : ListEncodings())
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const ModelCase& c) {
      return c.encoding == info.name;
    })) << info.name;
}

INSTANTIATE_TEST_SUITE_P(Encodings, ModelGradCheck, ::testing::ValuesIn(ModelCases()),
                         [](const auto& param_info) {
                           return param_info.param.encoding +
                                  (param_info.param.pre_ln ? "_preln" : "_postln") +
                                  (param_info.param.causal ? "_causal" : "_encoder");
                         });

}  // namespace
}  // namespace lexp
