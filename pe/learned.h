// Learned absolute position table added to the token embedding (Gehring et al. 2017,
// arXiv:1705.03122). No value exists past the table: `beyond = "error"` (default)
// refuses such positions, `beyond = "clamp"` reuses the last row. The table holds `max_len` rows
// (0 = the run's bound on every position id a batch can carry, so rows past the training length
// exist but were never trained: the usual behaviour of a learned table evaluated long).
#pragma once

#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Options of `learned` (recipe [encoding_options.learned]; pe/options.h).
struct LearnedOptions {
  int max_len = 0;
  std::string beyond = "error";
  double init_std = 1.0;
  std::vector<OptionField> Fields() {
    return {{.name = "max_len",
             .help = "table rows (0 = the run's bound on every position id a batch can carry)",
             .value = &max_len, .lo = 0},
            {.name = "beyond",
             .help = "positions past the table: error, or clamp (reuse the last row)",
             .value = &beyond, .allowed = {"error", "clamp"}},
            {.name = "init_std", .help = "standard deviation of the initial table",
             .value = &init_std, .lo = 0}};
  }
};

template <typename S>
class LearnedAbsolute final : public PositionEncoding<S> {
 public:
  using Options = LearnedOptions;
  LearnedAbsolute(const EncodingShape& shape, const LearnedOptions& opt);
  std::string Name() const override { return "learned"; }
  unsigned Sites() const override { return kSiteEmbedding; }
  void Init(Rng& rng) override;
  void AddEmbedding(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                    Mat<S>& x) override;
  void EmbeddingBackward(const std::vector<double>& pos, const std::vector<int>& tokens, int B,
                         Mat<S>& d_x) override;
  std::vector<ParamRef<S>> Parameters() override;

 private:
  int Row(double pos) const;
  Mat<S> table_, d_table_;  // [max_len, C]
  bool clamp_;
  double init_std_;
};

}  // namespace lexp
