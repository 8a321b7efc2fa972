// Greedy decoding with the end token (Newman et al. 2020): incremental decoding computes
// what a full forward pass computes, for every encoding; a hand-set model that answers right but
// never stops is invisible to teacher forcing and scores no exact match when it writes its answer;
// a trained copy model writes what teacher forcing predicts for as long as it writes the target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "experiments/core/assembled_model.h"
#include "experiments/core/evaluation.h"
#include "experiments/core/recipe.h"
#include "experiments/core/sequence_layout.h"
#include "experiments/training/trainer.h"
#include "nn/model/transformer.h"
#include "pe/patterns.h"
#include "pe/registry.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

// The configuration of a decoder of L layers, width C, H heads over V tokens.
ModelConfig SmallDecoder(int V, int C, int H, int L) {
  ModelConfig mc;
  mc.vocab = V;
  mc.d_model = C;
  mc.n_heads = H;
  mc.n_layers = L;
  return mc;
}

// Logits of incremental decoding (a prompt of P tokens, then one token per step) against a full
// forward pass over the same tokens and positions, in double: equal to rounding for every encoding
// whose site 1-3 tables do not depend on the sequence length (those that do are below).
class DecodeEqualsForward : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeEqualsForward, ForEveryEncoding) {
  const std::string name = GetParam();
  constexpr int B = 2, T = 13, P = 5, C = 16, H = 2, L = 2, V = 11;
  std::map<std::string, std::string> options;
  if (name == "rope_partial") options["fraction"] = "0.5";
  auto enc = CreateEncoding<double>(name, options, EncodingShape{C, H, L, true, 64, 8, V, V / 2});
  Transformer<double> model(SmallDecoder(V, C, H, L), enc.get());
  Rng rng(3);
  model.Init(rng);
  std::vector<int> tokens(B * T);
  for (int& t : tokens) t = static_cast<int>(rng.UniformInt(0, V - 1));
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = t;

  for (const char* pattern : {"full", "sliding_window", "lambda"}) {
    if (std::string(pattern) == "lambda" && !FindEncoding(name).cannot_remap.empty()) continue;
    PatternConfig pc;
    pc.name = pattern;
    pc.window = 4;
    pc.global = 2;
    pc.limit = 6;
    const auto pat = CreatePattern(pc);
    model.set_pattern(pat.get());
    MatD full;
    model.Forward(tokens, B, T, pos, false, false, full);  // [B*T, V]
    model.DecodeStart(B, T, pos);
    std::vector<int> prompt(B * P);
    for (int s = 0; s < B; ++s)
      std::copy(tokens.begin() + s * T, tokens.begin() + s * T + P, prompt.begin() + s * P);
    MatD step;
    model.DecodeAppend(prompt, P, step);
    for (int s = 0; s < B; ++s)
      for (int r = 0; r < P; ++r)
        for (int v = 0; v < V; ++v)
          ASSERT_NEAR(step(s * P + r, v), full(s * T + r, v), 1e-10)
              << pattern << " seq " << s << " row " << r;
    for (int t = P; t < T; ++t) {
      std::vector<int> next(B);
      for (int s = 0; s < B; ++s) next[s] = tokens[s * T + t];
      model.DecodeAppend(next, 1, step);
      for (int s = 0; s < B; ++s)
        for (int v = 0; v < V; ++v)
          ASSERT_NEAR(step(s, v), full(s * T + t, v), 1e-10)
              << pattern << " seq " << s << " t " << t;
    }
    EXPECT_EQ(model.DecodedLength(), T);
  }
}

