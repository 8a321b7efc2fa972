#include "experiments/core/evaluation.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "nn/check.h"
#include "nn/ops/cross_entropy.h"

namespace lexp {

namespace {
LengthStreams StreamsOf(int seed, const char* purpose, int n) {
  Rng data = Rng(static_cast<uint64_t>(seed)).Split(purpose).Split(static_cast<uint64_t>(n));
  Rng positions = data.Split("positions");
  return {data, positions};
}
}  // namespace

LengthStreams EvalStreams(int seed, int n) { return StreamsOf(seed, "eval", n); }
LengthStreams ProbeStreams(int seed, int n) { return StreamsOf(seed, "probe", n); }

namespace {

// The greedy tokens a teacher-forced pass over b already holds: while the argmax of answer row k
// is the target (and the token the pass saw next), the model's own prefix is the true one, so its
// greedy token at k is that argmax; the first argmax off target is read too. Writes them into out
// and returns, per sequence, how many were read (0 for all when the shortcut does not hold).
std::vector<int> ReadTeacherForcedPrefix(const Batch& b, const MatF& teacher, int end,
                                         WrittenAnswers& out) {
  const int T = b.T, P = b.prompt, A = T - (P - 1);
  std::vector<int> known(b.B, 0);
  for (int s = 0; s < b.B; ++s) {
    const long row0 = static_cast<long>(s) * T + P - 1;
    for (int k = 0; k < A; ++k) {
      Eigen::Index arg = 0;
      teacher.row(row0 + k).maxCoeff(&arg);
      const int token = static_cast<int>(arg);
      out.tokens[static_cast<size_t>(s) * out.cap + k] = token;
      known[s] = out.length[s] = k + 1;
      if (token == end) {
        out.ended[s] = 1;
        break;
      }
      // Off target, or the pass saw another token next (it cannot: the decoder layout's next
      // input is the target): the rest is decoded.
      if (token != b.targets[row0 + k] || k + 1 == A || b.tokens[row0 + k + 1] != token) break;
    }
  }
  return known;
}

}  // namespace

void GreedyWrite(AssembledModel& m, const Batch& b, Rng& positions, EvalBuffers& buf,
                 WrittenAnswers& out, const MatF* teacher_logits) {
  const int B = b.B, T = b.T, P = b.prompt, A = T - (P - 1);  // answer + end token
  const int cap = 2 * A, end = m.layout->End();
  const int capacity = SequenceLayout::GreedyCapacity(P, A);
  const std::vector<double> teacher_pos = buf.pos;
  Rng greedy_positions = positions.Split("greedy");
  m.encoding->PositionIds(capacity, false, greedy_positions, buf.pos);
  out.cap = cap;
  out.tokens.assign(static_cast<size_t>(B) * cap, -1);
  out.length.assign(B, 0);
  out.ended.assign(B, 0);
  out.from_teacher_forced = 0;
  out.decoded_sequences = 0;
  // The shortcut holds where a row's logits are those of decoding the same prefix: positions that
  // agree on the first T, and a model that decodes without recomputing the prefix.
  const bool shortcut = teacher_logits != nullptr && teacher_logits->rows() == static_cast<long>(B) * T &&
                        static_cast<int>(teacher_pos.size()) == T &&
                        std::equal(teacher_pos.begin(), teacher_pos.end(), buf.pos.begin()) &&
                        !m.model->DecodingRecomputesPrefix();
  std::vector<int> known(B, 0);
  if (shortcut) known = ReadTeacherForcedPrefix(b, *teacher_logits, end, out);
  std::vector<int> decode;  // the sequences not finished by the teacher-forced pass
  for (int s = 0; s < B; ++s) {
    out.from_teacher_forced += known[s];
    if (!out.ended[s]) decode.push_back(s);
  }
  if (decode.empty()) return;
  const int D = static_cast<int>(decode.size());
  out.decoded_sequences = D;
  // Every decoded sequence starts from its prompt and the tokens all of them already have.
  int first = cap;
  for (int s : decode) first = std::min(first, known[s]);
  long rows_per_seq = P + first;  // rows of buf.logits per sequence at this step
  if (shortcut && m.model->KeptKeysOf(B, T)) {
    // The teacher-forced pass read the same tokens at the same positions up to the last one of
    // the prefix (there it read the target, where the model may have written another token): its
    // keys and values start the decoding, and only that last token is run.
    m.model->DecodeStartFromForward(decode, P + first - 1, capacity, buf.pos);
    buf.step_tokens.resize(D);
    for (int i = 0; i < D; ++i) {
      const int s = decode[i];
      buf.step_tokens[i] = first == 0 ? b.tokens[static_cast<long>(s) * T + P - 1]
                                      : out.tokens[static_cast<size_t>(s) * cap + first - 1];
    }
    m.model->DecodeAppend(buf.step_tokens, 1, buf.logits);
    rows_per_seq = 1;
  } else {
    m.model->DecodeStart(D, capacity, buf.pos);
    buf.step_tokens.resize(static_cast<size_t>(D) * (P + first));
    for (int i = 0; i < D; ++i) {
      const int s = decode[i];
      auto dst = buf.step_tokens.begin() + static_cast<long>(i) * (P + first);
      std::copy(b.tokens.begin() + static_cast<long>(s) * T,
                b.tokens.begin() + static_cast<long>(s) * T + P, dst);
      std::copy(out.tokens.begin() + static_cast<long>(s) * cap,
                out.tokens.begin() + static_cast<long>(s) * cap + first, dst + P);
    }
    m.model->DecodeAppend(buf.step_tokens, P + first, buf.logits);
  }
  int live = D;
  for (int k = first; k < cap && live > 0; ++k) {
    const int batch = static_cast<int>(decode.size());
    buf.step_tokens.resize(batch);
    for (int i = 0; i < batch; ++i) {
      const int s = decode[i];
      int token = out.tokens[static_cast<size_t>(s) * cap + k];
      if (k >= known[s]) {
        Eigen::Index arg = 0;
        buf.logits.row(static_cast<long>(i) * rows_per_seq + rows_per_seq - 1).maxCoeff(&arg);
        token = static_cast<int>(arg);
      }
      if (!out.ended[s]) {
        out.tokens[static_cast<size_t>(s) * cap + k] = token;
        out.length[s] = k + 1;
        if (token == end) {
          out.ended[s] = 1;
          --live;
        }
      }
      buf.step_tokens[i] = token;  // an ended sequence goes on, ignored, until the batch drops it
    }
    if (live == 0 || k + 1 == cap) break;
    if (4 * live <= 3 * static_cast<int>(decode.size())) {
      // A quarter of the batch has ended: the rest decode on without them (to rounding).
      std::vector<int> keep, still;
      for (int i = 0; i < static_cast<int>(decode.size()); ++i)
        if (!out.ended[decode[i]]) {
          keep.push_back(i);
          still.push_back(decode[i]);
          buf.step_tokens[keep.size() - 1] = buf.step_tokens[i];
        }
      m.model->DecodeKeep(keep);
      decode = std::move(still);
      buf.step_tokens.resize(decode.size());
    }
    m.model->DecodeAppend(buf.step_tokens, 1, buf.logits);
    rows_per_seq = 1;
  }
}

namespace {

// Scores what GreedyWrite wrote against the answers of b: adds to *correct the graded answer
// positions (end token included; a scratchpad's steps are not graded) holding the target, to
// *scored the graded positions, to *exact the sequences of the target's length whose graded
// positions are all right, to *ended those that wrote the end token and to *written their written
// lengths.
void ScoreWritten(const Batch& b, const WrittenAnswers& w, long* correct, long* scored, long* exact,
                  long* ended, long* written) {
  const int T = b.T, P = b.prompt, A = T - (P - 1);
  for (int s = 0; s < b.B; ++s) {
    const int* target = b.targets.data() + static_cast<long>(s) * T + (P - 1);
    const int* t = w.tokens.data() + static_cast<size_t>(s) * w.cap;
    const uint8_t* graded = b.graded.data() + static_cast<long>(s) * T + (P - 1);
    long right = 0, count = 0;
    for (int k = 0; k < A; ++k) {
      if (!graded[k]) continue;
      ++count;
      right += k < w.length[s] && t[k] == target[k];
    }
    *correct += right;
    *scored += count;
    *exact += w.length[s] == A && right == count;
    *ended += w.ended[s];
    *written += w.length[s];
  }
}

}  // namespace

EvalRow EvaluateLength(AssembledModel& m, int n, int samples, int batch_size, double depth,
                       Rng& data, Rng& positions, EvalBuffers& buf, Decoding decoding) {
  const bool greedy = decoding == Decoding::kGreedy;
  LEXP_CHECK(!greedy || m.layout->EndsWithEndToken(),
             "greedy decoding needs the decoder layout and a task with an answer");
  EvalRow r;
  r.length = n;
  r.decoding = decoding;
  double loss_sum = 0;
  long correct = 0, exact = 0, g_correct = 0, g_exact = 0, g_ended = 0, g_written = 0, g_scored = 0;
  for (int done = 0; done < samples; done += batch_size) {
    const int bs = std::min(batch_size, samples - done);
    const Batch b = m.EvalLayout().MakeBatch(n, bs, data, depth);
    r.seq_len = b.T;
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    m.encoding->PositionIds(b.T, false, positions, buf.pos);
    // Greedy decoding starts from this pass's keys and values where it can (GreedyWrite).
    m.model->set_keep_keys_for_decoding(greedy);
    m.model->Forward(b.tokens, b.B, b.T, buf.pos, false, false, buf.logits);
    m.model->set_keep_keys_for_decoding(false);
    const CrossEntropyResult ce = CrossEntropyForwardBackward<float>(
        buf.logits, b.targets, b.graded, nullptr, &buf.row_loss, &buf.row_correct);
    loss_sum += ce.loss_sum;
    correct += ce.correct;
    r.scored_tokens += ce.count;
    for (int s = 0; s < b.B; ++s) {
      bool all = true;
      for (int t = 0; t < b.T; ++t) {
        const long i = static_cast<long>(s) * b.T + t;
        if (b.graded[i] && !buf.row_correct[i]) all = false;
      }
      exact += all ? 1 : 0;
    }
    const auto t1 = Clock::now();
    r.teacher_forced_seconds += std::chrono::duration<double>(t1 - t0).count();
    if (greedy) {
      GreedyWrite(m, b, positions, buf, buf.written, &buf.logits);
      r.greedy_seconds += std::chrono::duration<double>(Clock::now() - t1).count();
      ScoreWritten(b, buf.written, &g_correct, &g_scored, &g_exact, &g_ended, &g_written);
      r.greedy_from_teacher_forced += buf.written.from_teacher_forced;
      r.greedy_decoded_sequences += buf.written.decoded_sequences;
    }
    r.samples += bs;
  }
  r.loss = loss_sum / std::max(1L, r.scored_tokens);
  r.token_accuracy = static_cast<double>(correct) / std::max(1L, r.scored_tokens);
  r.exact_match = static_cast<double>(exact) / std::max(1, r.samples);
  if (greedy) {
    r.teacher_forced_accuracy = r.token_accuracy;
    r.teacher_forced_exact = r.exact_match;
    r.scored_tokens = g_scored;
    r.token_accuracy = static_cast<double>(g_correct) / std::max(1L, g_scored);
    r.exact_match = static_cast<double>(g_exact) / std::max(1, r.samples);
    r.ended = static_cast<double>(g_ended) / std::max(1, r.samples);
    r.written_length = static_cast<double>(g_written) / std::max(1, r.samples);
    r.greedy_written_tokens = g_written;
  }
  return r;
}

ProtocolScores ScoreEvalRows(const std::vector<EvalRow>& eval, int N) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ProtocolScores p{nan, nan, nan};
  double in = 0, out = 0, kz = 0;
  int ni = 0, no = 0, nk = 0;
  for (const auto& e : eval) {
    if (e.length <= N) {
      in += e.token_accuracy;
      ++ni;
    } else {
      out += e.token_accuracy;
      ++no;
      if (e.length <= 2 * N) {
        kz += e.exact_match;
        ++nk;
      }
    }
  }
  if (ni) p.in_distribution = in / ni;
  if (no) p.ruoss = out / no;
  if (nk) p.kazemnejad_exact = kz / nk;
  return p;
}

std::string GreedyCostLine(const std::vector<EvalRow>& eval) {
  double tf = 0, greedy = 0;
  long read = 0, written = 0, decoded = 0, samples = 0;
  for (const EvalRow& row : eval) {
    tf += row.teacher_forced_seconds;
    greedy += row.greedy_seconds;
    read += row.greedy_from_teacher_forced;
    written += row.greedy_written_tokens;
    decoded += row.greedy_decoded_sequences;
    samples += row.samples;
  }
  return fmt::format("greedy decoding took {:.1f}s, {:.1f}x the teacher-forced pass over the same "
                     "sequences ({:.1f}s); {:.0f}% of the written tokens read from that pass (the "
                     "model's prefix was the true one), {} of {} sequences decoded past it",
                     greedy, greedy / std::max(tf, 1e-9), tf,
                     100.0 * static_cast<double>(read) / static_cast<double>(std::max(1L, written)),
                     decoded, samples);
}

std::string NonFiniteLossLengths(const std::vector<EvalRow>& eval) {
  std::string lengths;
  for (const EvalRow& row : eval)
    if (!std::isfinite(row.loss)) {
      if (!lengths.empty()) lengths += ",";
      lengths += std::to_string(row.length);
    }
  return lengths;
}

}  // namespace lexp
