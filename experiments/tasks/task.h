// A synthetic task: for a requested length n and a seeded RNG, one example made of input symbols,
// output symbols and which output symbols are scored. How an example becomes a model sequence
// (decoder with a separator, or encoder with blank output slots) is the layout's business
// (sequence_layout.h), so every task works with both layouts where that makes sense.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/rng.h"

namespace lexp {

struct Example {
  std::vector<int> input;   // symbols in [0, InputAlphabet())
  std::vector<int> output;  // symbols in [0, OutputAlphabet())
  std::vector<uint8_t>
      output_scored;  // 1 where the output symbol is a target (same size as output)
  // 1 where the output symbol counts in evaluation; empty: the scored ones. A scratchpad's steps
  // are trained on (scored) but only the final answer is graded.
  std::vector<uint8_t> output_graded;
};

// How an evaluation reads the model's answer. Teacher forcing scores the prediction of each answer
// token given the true ones before it (the length of the answer is known from the layout); greedy
// decoding lets the model write its answer from the separator, each token its own argmax, until it
// writes the end token or reaches a cap, so stopping at the right length is part of the task
// (Newman et al. 2020, "The EOS decision and length extrapolation", arXiv:2010.07174).
enum class Decoding { kTeacherForced, kGreedy };
const char* DecodingName(Decoding d);  // "teacher_forced" | "greedy"

struct TaskOptions {
  TaskOptions() = default;
  TaskOptions(int vocab_size, std::string scratchpad_components = "", std::string text_corpus = "")
      : vocab(vocab_size),
        scratchpad(std::move(scratchpad_components)),
        corpus(std::move(text_corpus)) {}
  int vocab = 0;  // task-specific alphabet size; 0 = the task's default
  // Scratchpad components written before the answer (experiments/tasks/scratchpad.h): a subset of
  // the letters i c o v r, in that order; "" = no scratchpad.
  std::string scratchpad;
  // text_lm's corpus (experiments/tasks/text_lm.h): fortunes, kjv or python; "" = fortunes.
  std::string corpus;
  // The arithmetic tasks' index hints (experiments/tasks/arithmetic.h): the number of hint
  // symbols; 0 = none.
  int index_hints = 0;
  // The arithmetic tasks' operands zero-padded to the longer one's digits (Cho et al. 2024).
  bool zero_pad = false;
  // selective_copy's tokens to copy in every input (0 = the task's default).
  int copy_tokens = 0;
  // RULER's multi-needle tasks' needles and variable_tracking's hops (0 = RULER's 4).
  int needles = 0;
  int hops = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string Name() const = 0;
  virtual int InputAlphabet() const = 0;
  virtual int OutputAlphabet() const = 0;
  // True when output symbols are the same tokens as input symbols (copy-like tasks).
  virtual bool SharedAlphabet() const { return false; }
  // False for tasks whose outputs contain unscored, unpredictable symbols that the model must read
  // (associative recall queries): they need the decoder layout.
  virtual bool SupportsEncoder() const { return true; }
  virtual int MinLength() const { return 1; }
  virtual int MaxLength() const { return 1 << 20; }
  virtual Example Sample(int n, Rng& rng) const = 0;
  // Tasks whose examples of one requested length come in several shapes (sequence lengths), e.g.
  // operands of independently drawn lengths: a training batch draws one shape of [0, Shapes(n))
  // and every example of it has that shape (lexp batches one sequence length at a time). Shape 0
  // is what evaluation at n reads and what Sample returns (the longest).
  virtual int Shapes(int /*n*/) const { return 1; }
  virtual Example SampleShape(int n, int /*shape*/, Rng& rng) const { return Sample(n, rng); }
  // Input symbols [0, DigitSymbols()) are the decimal digits 0..9, shared by the output (arithmetic
  // tasks): encodings that number the digits of a number (Abacus) read them. 0: no digits.
  virtual int DigitSymbols() const { return 0; }
  // Tasks with a depth axis (where in the input the information sits, 0 = start, 1 = end):
  // evaluation sweeps it (eval.depths). Sample draws the depth at random.
  virtual bool HasDepth() const { return false; }
  // Input symbols at the end of every input that ask the question (passkey's QUERY): a prompt
  // compressor keeps them and compresses the context before them.
  virtual int QueryTokens() const { return 0; }
  virtual Example SampleAtDepth(int n, double /*depth*/, Rng& rng) const { return Sample(n, rng); }
  // Language-modelling sources: the source's entropy rate in nats per token (NaN: not a source).
  virtual double EntropyRate() const { return std::numeric_limits<double>::quiet_NaN(); }
  // True when the output is an answer the model writes token by token: every output symbol is
  // scored and none is given. The decoder layout then ends it with an end token, and greedy
  // decoding applies. False for language-modelling sources, query streams (MQAR, associative
  // recall) and outputs padded past their own end symbol (the Chomsky termination masks).
  virtual bool HasAnswer() const { return true; }
  // True for a language-modelling source whose stream looks alike wherever it is cut: any window
  // of it, read alone, is distributed like a sequence from its start (the first tokens of a window
  // lose only the context before it, as a training sequence's first tokens have none). Scores of a
  // window alone are then in-distribution scores. False for tasks whose targets answer a prompt or
  // a query that may lie before any window.
  virtual bool Stationary() const { return false; }
  // The decoding the task's source evaluated it with (the default of eval.decoding = "task").
  virtual Decoding SourceDecoding() const { return Decoding::kTeacherForced; }
  // A task over data training never draws from (a corpus's held-out part), which evaluation
  // (/eval and the evaluations during training) samples instead; nullptr: the task itself, whose
  // samples are drawn fresh (synthetic tasks).
  virtual std::unique_ptr<Task> HeldOut() const { return nullptr; }
  // Tasks of one family share their alphabet and layout and differ in the distribution of their
  // examples (flip_flop and its sparse and dense test distributions): an evaluation of a trained
  // model may read another task of its family (lexp eval --set task.name=...). Default: its name.
  virtual std::string Family() const { return Name(); }
};

struct TaskInfo {
  std::string name;
  std::string description;
  std::string source;
};

const std::vector<TaskInfo>& ListTasks();
std::unique_ptr<Task> CreateTask(const std::string& name, const TaskOptions& options);

}  // namespace lexp