// Sequences dropped from the decoding batch (DecodeKeep, as greedy decoding drops the finished
// ones) leave the others' logits what the whole batch gives them, to float rounding (a product's
// kernel depends on its number of rows): for cached keys (rope), keys transformed again at every
// step (xpos) and a prefix recomputed at every step (dynamic_ntk). The sequences are dropped after
// the prompt and again two steps later.
TEST(Decode, DroppingFinishedSequencesLeavesTheOthersLogitsUnchanged) {
  constexpr int B = 6, T = 14, P = 4, C = 16, H = 2, L = 2, V = 9;
  struct Case {
    std::string encoding;
    std::map<std::string, std::string> options;
  };
  for (const Case& tc : {Case{"rope", {}}, Case{"xpos", {}},
                         Case{"rope", {{"scaling", "dynamic_ntk"}, {"factor", "2"}}}}) {
    auto enc = CreateEncoding<float>(tc.encoding, tc.options, EncodingShape{C, H, L, true, 64, 6, V});
    Transformer<float> whole(SmallDecoder(V, C, H, L), enc.get());
    Transformer<float> part(SmallDecoder(V, C, H, L), enc.get());
    Rng init_whole(5), init_part(5), rng(6);
    whole.Init(init_whole);
    part.Init(init_part);
    std::vector<int> tokens(B * T);
    for (int& t : tokens) t = static_cast<int>(rng.UniformInt(0, V - 1));
    std::vector<double> pos(T);
    for (int t = 0; t < T; ++t) pos[t] = t;
    whole.DecodeStart(B, T, pos);
    part.DecodeStart(B, T, pos);
    std::vector<int> alive(B);  // part's batch: indices into the whole batch
    for (int s = 0; s < B; ++s) alive[s] = s;
    MatF from_whole, from_part;
    for (int t = 0; t < T; t += (t == 0 ? P : 1)) {
      const int n = t == 0 ? P : 1;
      if (t == P || t == P + 2) {
        const std::vector<int> keep = t == P ? std::vector<int>{1, 2, 4, 5} : std::vector<int>{0, 3};
        std::vector<int> next_alive;
        for (int i : keep) next_alive.push_back(alive[i]);
        part.DecodeKeep(keep);
        alive = next_alive;
        ASSERT_EQ(part.DecodedSequences(), static_cast<int>(alive.size()));
      }
      std::vector<int> all, some;
      for (int s = 0; s < B; ++s)
        all.insert(all.end(), tokens.begin() + s * T + t, tokens.begin() + s * T + t + n);
      for (int s : alive)
        some.insert(some.end(), tokens.begin() + s * T + t, tokens.begin() + s * T + t + n);
      whole.DecodeAppend(all, n, from_whole);
      part.DecodeAppend(some, n, from_part);
      for (size_t i = 0; i < alive.size(); ++i)
        for (int r = 0; r < n; ++r)
          for (int v = 0; v < V; ++v)
            ASSERT_NEAR(from_part(static_cast<long>(i) * n + r, v),
                        from_whole(static_cast<long>(alive[i]) * n + r, v), 2e-5)
                << tc.encoding << " sequence " << alive[i] << " t " << t + r;
    }
  }
}

