#include "experiments/replay/entropy_variants.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "analysis/attention_stats.h"
#include "experiments/replay/model_replay.h"
#include "nn/check.h"
#include "nn/parallel.h"
#include "pe/registry.h"
#include "pe/rope.h"

namespace lexp {

EntropyVariants EntropyUnderVariants(const std::string& run_file) {
  EntropyVariants out;
  const TrainedRun run = ReadTrainedRun(run_file);
  ModelReplay plain(run);
  const RecipeConfig& cfg = plain.config();
  const std::string enc = plain.encoding_name();
  const auto probe_lengths = cfg.ProbeLengths();
  out.length = *std::max_element(probe_lengths.begin(), probe_lengths.end());
  out.sequence_length = plain.SequenceLength(out.length);
  out.input_tokens = plain.InputTokens(out.length);
  out.train_tokens = plain.SequenceLength(cfg.train_max_length);
  out.layers = cfg.model.n_layers;
  out.heads = cfg.model.n_heads;
  const bool rotary = IsRopeEncoding(enc);
  const double factor = static_cast<double>(out.sequence_length) / out.train_tokens;
  const std::string opt = "encoding_options." + enc + ".";

  {  // The run's own evaluation-time rules, which every variant keeps.
    std::vector<std::string> own;
    const auto options = cfg.encoding_options.find(enc);
    if (options != cfg.encoding_options.end()) {
      const auto value = [&](const std::string& key) {
        const auto it = options->second.find(key);
        std::string v = it == options->second.end() ? "" : it->second;
        v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
        return v;
      };
      if (!value("scaling").empty() && value("scaling") != "none")
        own.push_back("scaling " + value("scaling") +
                      (value("factor").empty() ? "" : " factor " + value("factor")));
      if (value("log_n") == "true") own.push_back("log-n");
    }
    if (cfg.log_n != 0) own.push_back("log-n");
    if (cfg.pattern != "full") own.push_back("pattern " + cfg.pattern);
    if (!own.empty()) {
      out.run_rule.clear();
      for (const auto& o : own) out.run_rule += (out.run_rule.empty() ? "" : ", ") + o;
    }
  }
  const std::string with_own =
      out.run_rule == "none" ? "" : " (with the run's own " + out.run_rule + ")";

  std::vector<EntropyVariant> vs(4);
  vs[0].name = "plain";
  vs[0].description = "the trained model as evaluated" + with_own;
  vs[1].name = "log_n";
  vs[1].description = "logits of the query at p times max(1, ln(p+1)/ln L)" + with_own;
  vs[1].overrides = {opt + "log_n=true"};
  if (!rotary) vs[1].not_applicable = "log-n scaling is a rope option; '" + enc + "' is not rope";
  vs[2].name = "yarn";
  vs[2].description = fmt::format("YaRN frequencies and temperature, factor {:.3g}", factor) +
                      (out.run_rule == "none" ? ""
                                              : " (in place of the run's frequency rule; the "
                                                "run's own " + out.run_rule + " otherwise kept)");
  vs[2].overrides = {opt + "scaling=yarn", opt + fmt::format("factor={:.6g}", factor)};
  if (!rotary) vs[2].not_applicable = "YaRN is a rope scaling rule; '" + enc + "' is not rope";
  if (rotary && factor <= 1)
    vs[2].not_applicable = "the longest probe is not longer than the training length";
  vs[3].name = "lambda";
  vs[3].description =
      fmt::format("Lambda mask: 2 global tokens + window {}", out.train_tokens) + with_own;
  vs[3].overrides = {"model.pattern=lambda", "model.pattern_when=eval",
                     fmt::format("model.pattern_window={}", out.train_tokens),
                     "model.pattern_global=2"};
  if (!FindEncoding(enc).cannot_remap.empty())
    vs[3].not_applicable = "the Lambda mask shows global keys at a capped distance, which '" + enc +
                           "' cannot do: " + FindEncoding(enc).cannot_remap;
  // The variants are independent replays of the one run read: they run in parallel, each
  // filling its own entry (the same numbers whatever the thread count).
  ParallelFor(static_cast<long>(vs.size()), [&](long index) {
    EntropyVariant& v = vs[static_cast<size_t>(index)];
    if (!v.not_applicable.empty()) return;
    try {
      ModelReplay replay(run, v.overrides);
      const int L = out.layers, H = out.heads, T = out.sequence_length;
      v.entropy.assign(static_cast<size_t>(L) * H * T, 0.0);
      v.visible.assign(T, 0.0);
      int sequences = 0;
      replay.ForEachProbeSequence(out.length, [&](int s, int T_seq) {
        ++sequences;
        for (int l = 0; l < L; ++l) {
          const MatF& z = replay.model().Logits(l);  // [H*T, T]
          for (int h = 0; h < H; ++h)
            for (int i = 0; i < T_seq; ++i) {
              const AttentionRowStats st =
                  RowStats(z.data() + (static_cast<long>(h) * T_seq + i) * T_seq, T_seq);
              v.entropy[(static_cast<size_t>(l) * H + h) * T + i] += st.entropy;
              if (s == 0 && l == 0 && h == 0) v.visible[i] = st.visible;
            }
        }
      });
      for (double& e : v.entropy) e /= std::max(1, sequences);
    } catch (const InputError& e) {  // the variant refused for this run (its recipe's reason)
      v.not_applicable = e.what();
      v.entropy.clear();
      v.visible.clear();
    }
  });
  out.variants = std::move(vs);
  return out;
}

std::string WriteEntropyVariants(const EntropyVariants& ev, const h5::Group& analysis) {
  analysis.Remove("entropy_variants");
  h5::Group g = analysis.CreateGroup("entropy_variants");
  g.SetAttr("length", ev.length);
  g.SetAttr("sequence_length", ev.sequence_length);
  g.SetAttr("input_tokens", ev.input_tokens);
  g.SetAttr("train_tokens", ev.train_tokens);
  g.SetAttr("run_rule", ev.run_rule);
  g.SetAttr("source",
            "replay of the probe at its longest length (experiments/replay/entropy_variants.h)");
  std::string report, done;
  const uint64_t L = ev.layers, H = ev.heads, T = ev.sequence_length;
  for (const auto& v : ev.variants) {
    if (!v.not_applicable.empty()) {
      g.SetAttr("not_applicable_" + v.name, v.not_applicable);
      report += "entropy under " + v.name + ": not applicable: " + v.not_applicable + "\n";
      continue;
    }
    h5::Group vg = g.CreateGroup(v.name);
    vg.SetAttr("description", v.description);
    std::string over;
    for (const auto& o : v.overrides) over += (over.empty() ? "" : " ") + o;
    vg.SetAttr("overrides", over);
    vg.WriteDoubles("entropy_by_query", v.entropy, {L, H, T}, "layer,head,query",
                    "nats over the keys the query may see, mean over probe sequences");
    vg.WriteDoubles("visible_keys", v.visible, {T}, "query", "keys the query may see");
    double last = 0;
    for (uint64_t lh = 0; lh < L * H; ++lh) last += v.entropy[lh * T + T - 1] / (L * H);
    // Uniform attention over the keys this variant lets the last query see (the Lambda mask sees
    // far fewer than T).
    done += fmt::format("{}{} {:.2f} (uniform {:.2f})", done.empty() ? "" : ", ", v.name, last,
                        std::log(std::max(1.0, v.visible[T - 1])));
  }
  report += fmt::format("entropy of the last query at {} tokens (mean over heads): {}\n",
                        ev.sequence_length, done);
  return report;
}

}  // namespace lexp
