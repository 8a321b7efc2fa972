#include "experiments/training/longrope_search.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "experiments/core/evaluation.h"
#include "experiments/replay/model_replay.h"
#include "nn/check.h"
#include "nn/ops/cross_entropy.h"
#include "nn/rng.h"
#include "pe/patterns.h"
#include "pe/rope.h"

namespace lexp {

std::vector<double> LongropeCandidate::Factors() const {
  std::vector<double> f;
  for (int u : units) f.push_back(u / 100.0);
  return f;
}

std::string LongropeCandidate::FactorText() const {
  std::string s;
  for (int u : units) s += fmt::format("{}{}.{:02d}", s.empty() ? "" : ", ", u / 100, u % 100);
  return s;
}

namespace {

using Key = std::pair<std::vector<int>, int>;

bool NonDecreasing(const std::vector<int>& u) { return std::is_sorted(u.begin(), u.end()); }

// The evolution's state: the grid, the candidates already scored (the reference's `history`: no
// candidate is scored twice) and the stream every random choice comes from.
class Evolution {
 public:
  Evolution(const LongropeSearchSettings& s,
            const std::function<double(const std::vector<double>&, int)>& loss)
      : s_(s), loss_(loss), rng_(Rng(s.seed).Split("longrope_search")),
        hi_(static_cast<int>(std::floor(125.0 * s.factor + 1e-9))) {}

  int upper() const { return hi_; }
  int evaluated() const { return evaluated_; }

  // A seeded vector put on the grid: each factor rounded to 0.01 within [1, 1.25 s], then the
  // running maximum (non-decreasing).
  std::vector<int> OnGrid(const std::vector<double>& f) const {
    std::vector<int> u;
    for (double v : f) {
      int x = static_cast<int>(std::lround(v * 100));
      x = std::clamp(x, 100, hi_);
      u.push_back(u.empty() ? x : std::max(u.back(), x));
    }
    return u;
  }

  LongropeCandidate Score(std::vector<int> units, int start_tokens) {
    LongropeCandidate c;
    c.units = std::move(units);
    c.start_tokens = start_tokens;
    seen_.insert({c.units, start_tokens});
    c.loss = loss_(c.Factors(), start_tokens);
    if (!std::isfinite(c.loss)) c.loss = std::numeric_limits<double>::infinity();
    ++evaluated_;
    return c;
  }
  bool Seen(const std::vector<int>& u, int n) const { return seen_.count({u, n}) > 0; }

  // dim_mono.py's mutation: on each pass, with probability 0.3, every factor in turn is drawn anew
  // between its neighbours (the first from 1, the last up to 1.25 s), so the vector stays
  // non-decreasing; the paper's n-hat is drawn anew from its choices with the same probability.
  // Passes repeat until the candidate is new; none after 1000 passes: nullopt.
  std::optional<LongropeCandidate> Mutate(const LongropeCandidate& parent) {
    std::vector<int> u = parent.units;
    int n = parent.start_tokens;
    for (int pass = 0; pass < 1000; ++pass) {
      if (rng_.Uniform() < 0.3) {
        for (size_t d = 0; d < u.size(); ++d) {
          const int lo = d == 0 ? 100 : u[d - 1];
          const int hi = d + 1 == u.size() ? hi_ : u[d + 1];
          u[d] = static_cast<int>(rng_.UniformInt(lo, std::max(lo, hi)));
        }
      }
      if (s_.start_token_choices.size() > 1 && rng_.Uniform() < 0.3)
        n = s_.start_token_choices[static_cast<size_t>(
            rng_.UniformInt(0, static_cast<int64_t>(s_.start_token_choices.size()) - 1))];
      if (!Seen(u, n) && NonDecreasing(u)) return Score(u, n);
    }
    return std::nullopt;
  }