// Where the tables of a position depend on the length (RoPE's dynamic rules) or the keys a query
// sees do (S2-Attn's groups), each step recomputes the prefix: its logits are those of a forward
// pass over the prefix at that step, not over the final sequence.
TEST(Decode, LengthDependentTablesRecomputeTheWholePrefixAtEveryStep) {
  constexpr int B = 2, T = 12, P = 4, C = 16, H = 2, L = 2, V = 9;
  struct Case {
    std::string encoding;
    std::map<std::string, std::string> options;
    std::string pattern;
  };
  for (const Case& tc :
       {Case{"rope", {{"scaling", "dynamic_ntk"}, {"factor", "2"}}, "full"},
        Case{"rope", {{"scaling", "dynamic_yarn"}}, "full"}, Case{"alibi", {}, "shifted_sparse"}}) {
    auto enc =
        CreateEncoding<double>(tc.encoding, tc.options, EncodingShape{C, H, L, true, 64, 6, V});
    Transformer<double> model(SmallDecoder(V, C, H, L), enc.get());
    Rng rng(4);
    model.Init(rng);
    PatternConfig pc;
    pc.name = tc.pattern;
    pc.heads = H;
    pc.ratio = 0.5;
    const auto pat = CreatePattern(pc);
    model.set_pattern(pat.get());
    EXPECT_TRUE(enc->TablesDependOnLength() || (pat && pat->DependsOnLength())) << tc.encoding;
    std::vector<int> tokens(B * T);
    for (int& t : tokens) t = static_cast<int>(rng.UniformInt(0, V - 1));
    std::vector<double> pos(T);
    for (int t = 0; t < T; ++t) pos[t] = t;
    model.DecodeStart(B, T, pos);
    MatD step;
    for (int t = 0; t < T; t += (t == 0 ? P : 1)) {
      const int n = t == 0 ? P : 1;
      std::vector<int> next;
      for (int s = 0; s < B; ++s)
        next.insert(next.end(), tokens.begin() + s * T + t, tokens.begin() + s * T + t + n);
      model.DecodeAppend(next, n, step);
      // The prefix of length t + n through a full forward pass.
      std::vector<int> prefix;
      for (int s = 0; s < B; ++s)
        prefix.insert(prefix.end(), tokens.begin() + s * T, tokens.begin() + s * T + t + n);
      MatD full;
      model.Forward(prefix, B, t + n, std::vector<double>(pos.begin(), pos.begin() + t + n), false,
                    false, full);
      for (int s = 0; s < B; ++s)
        for (int r = 0; r < n; ++r)
          for (int v = 0; v < V; ++v)
            ASSERT_NEAR(step(s * n + r, v), full(s * (t + n) + t + r, v), 1e-12)
                << tc.encoding << " " << tc.pattern << " t " << t;
    }
  }
}

