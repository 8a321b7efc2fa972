// Turns task examples into model batches. Token ids: input symbols [0, Vin), output symbols
// [Vin, Vin+Vout) (or the input ids when the task shares its alphabet), then SEP, BLANK and (where
// answers end with it) END.
//  * decoder: input SEP output[0..m) END for tasks with an answer (Task::HasAnswer): the target at
//    position ni+k is output[k] and at ni+m the end token, scored like the answer, so a model is
//    also trained and judged on where its answer stops (Newman et al. 2020); tasks without an
//    answer (language-modelling sources, query streams) are input SEP output[0..m-1), targets
//    output[0..m). Next-token prediction, teacher forced; greedy decoding starts from the prompt
//    input SEP (evaluation.h).
//  * encoder: input BLANK*m; the target at the m output slots is the output (Chomsky protocol,
//    Deletang et al. 2023), read with bidirectional attention; no end token.
// The whole batch has one requested length n (the Chomsky protocol's curriculum), so one T.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/tasks/task.h"
#include "nn/rng.h"

namespace lexp {

enum class Layout { kDecoder, kEncoder };

struct Batch {
  int B = 0, T = 0, n = 0;
  int prompt = 0;  // decoder: tokens given before the answer (input and SEP); answer targets are
                   // at positions prompt-1 .. T-1
  std::vector<int> tokens;    // [B*T]
  std::vector<int> targets;   // [B*T]
  std::vector<uint8_t> mask;  // [B*T] 1 = scored target (trained on)
  // [B*T] 1 = graded target (evaluation: loss, accuracy, exact match); the scored targets except a
  // scratchpad's steps, which are trained on and not graded.
  std::vector<uint8_t> graded;
};

class SequenceLayout {
 public:
  SequenceLayout(const Task& task, Layout layout);
  int Vocab() const { return vocab_; }
  int Sep() const { return sep_; }
  int Blank() const { return blank_; }
  int End() const { return end_; }  // -1 when sequences have no end token
  // True when sequences end with the end token (decoder layout, a task with an answer).
  bool EndsWithEndToken() const { return ends_; }
  // Model sequence length for requested length n (the same for every example of that n).
  int SequenceLength(const Example& e) const;
  // Model sequence length for requested length n (tasks give every example of an n the same
  // length).
  int SequenceLengthFor(int n) const;
  // Input tokens of a sequence of requested length n: the positions before the separator (decoder)
  // or before the output slots (encoder); figures mark this boundary.
  int InputTokensFor(int n) const;
  // Decoder layout: also train on the input, each input token predicting the next one (a language
  // model of the prompts, as a prompt compressor needs; train.score_input). Evaluation grades the
  // answer only, as without it.
  void set_score_input(bool on) { score_input_ = on; }
  // depth >= 0: examples from Task::SampleAtDepth (tasks with a depth axis, e.g. passkey); shape:
  // the shape every example of the batch has (Task::Shapes; 0, the longest, in evaluation).
  Batch MakeBatch(int n, int batch_size, Rng& rng, double depth = -1, int shape = 0) const;
  // A training batch's shape, uniform over the task's shapes at n (draws nothing from rng when the
  // task has one shape, so such tasks' batches are those of before shapes existed).
  int DrawShape(int n, Rng& rng) const;
  // Token ids [0, Digits()) are the decimal digits (Task::DigitSymbols; 0 = the task has none).
  int Digits() const { return task_.DigitSymbols(); }
  // Greedy decoding writes at most twice the answer (its end token included) after the prompt
  // (input and SEP): the longest sequence it forms for a prompt of P tokens and an answer of A.
  static int GreedyCapacity(int prompt, int answer) { return prompt + 2 * answer - 1; }
  // The same for requested length n (decoder layout).
  int GreedyCapacityFor(int n) const;

 private:
  int OutputToken(int symbol) const { return task_.SharedAlphabet() ? symbol : vin_ + symbol; }
  const Task& task_;
  Layout layout_;
  int vin_, vocab_, sep_, blank_, end_;
  bool ends_;
  bool score_input_ = false;
};

}  // namespace lexp
