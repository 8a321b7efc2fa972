// Run files whose model is set by hand: a planted mechanism whose right reading is known, so that
// an analysis can be required to read it (and, on a model without it, not to). A planted run is a
// real completed run of lexp: the recipe trains one step (for a file with its recipe and the
// weights' shapes), the weights are replaced by the plant, and the trainer evaluates them
// (RunOptions::weights_from), so /eval, the probes and every replay see the planted model.
//
// The plants are one-layer, one-head models whose attention pattern comes from RoPE alone (W_q =
// W_k = 0, the query and key biases rotated per pair, so a logit depends only on the distance d =
// i - j; nn/ops and pe/rope.h rotate z = x_k + i x_{k+P} by e^{i t theta_k}, so a pair with query
// 1 and key A e^{i phi} adds A cos(d theta_k - phi) to the logit times 1/sqrt(D)); a value path
// that writes the attended token's one-hot embedding, amplified, into the residual stream; and a
// head that reads it. What each plant does is said where it is built.
#pragma once

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "experiments/core/recipe.h"
#include "experiments/core/run_file.h"
#include "experiments/training/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp::testing {

// A run file's /model as doubles, by parameter name, with its shape.
struct PlantedWeights {
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, std::vector<uint64_t>> dims;
  std::vector<double>& operator[](const std::string& name) {
    LEXP_CHECK(values.count(name), "planted run: no parameter '" + name + "'");
    return values[name];
  }
  // Element (r, c) of a 2-D parameter stored [rows, cols] row-major.
  double& At(const std::string& name, uint64_t r, uint64_t c) {
    LEXP_CHECK(dims[name].size() == 2 && r < dims[name][0] && c < dims[name][1],
               "planted run: index outside '" + name + "'");
    return (*this)[name][r * dims[name][1] + c];
  }
};

inline void ReplaceModelWeights(const std::string& run_file,
                                const std::function<void(PlantedWeights&)>& plant) {
  PlantedWeights w;
  {
    h5::Reader r(run_file);
    const h5::Group m = r.root().OpenGroup("model");
    for (const auto& name : m.Children()) {
      std::vector<uint64_t> d;
      w.values[name] = m.ReadDoubles(name, &d);
      w.dims[name] = d;
    }
  }
  // A blank model: every weight 0, every LayerNorm gain 1.
  for (auto& [name, v] : w.values) {
    const bool gain = name.size() > 2 && name.compare(name.size() - 2, 2, ".g") == 0;
    std::fill(v.begin(), v.end(), gain ? 1.0 : 0.0);
  }
  plant(w);
  h5::Writer out(run_file, h5::Writer::Mode::kUpdate);
  h5::Group m = out.root().OpenGroup("model");
  for (const auto& [name, v] : w.values) {
    m.Remove(name);
    m.WriteFloats(name, std::vector<float>(v.begin(), v.end()), w.dims[name], "",
                  "parameter values (float32)");
  }
  out.Commit();
}

// Trains `c` one step into dir/seed_<name>/ (probe.replay = 0), plants the weights there, and
// evaluates them as dir/<name>.h5 with the recipe's own evaluation and probes (and, unless
// probe.replay = 0, its analysis). Returns the planted run file.
inline std::string PlantedRun(RecipeConfig c, const std::string& encoding,
                              const std::filesystem::path& dir, const std::string& name,
                              const std::function<void(PlantedWeights&)>& plant) {
  RecipeConfig seed = c;
  ApplyOverrides(seed, {"train.steps=1", "train.warmup_steps=0", "probe.replay=0"});
  ValidateRecipe(seed);
  RunOptions so;
  so.out_dir = (dir / ("seed_" + name)).string();
  so.name = name;
  const RunSummary s = TrainAndEvaluate(seed, encoding, so);
  LEXP_CHECK(s.state == "completed", "planted run: the seed run did not complete: " + s.message);
  ReplaceModelWeights(s.path, plant);
  RunOptions o;
  o.out_dir = dir.string();
  o.name = name;
  o.weights_from = s.path;
  const RunSummary p = TrainAndEvaluate(c, encoding, o);
  LEXP_CHECK(p.state == "completed", "planted run: the planted run did not complete: " + p.message);
  return p.path;
}