  // dim_mono.py's crossover: up to `crossover_tries` passes over the genes, each taken with
  // probability 0.3 and then from the second parent with probability 0.5; the first new,
  // non-decreasing vector is the child.
  std::optional<LongropeCandidate> Crossover(const LongropeCandidate& a,
                                             const LongropeCandidate& b) {
    if (a.units == b.units && a.start_tokens == b.start_tokens) return std::nullopt;
    std::vector<int> u = a.units;
    int n = a.start_tokens;
    for (int t = 0; t < s_.crossover_tries; ++t) {
      for (size_t i = 0; i <= u.size(); ++i) {
        if (rng_.Uniform() >= 0.3) continue;
        if (rng_.Uniform() < 0.5) {
          if (i < u.size())
            u[i] = b.units[i];
          else
            n = b.start_tokens;
        }
        if (Seen(u, n) || !NonDecreasing(u)) continue;
        return Score(u, n);
      }
    }
    return std::nullopt;
  }

  Rng& rng() { return rng_; }

 private:
  const LongropeSearchSettings& s_;
  const std::function<double(const std::vector<double>&, int)>& loss_;
  Rng rng_;
  int hi_;
  std::set<Key> seen_;
  int evaluated_ = 0;
};

// Best first; ties keep the earlier candidate (stable), so a flat objective keeps the seeds.
void SortByLoss(std::vector<LongropeCandidate>& p) {
  std::stable_sort(p.begin(), p.end(), [](const LongropeCandidate& x, const LongropeCandidate& y) {
    return x.loss < y.loss;
  });
}

}  // namespace

LongropeSearchResult EvolveLongropeFactors(
    const std::vector<std::vector<double>>& initial, const LongropeSearchSettings& settings,
    const std::function<double(const std::vector<double>& factors, int start_tokens)>& loss,
    const std::function<void(const std::string&)>& progress) {
  LEXP_INPUT_CHECK(settings.factor > 1, "LongRoPE's search needs an extension factor s > 1, got " +
                                            fmt::format("{}", settings.factor));
  LEXP_INPUT_CHECK(!initial.empty() && !initial[0].empty(),
                   "LongRoPE's search needs at least one seeded factor vector");
  LEXP_INPUT_CHECK(settings.population >= 2 && settings.parents >= 2 &&
                       settings.parents <= settings.population && settings.iterations >= 0 &&
                       settings.mutations >= 0 && settings.crossovers >= 0,
                   "LongRoPE's search needs population >= parents >= 2 and iterations, "
                   "mutations, crossovers >= 0");
  Evolution evo(settings, loss);
  LongropeSearchResult r;
  std::vector<LongropeCandidate> population;
  for (const auto& f : initial) {
    LEXP_CHECK(f.size() == initial[0].size(), "seeded factor vectors of different lengths");
    const std::vector<int> u = evo.OnGrid(f);
    if (evo.Seen(u, 0)) continue;
    population.push_back(evo.Score(u, 0));
    r.initial.push_back(population.back());
  }
  const size_t seeded = population.size();
  for (size_t i = 0; population.size() < static_cast<size_t>(settings.population); ++i) {
    auto child = evo.Mutate(population[i % seeded]);
    if (!child) break;  // the grid is exhausted
    population.push_back(*child);
  }
  for (int it = 0; it < settings.iterations; ++it) {
    SortByLoss(population);
    population.resize(std::min(population.size(), static_cast<size_t>(settings.parents)));
    r.best_loss.push_back(population[0].loss);
    if (progress && (it % 10 == 0))
      progress(fmt::format("LongRoPE search: iteration {}/{}, best loss {:.4f} ({} candidates "
                           "scored)",
                           it, settings.iterations, population[0].loss, evo.evaluated()));
    const std::vector<LongropeCandidate> parents = population;
    const auto pick = [&] {
      return static_cast<size_t>(
          evo.rng().UniformInt(0, static_cast<int64_t>(parents.size()) - 1));
    };
    for (int j = 0; j < settings.mutations; ++j)
      if (auto c = evo.Mutate(parents[pick()])) population.push_back(*c);
    for (int j = 0; j < settings.crossovers && parents.size() >= 2; ++j) {
      size_t a = pick(), b = pick();
      while (b == a) b = pick();
      if (a > b) std::swap(a, b);
      auto c = evo.Crossover(parents[a], parents[b]);
      if (!c) c = evo.Mutate(parents[a]);  // the reference's fallback
      if (c) population.push_back(*c);
    }
  }
  SortByLoss(population);
  r.best = population[0];
  r.best_loss.push_back(r.best.loss);
  r.evaluated = evo.evaluated();
  return r;
}

bool ParseLongropeSearch(const std::string& long_factors, LongropeSearchRequest* request) {
  const std::string head = long_factors.substr(0, long_factors.find(':'));
  auto trim = [](std::string x) {
    x.erase(0, x.find_first_not_of(' '));
    x.erase(x.find_last_not_of(' ') + 1);
    return x;
  };
  if (trim(head) != "search") return false;
  LongropeSearchRequest q;
  const auto colon = long_factors.find(':');
  if (colon != std::string::npos) {
    std::stringstream ss(long_factors.substr(colon + 1));
    for (std::string item; std::getline(ss, item, ',');) {
      const auto eq = item.find('=');
      const std::string key = trim(item.substr(0, eq));
      const std::string value = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
      int* field = key == "length"       ? &q.length
                   : key == "samples"    ? &q.samples
                   : key == "iterations" ? &q.iterations
                   : key == "population" ? &q.population
                                         : nullptr;
      LEXP_INPUT_CHECK(field, "long_factors = \"" + long_factors + "\": unknown key '" + key +
                                  "'; allowed: search[:length=L,samples=S,iterations=I,"
                                  "population=P]");
      size_t used = 0;
      int v = -1;
      try {
        v = std::stoi(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      LEXP_INPUT_CHECK(used == value.size() && used > 0 && v >= 0,
                       "long_factors = \"" + long_factors + "\": " + key + " = '" + value +
                           "' is not a whole number >= 0");
      *field = v;
    }
  }
  LEXP_INPUT_CHECK(q.samples >= 1, "long_factors = \"" + long_factors +
                                       "\": samples must be at least 1 sequence");
  LEXP_INPUT_CHECK(q.population >= 4 && q.population % 4 == 0,
                   "long_factors = \"" + long_factors +
                       "\": population must be a multiple of 4, at least 4 (half of it parents, a "
                       "quarter each mutated and crossed over)");
  *request = q;
  return true;
}

LongropeSearchResult SearchLongropeFactors(const TrainedRun& run, RecipeConfig& cfg,
                                           const LongropeSearchRequest& request,
                                           const std::function<void(const std::string&)>& progress) {
  LEXP_INPUT_CHECK(run.encoding == "rope", "long_factors = \"search\" applies to rope runs; '" +
                                               run.path + "' was trained with '" + run.encoding +
                                               "'");
  auto& rope = cfg.encoding_options["rope"];
  LEXP_INPUT_CHECK(rope.count("scaling") && rope.at("scaling") == "longrope",
                   "long_factors = \"search\" needs encoding_options.rope.scaling = \"longrope\"");
  const double s = rope.count("factor") ? std::stod(rope.at("factor")) : 1.0;
  LEXP_INPUT_CHECK(s > 1, "long_factors = \"search\" needs encoding_options.rope.factor = s > 1, "
                          "the extension the factors are searched for");
  // Every candidate is the run's model with rope's options set anew; the base recipe is the
  // evaluation's without the search's own options.
  TrainedRun base = run;
  base.recipe = cfg;
  // The search reads the run's own training task, whatever task of its family the evaluation
  // reads (lexp eval --set task.name=...).
  base.recipe.task = run.recipe.task;
  base.recipe.tasks = run.recipe.tasks;
  auto& base_rope = base.recipe.encoding_options["rope"];
  for (const char* k : {"scaling", "factor", "long_factors", "start_tokens"}) base_rope.erase(k);
  const int n = request.length > 0
                    ? request.length
                    : static_cast<int>(std::lround(s * cfg.train_max_length));
  auto rule = [&](const std::string& name, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> o = {"encoding_options.rope.scaling=\"" + name + "\""};
    for (const auto& e : extra) o.push_back(e);
    return o;
  };
  auto frequencies = [&](const std::vector<std::string>& overrides) {
    ModelReplay m(base, overrides);
    const auto* r = dynamic_cast<const Rope<float>*>(&m.encoding());
    LEXP_INPUT_CHECK(r, "long_factors = \"search\" needs rope's own position ids (the run's "
                        "encoding is wrapped by its position scheme)");
    return r->inverse_frequencies();
  };
  const std::string factor = fmt::format("encoding_options.rope.factor={}", rope.at("factor"));
  const std::vector<double> plain = frequencies(rule("none"));
  std::vector<std::vector<double>> initial;
  for (const char* r : {"pi", "ntk", "yarn"}) {  // the paper's seeded individuals
    const std::vector<double> f = frequencies(rule(r, {factor}));
    std::vector<double> lambda;
    for (size_t k = 0; k < plain.size(); ++k) lambda.push_back(plain[k] / f[k]);
    initial.push_back(lambda);
  }
  // The scored sequences: drawn once from the training data, the same for every candidate.
  ModelReplay first(base, rule("none"));
  Rng data = Rng(cfg.seed).Split("longrope_search_data").Split(static_cast<uint64_t>(n));
  std::vector<Batch> batches;
  for (int done = 0; done < request.samples; done += cfg.eval_batch_size)
    batches.push_back(first.parts().layout->MakeBatch(
        n, std::min(cfg.eval_batch_size, request.samples - done), data, -1));
  EvalBuffers buf;
  auto loss = [&](const std::vector<double>& lambda, int start_tokens) {
    std::string text;
    for (double v : lambda) text += fmt::format("{}{:.2f}", text.empty() ? "" : ",", v);
    ModelReplay m(base, rule("longrope", {factor, "encoding_options.rope.long_factors=\"" + text +
                                                      "\"",
                                          fmt::format("encoding_options.rope.start_tokens={}",
                                                      start_tokens)}));
    Rng positions = Rng(cfg.seed).Split("longrope_search_positions");
    double sum = 0;
    long count = 0;
    for (const Batch& b : batches) {
      m.parts().encoding->PositionIds(b.T, false, positions, buf.pos);
      m.parts().model->Forward(b.tokens, b.B, b.T, buf.pos, false, false, buf.logits);
      const CrossEntropyResult ce = CrossEntropyForwardBackward<float>(
          buf.logits, b.targets, b.graded, nullptr, &buf.row_loss, nullptr);
      sum += ce.loss_sum;
      count += ce.count;
    }
    return count > 0 ? sum / count : std::numeric_limits<double>::infinity();
  };
  LongropeSearchSettings settings;
  settings.factor = s;
  settings.iterations = request.iterations;
  settings.population = request.population;
  // The reference's proportions: half the population are parents, a quarter each mutated and
  // crossed over.
  settings.parents = std::max(2, request.population / 2);
  settings.mutations = request.population / 4;
  settings.crossovers = request.population / 4;
  settings.seed = static_cast<uint64_t>(cfg.seed);
  // A pattern that remaps distances refuses n-hat > 0 (a logit would depend on positions, not on
  // the distance alone): n-hat stays 0 there.
  if (PatternRemapsDistances(cfg.pattern)) settings.start_token_choices = {0};
  settings.start_token_choices.erase(
      std::remove_if(settings.start_token_choices.begin(), settings.start_token_choices.end(),
                     [&](int v) { return v >= n; }),
      settings.start_token_choices.end());
  if (progress)
    progress(fmt::format("LongRoPE search: s = {}, {} sequences of length {} from the training "
                         "data, population {}, {} iterations",
                         s, request.samples, n, settings.population, settings.iterations));
  LongropeSearchResult r = EvolveLongropeFactors(initial, settings, loss, progress);
  if (progress) {
    std::string seeds;
    for (const LongropeCandidate& c : r.initial)  // PI, NTK, YaRN (a duplicate is scored once)
      seeds += fmt::format("{}{:.4f}", seeds.empty() ? "" : ", ", c.loss);
    progress(fmt::format("LongRoPE search: best loss {:.4f} at n = {} (seeded PI, NTK, YaRN: {}), n-hat = {}, "
                         "factors {}",
                         r.best.loss, n, seeds, r.best.start_tokens, r.best.FactorText()));
  }
  rope["long_factors"] = r.best.FactorText();
  rope["start_tokens"] = std::to_string(r.best.start_tokens);
  return r;
}

}  // namespace lexp
