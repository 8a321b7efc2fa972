#include "experiments/core/sequence_layout.h"

#include "nn/check.h"

namespace lexp {

SequenceLayout::SequenceLayout(const Task& task, Layout layout)
    : task_(task),
      layout_(layout),
      vin_(task.InputAlphabet()),
      ends_(layout == Layout::kDecoder && task.HasAnswer()) {
  LEXP_INPUT_CHECK(
      layout == Layout::kDecoder || task.SupportsEncoder(),
      "task '" + task.Name() + "' needs the decoder layout (model.layout = \"decoder\")");
  LEXP_CHECK(task.DigitSymbols() == 0 || task.SharedAlphabet(),
             "a task with digit symbols must share its alphabet (the digits' token ids)");
  const int symbols = task.SharedAlphabet() ? vin_ : vin_ + task.OutputAlphabet();
  sep_ = symbols;
  blank_ = symbols + 1;
  // The end token exists only where answers end with it, so other layouts keep their vocabulary.
  end_ = ends_ ? symbols + 2 : -1;
  vocab_ = symbols + 2 + (ends_ ? 1 : 0);
}

int SequenceLayout::SequenceLength(const Example& e) const {
  return static_cast<int>(e.input.size() + e.output.size()) + (ends_ ? 1 : 0);
}

int SequenceLayout::SequenceLengthFor(int n) const {
  Rng probe(0);
  return SequenceLength(task_.Sample(n, probe));
}

int SequenceLayout::InputTokensFor(int n) const {
  Rng probe(0);
  return static_cast<int>(task_.Sample(n, probe).input.size());
}

int SequenceLayout::GreedyCapacityFor(int n) const {
  Rng probe(0);
  const Example e = task_.Sample(n, probe);
  return GreedyCapacity(static_cast<int>(e.input.size()) + 1,
                        static_cast<int>(e.output.size()) + (ends_ ? 1 : 0));
}

int SequenceLayout::DrawShape(int n, Rng& rng) const {
  const int shapes = task_.Shapes(n);
  return shapes > 1 ? static_cast<int>(rng.UniformInt(0, shapes - 1)) : 0;
}

Batch SequenceLayout::MakeBatch(int n, int batch_size, Rng& rng, double depth, int shape) const {
  Batch b;
  b.B = batch_size;
  b.n = n;
  for (int s = 0; s < batch_size; ++s) {
    const Example e = depth >= 0   ? task_.SampleAtDepth(n, depth, rng)
                      : shape > 0 ? task_.SampleShape(n, shape, rng)
                                  : task_.Sample(n, rng);
    const int T = SequenceLength(e);
    if (s == 0) {
      b.T = T;
      b.tokens.reserve(static_cast<size_t>(T) * batch_size);
    }
    LEXP_INPUT_CHECK(T == b.T,
                     "task '" + task_.Name() +
                         "' produced examples of different lengths for n=" + std::to_string(n));
    const int ni = static_cast<int>(e.input.size()), m = static_cast<int>(e.output.size());
    const bool lm = score_input_ && layout_ == Layout::kDecoder;
    for (int t = 0; t < ni; ++t) {
      b.tokens.push_back(e.input[t]);
      b.targets.push_back(lm && t + 1 < ni ? e.input[t + 1] : 0);
      b.mask.push_back(lm && t + 1 < ni ? 1 : 0);
      b.graded.push_back(0);
    }
    auto graded = [&](int k) {
      return e.output_graded.empty() ? e.output_scored[k] : e.output_graded[k];
    };
    if (layout_ == Layout::kDecoder) {
      // Positions ni..ni+m-1 hold SEP, output[0..m-2] and predict output[0..m-1] (next token);
      // with the end token, position ni+m holds output[m-1] and predicts END.
      LEXP_INPUT_CHECK(s == 0 || b.prompt == ni + 1,
                       "task '" + task_.Name() +
                           "' produced inputs of different lengths for n=" + std::to_string(n));
      b.prompt = ni + 1;
      for (int k = 0; k < m; ++k) {
        b.tokens.push_back(k == 0 ? sep_ : OutputToken(e.output[k - 1]));
        b.targets.push_back(OutputToken(e.output[k]));
        b.mask.push_back(e.output_scored[k]);
        b.graded.push_back(graded(k));
      }
      if (ends_) {
        b.tokens.push_back(m == 0 ? sep_ : OutputToken(e.output[m - 1]));
        b.targets.push_back(end_);
        b.mask.push_back(1);
        b.graded.push_back(1);
      }
    } else {
      for (int k = 0; k < m; ++k) {
        b.tokens.push_back(blank_);
        b.targets.push_back(OutputToken(e.output[k]));
        b.mask.push_back(e.output_scored[k]);
        b.graded.push_back(graded(k));
      }
    }
  }
  return b;
}

}  // namespace lexp