// The pieces of the one-layer, one-head plants (d_model C = head width D, every pair rotated).
struct Plant {
  int C = 0, vocab = 0;
  // The attention pattern: pair k adds amplitude[k] cos(d theta_k - phase[k]) / sqrt(D) to the
  // logit of every query and key at distance d (query bias 1 in the pair's first dimension, key
  // bias amplitude e^{i phase}).
  void Pattern(PlantedWeights& w, const std::vector<double>& amplitude,
               const std::vector<double>& phase) const {
    const int P = C / 2;
    for (int k = 0; k < P; ++k) {
      w["layer0.attn.qkv.b"][k] = amplitude[k] != 0 ? 1.0 : 0.0;
      w["layer0.attn.qkv.b"][C + k] = amplitude[k] * std::cos(phase[k]);
      w["layer0.attn.qkv.b"][C + k + P] = amplitude[k] * std::sin(phase[k]);
    }
  }
  // Token t embedded as the one-hot e_t (so vocab <= C); the value path writes value_gain times
  // the attended position's normalised embedding into the residual stream, and the head reads
  // token v with head_gain times the normalised stream's channel v. The stream at i is e_{x_i}
  // plus value_gain LN(e_{x_j}) for the attended j, so the output is that of the attended token,
  // its embedding at i a perturbation of order 1 / value_gain.
  void ReadAttendedToken(PlantedWeights& w, double value_gain, double head_gain) const {
    LEXP_CHECK(vocab <= C, "plant: vocabulary wider than the model");
    for (int t = 0; t < vocab; ++t) w.At("tok_emb", t, t) = 1;
    for (int c = 0; c < C; ++c) {
      w.At("layer0.attn.qkv.w", c, 2 * C + c) = value_gain;
      w.At("layer0.attn.proj.w", c, c) = 1;
    }
    for (int v = 0; v < vocab; ++v) w.At("head.w", v, v) = head_gain;
  }
};

// RoPE's frequency of pair k for head width D and base b.
inline double RopeTheta(int k, int D, double base) { return std::pow(base, -2.0 * k / D); }

// lookback_lm (each token repeats the one 24 back with probability 0.8; 16 symbols) with one layer
// and one head of width 32, RoPE base 1e4, trained on 64 tokens (pairs 0..4 complete a period
// within them: periods 6.3 .. 62.8), 24 evaluation sequences at `lengths`.
inline RecipeConfig LookbackRecipe(const std::string& lengths) {
  return TinyCopyRecipe({"task.name=lookback_lm", "task.vocab=16", "model.encodings=rope",
                         "model.d_model=32", "model.n_heads=1", "model.n_layers=1",
                         "train.max_length=64", "eval.lengths=" + lengths, "eval.samples=24",
                         "probe.lengths=64,256", "probe.replay=0"});
}

// A reader of the repeated token on LookbackRecipe: pairs 0..4 point each row at distance 23 (B
// cos((d - 23) theta_k)), where the token it predicts is repeated from; pairs 8..15 add -A
// cos(d theta_k), nearly flat over the trained distances and rising far beyond them (A = 0:
// none). The value path writes the attended token with value_gain, the head reads it with a
// margin that makes p(repeat) about 0.8.
inline std::string LookbackReader(const std::filesystem::path& dir, const std::string& name,
                                  double B, double A, const std::string& lengths = "64,256,512",
                                  double value_gain = 10) {
  return PlantedRun(LookbackRecipe(lengths), "rope", dir, name, [&](PlantedWeights& w) {
    const Plant p{32, 18};  // 16 symbols, separator and blank
    std::vector<double> amplitude(16, 0.0), phase(16, 0.0);
    for (int k = 0; k < 5; ++k) {
      amplitude[k] = B;
      phase[k] = 23 * RopeTheta(k, 32, 1e4);
    }
    for (int k = 8; k < 16; ++k) {
      amplitude[k] = A;
      phase[k] = 3.14159265358979323846;
    }
    p.Pattern(w, amplitude, phase);
    p.ReadAttendedToken(w, value_gain, 0.75);
  });
}

}  // namespace lexp::testing