std::vector<std::string> CausalEncodings() {
  std::vector<std::string> out;
  for (const auto& e : ListEncodings()) out.push_back(e.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, DecodeEqualsForward, ::testing::ValuesIn(CausalEncodings()),
                         [](const auto& param_info) { return param_info.param; });

// Decoding started from a teacher-forced pass's keys and values (DecodeStartFromForward, as greedy
// evaluation starts after the pass) gives every later position the logits of a full forward pass,
// for every encoding that can (in double, to rounding); the others say why they cannot. Negative
// control: keys kept from a pass over other tokens give other logits, so the kept keys are what
// the decoding reads.
class DecodeFromForward : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeFromForward, ForEveryEncoding) {
  const std::string name = GetParam();
  constexpr int B = 3, T = 13, prefix = 6, C = 16, H = 2, L = 2, V = 11;
  std::map<std::string, std::string> options;
  if (name == "rope_partial") options["fraction"] = "0.5";
  auto enc = CreateEncoding<double>(name, options, EncodingShape{C, H, L, true, 64, 8, V, V / 2});
  Transformer<double> model(SmallDecoder(V, C, H, L), enc.get());
  if (!model.CanDecodeFromForward()) {
    EXPECT_TRUE(model.DecodingRecomputesPrefix() || enc->QKTransformDependsOnOtherPositions())
        << name;
    return;
  }
  Rng rng(7);
  model.Init(rng);
  std::vector<int> tokens(B * T), other(B * T);
  for (int& t : tokens) t = static_cast<int>(rng.UniformInt(0, V - 1));
  for (int& t : other) t = static_cast<int>(rng.UniformInt(0, V - 1));
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = t;
  MatD full, step, unused;
  model.Forward(tokens, B, T, pos, false, false, full);
  const std::vector<int> seqs = {0, 2};
  for (const bool control : {false, true}) {
    model.set_keep_keys_for_decoding(true);
    model.Forward(control ? other : tokens, B, T, pos, false, false, unused);
    model.set_keep_keys_for_decoding(false);
    ASSERT_TRUE(model.KeptKeysOf(B, T)) << name;
    model.DecodeStartFromForward(seqs, prefix, T, pos);
    double largest = 0;
    for (int t = prefix; t < T; ++t) {
      std::vector<int> next;
      for (int s : seqs) next.push_back(tokens[s * T + t]);
      model.DecodeAppend(next, 1, step);
      for (size_t i = 0; i < seqs.size(); ++i)
        for (int v = 0; v < V; ++v) {
          const double d = std::abs(step(static_cast<long>(i), v) - full(seqs[i] * T + t, v));
          largest = std::max(largest, d);
          if (!control) {
            ASSERT_LT(d, 1e-10) << name << " sequence " << seqs[i] << " t " << t;
          }
        }
    }
    if (control) {
      EXPECT_GT(largest, 1e-6) << name << ": the kept keys were not read";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, DecodeFromForward, ::testing::ValuesIn(CausalEncodings()),
                         [](const auto& param_info) { return param_info.param; });

// A model that answers copy_rsc (one token repeated, copied) by attending uniformly to everything
// before it and naming the majority token: every answer token is right, and it never writes the
// end token. Embeddings are small one-hot rows (so the residual is the attention's average),
// values and the output projection are the identity, the MLP is zero, and the head reads the
// symbols only (SEP, BLANK and END get logit 0).
void MakeMajorityModel(AssembledModel& m, int symbols) {
  const int C = m.model->config().d_model, V = m.model->config().vocab;
  for (auto& p : m.model->Parameters()) {
    std::fill(p.value, p.value + p.size, 0.0f);
    const auto ends_with = [&](const std::string& tail) {
      return p.name.size() >= tail.size() &&
             p.name.compare(p.name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (p.name == "tok_emb") {  // [V, C]
      for (int v = 0; v < V; ++v) p.value[static_cast<long>(v) * C + v] = 0.01f;
    } else if (ends_with(".g")) {  // LayerNorm gains
      std::fill(p.value, p.value + p.size, 1.0f);
    } else if (p.name == "layer0.attn.qkv.w") {  // [C, 3C]: q = k = 0, v = identity
      for (int c = 0; c < C; ++c) p.value[static_cast<long>(c) * 3 * C + 2 * C + c] = 1.0f;
    } else if (p.name == "layer0.attn.proj.w") {  // [C, C]
      for (int c = 0; c < C; ++c) p.value[static_cast<long>(c) * C + c] = 1.0f;
    } else if (p.name == "head.w") {  // [C, V]: symbols only
      for (int v = 0; v < symbols; ++v) p.value[static_cast<long>(v) * V + v] = 1.0f;
    }
  }
}

TEST(Greedy, AModelThatNeverEndsIsInvisibleToTeacherForcingAndScoresNoExactMatch) {
  const RecipeConfig c = testing::TinyCopyRecipe(
      {"task.name=copy_rsc", "task.vocab=4", "model.d_model=8", "model.n_heads=1",
       "model.n_layers=1", "model.d_ff=4", "model.encodings=nope", "eval.lengths=3,6"});
  AssembledModel m = AssembleModel(c, "nope");
  const int symbols = m.layout->Sep();  // 4 pool tokens + NEXT
  ASSERT_EQ(m.model->config().vocab, 8);
  MakeMajorityModel(m, symbols);
  for (int n : {3, 6}) {
    LengthStreams st = EvalStreams(1, n);
    LengthStreams st2 = st;
    EvalBuffers buf;
    const EvalRow tf = EvaluateLength(m, n, 16, 8, -1, st.data, st.positions, buf);
    const EvalRow gr =
        EvaluateLength(m, n, 16, 8, -1, st2.data, st2.positions, buf, Decoding::kGreedy);
    // Teacher forcing: the n answer tokens are right, only the end token is missed (the old
    // layout, without it, scored this model 1.0).
    EXPECT_NEAR(tf.token_accuracy * (n + 1), n, 1e-9) << n;
    EXPECT_EQ(tf.exact_match, 0.0);
    // Greedy: it writes the answer, then the same token again up to the cap.
    EXPECT_EQ(gr.exact_match, 0.0) << n;
    EXPECT_EQ(gr.ended, 0.0) << n;
    EXPECT_EQ(gr.written_length, 2.0 * (n + 1)) << n;
    EXPECT_NEAR(gr.token_accuracy * (n + 1), n, 1e-9) << n;
    EXPECT_EQ(gr.teacher_forced_accuracy, tf.token_accuracy);
    EXPECT_EQ(gr.loss, tf.loss) << "the loss stays teacher forced";
    // The clocks the run prints the cost of decoding from: only greedy decoding has its own.
    EXPECT_GT(tf.teacher_forced_seconds, 0.0);
    EXPECT_EQ(tf.greedy_seconds, 0.0);
    EXPECT_GT(gr.teacher_forced_seconds, 0.0);
    EXPECT_GT(gr.greedy_seconds, 0.0);
  }
}

TEST(Greedy, TrainedCopyModelWritesWhatTeacherForcingPredictsWhereTheyAgree) {
  RecipeConfig c =
      testing::TinyCopyRecipe({"model.encodings=alibi", "train.steps=1000", "model.d_model=32",
                               "eval.lengths=4,9", "probe.replay=0"});
  const auto dir = testing::FreshTempDir("greedy_copy");
  RunOptions o;
  o.out_dir = dir.string();
  ASSERT_EQ(TrainAndEvaluate(c, "alibi", o).state, "completed");
  AssembledModel m = AssembleModel(c, "alibi");
  LoadModelWeights(RunFilePath(dir.string(), "alibi"), m.model->Parameters());
  int compared = 0, wrong_written = 0;
  for (int n : {4, 9}) {
    LengthStreams st = EvalStreams(c.seed, n);
    const Batch b = m.layout->MakeBatch(n, 16, st.data);
    EvalBuffers buf;
    m.encoding->PositionIds(b.T, false, st.positions, buf.pos);
    MatF logits;
    m.model->Forward(b.tokens, b.B, b.T, buf.pos, false, false, logits);
    EvalBuffers buf_shortcut = buf;  // its pos: the teacher-forced pass's
    WrittenAnswers w, w_shortcut;
    GreedyWrite(m, b, st.positions, buf, w);
    GreedyWrite(m, b, st.positions, buf_shortcut, w_shortcut, &logits);
    // Reading the prefix from the teacher-forced pass writes what decoding writes.
    EXPECT_EQ(w_shortcut.tokens, w.tokens) << n;
    EXPECT_EQ(w_shortcut.length, w.length) << n;
    EXPECT_EQ(w_shortcut.ended, w.ended) << n;
    EXPECT_EQ(w.from_teacher_forced, 0) << n;
    EXPECT_EQ(w.decoded_sequences, b.B) << n;
    EXPECT_GT(w_shortcut.from_teacher_forced, b.B) << n;
    if (n == 4) {
      EXPECT_LT(w_shortcut.decoded_sequences, b.B / 2) << "in distribution";
    }
    const int P = b.prompt, A = b.T - P + 1;
    for (int s = 0; s < b.B; ++s) {
      // Up to and including the first token written off target, both saw the same prefix.
      for (int k = 0; k < std::min(A, w.length[s]); ++k) {
        Eigen::Index arg = 0;
        logits.row(static_cast<long>(s) * b.T + P - 1 + k).maxCoeff(&arg);
        const int written = w.tokens[s * w.cap + k];
        EXPECT_EQ(written, static_cast<int>(arg)) << "n " << n << " seq " << s << " k " << k;
        ++compared;
        if (written != b.targets[s * b.T + P - 1 + k]) {
          ++wrong_written;
          break;
        }
      }
    }
  }
  EXPECT_GT(compared, 80);
  EXPECT_GT(wrong_written, 0) << "the comparison should reach written mistakes too";
  std::filesystem::remove_all(dir);
}

// Where a row's logits depend on the length (RoPE's dynamic NTK rule), a teacher-forced pass over the
// whole sequence does not give the logits of decoding: nothing is read from it, every sequence is
// decoded, and what is written is what decoding alone writes.
TEST(Greedy, NothingIsReadFromTheTeacherForcedPassWhereTheLogitsDependOnTheLength) {
  for (const bool dynamic : {false, true}) {
    std::vector<std::string> sets = {"model.encodings=rope", "eval.lengths=4", "probe.replay=0"};
    if (dynamic) sets.push_back("encoding_options.rope.scaling=dynamic_ntk");
    const RecipeConfig c = testing::TinyCopyRecipe(sets);
    AssembledModel m = AssembleModel(c, "rope");
    Rng init(5);
    m.model->Init(init);
    EXPECT_EQ(m.model->DecodingRecomputesPrefix(), dynamic);
    LengthStreams st = EvalStreams(c.seed, 4);
    const Batch b = m.layout->MakeBatch(4, 16, st.data);
    EvalBuffers buf;
    m.encoding->PositionIds(b.T, false, st.positions, buf.pos);
    MatF logits;
    m.model->Forward(b.tokens, b.B, b.T, buf.pos, false, false, logits);
    EvalBuffers buf_shortcut = buf;
    WrittenAnswers w, w_shortcut;
    GreedyWrite(m, b, st.positions, buf, w);
    GreedyWrite(m, b, st.positions, buf_shortcut, w_shortcut, &logits);
    EXPECT_EQ(w_shortcut.tokens, w.tokens) << dynamic;
    if (dynamic) {
      EXPECT_EQ(w_shortcut.from_teacher_forced, 0);
      EXPECT_EQ(w_shortcut.decoded_sequences, b.B);
    } else {
      EXPECT_GE(w_shortcut.from_teacher_forced, b.B) << "the first token of each is read";
    }
  }
}

// Greedy decoding writes up to twice the answer after the prompt: tables sized by the recipe's
// longest sequence (the learned encoding's) must reach that far, here for copy_cmc2x whose answer
// is 2n + 1 tokens.
TEST(Greedy, PositionTablesCoverTheLongestWrittenSequence) {
  const RecipeConfig c =
      testing::TinyCopyRecipe({"task.name=copy_cmc2x", "model.encodings=learned",
                               "eval.decoding=greedy", "train.steps=5", "probe.replay=0"});
  auto task = CreateTask("copy_cmc2x", TaskOptions{12});
  const SequenceLayout layout(*task, Layout::kDecoder);
  EXPECT_GE(c.MaxPositionId(), layout.GreedyCapacityFor(9));
  EXPECT_EQ(layout.GreedyCapacityFor(9), (9 + 1) + 2 * (2 * 9 + 1 + 1) - 1);
  const auto dir = testing::FreshTempDir("greedy_cmc2x");
  RunOptions o;
  o.out_dir = dir.string();
  const RunSummary s = TrainAndEvaluate(c, "learned", o);
  EXPECT_EQ(s.state, "completed") << s.message;
  std::filesystem::remove_all(dir);
}

TEST(Greedy, RefusedWhereThereIsNoAnswerToWrite) {
  const auto error_of = testing::TinyRecipeError;
  EXPECT_NE(error_of({"eval.decoding=greedy", "model.layout=encoder"}).find("eval.decoding"),
            std::string::npos);
  EXPECT_NE(error_of({"eval.decoding=greedy", "task.name=markov_lm"}).find("eval.decoding"),
            std::string::npos);
  EXPECT_EQ(error_of({"eval.decoding=greedy"}), "");
  // "task": Kazemnejad et al.'s copy is greedy, the Chomsky reverse_string teacher forced.
  auto copy = CreateTask("copy", {});
  auto reverse = CreateTask("reverse_string", {});
  RecipeConfig c = testing::TinyCopyRecipe();
  EXPECT_EQ(c.DecodingFor(*copy), Decoding::kGreedy);
  EXPECT_EQ(c.DecodingFor(*reverse), Decoding::kTeacherForced);
  c.layout = "encoder";
  EXPECT_EQ(c.DecodingFor(*copy), Decoding::kTeacherForced);
}

}  // namespace
}  // namespace lexp
