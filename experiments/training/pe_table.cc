#include "experiments/training/pe_table.h"

#include <filesystem>

#include "experiments/core/provenance.h"
#include "experiments/core/run_file.h"
#include "experiments/training/trainer.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "pe/alibi.h"
#include "pe/kerple.h"
#include "pe/registry.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"
#include "pe/sandwich.h"
#include "pe/t5.h"

namespace lexp {

std::string WritePeTable(const PeTableOptions& o) {
  LEXP_INPUT_CHECK(o.head_dim >= 2 && o.head_dim % 2 == 0, "pe-table: --head-dim must be even");
  LEXP_INPUT_CHECK(o.max_distance >= 1, "pe-table: --max-distance must be positive");
  LEXP_INPUT_CHECK(o.heads >= 1, "pe-table: --heads " + std::to_string(o.heads) +
                                     ": the bias families need at least 1 head");
  LEXP_INPUT_CHECK(o.train_length >= 1, "pe-table: --train-length " +
                                            std::to_string(o.train_length) +
                                            ": the scaling rules need a training length >= 1");
  LEXP_INPUT_CHECK(o.factor > 0, "pe-table: --factor must be positive");
  h5::Writer w(o.out_file);
  WriteProvenance(w.root(), ThreadLimit::Active());
  w.root().SetAttr("head_dim", o.head_dim);
  w.root().SetAttr("base", o.base);
  w.root().SetAttr("train_length", o.train_length);
  w.root().SetAttr("factor", o.factor);
  w.root().SetAttr("heads", o.heads);

  const std::vector<std::string> rules = {
      "none", "pi", "ntk", "ntk_by_parts", "yarn", "truncated_basis", "llama3"};
  const uint64_t P = o.head_dim / 2;
  std::vector<double> freq, mscale;
  std::string names;
  for (const auto& r : rules) {
    RopeScalingConfig c;
    c.rule = r;
    c.factor = o.factor;
    c.original_length = o.train_length;
    const ScaledFrequencies f = ScaleRope(o.head_dim, o.base, c, o.train_length);
    freq.insert(freq.end(), f.inv_freq.begin(), f.inv_freq.end());
    mscale.push_back(f.mscale);
    names += (names.empty() ? "" : ",") + r;
  }
  h5::Group rot = w.root().CreateGroup("rotary");
  rot.SetAttr("rules", names);
  rot.WriteDoubles("inv_freq", freq, {rules.size(), P}, "rule,pair", "radians per position");
  rot.WriteDoubles("mscale", mscale, {rules.size()}, "rule",
                   "factor on cos and sin (logits get its square)");
  std::vector<double> wavelength(freq.size());
  for (size_t i = 0; i < freq.size(); ++i)
    wavelength[i] = freq[i] > 0 ? 6.283185307179586 / freq[i] : 0;
  rot.WriteDoubles("wavelength", wavelength, {rules.size(), P}, "rule,pair",
                   "tokens per rotation (0 where the pair does not rotate)");

  // Bias families at fixed, documented parameters, b_h(d) for d = 0..max_distance.
  h5::Group bias = w.root().CreateGroup("bias");
  const uint64_t H = o.heads, Dn = o.max_distance + 1;
  EncodingShape es{o.head_dim * o.heads, o.heads, 1, true, o.max_distance + 1, o.train_length};
  auto write = [&](const std::string& name, const std::function<double(int, int)>& b,
                   const std::string& note) {
    std::vector<double> v(H * Dn);
    for (int h = 0; h < o.heads; ++h)
      for (int d = 0; d <= o.max_distance; ++d) v[h * Dn + d] = b(h, d);
    bias.WriteDoubles(name, v, {H, Dn}, "head,distance", "logit added after 1/sqrt(D)");
    bias.SetChildAttr(name, "parameters", note);
  };
  const auto slopes = AlibiSlopes(o.heads);
  write(
      "alibi", [&](int h, int d) { return -slopes[h] * d; }, "reference slopes");
  auto sandwich = CreateEncoding<double>("sandwich", {}, es);
  const auto& sw = dynamic_cast<const Sandwich<double>&>(*sandwich);
  write(
      "sandwich", [&](int h, int d) { return sw.Bias(h, d); }, "NeMo form, base 10000");
  auto kl = CreateEncoding<double>("kerple_log", {}, es);
  auto kp = CreateEncoding<double>("kerple_power", {}, es);
  auto& klr = dynamic_cast<Kerple<double>&>(*kl);
  auto& kpr = dynamic_cast<Kerple<double>&>(*kp);
  for (int h = 0; h < o.heads; ++h) {
    klr.SetParams(h, 1.0 + h, 1.0);                    // r1 = 1 + h, r2 = 1
    kpr.SetParams(h, 1.0, 0.25 + 0.25 * (h % 8) / 2);  // r1 = 1, r2 in [0.25, 1.125]
  }
  write(
      "kerple_log", [&](int h, int d) { return klr.Bias(h, d); }, "r1 = 1 + h, r2 = 1");
  write(
      "kerple_power", [&](int h, int d) { return kpr.Bias(h, d); },
      "r1 = 1, r2 = 0.25 + 0.125 (h mod 8)");
  write(
      "t5_bucket", [&](int, int d) { return T5Bucket(-d, false, 32, 128); },
      "causal bucket index (32 buckets, max_distance 128); the bias is learned per bucket");
  // Learned biases: b at query i = d, key 0 (FIRE normalises by max(L, i), so for it b depends on
  // i as well as on d; this is the first key as seen from position d).
  if (!o.runs.empty()) {
    h5::Group learned = w.root().CreateGroup("learned");
    for (const auto& file : o.runs) {
      std::string name;
      EncodingShape es_run;
      auto enc = LoadTrainedEncoding(file, &name, &es_run);
      // The registry's relative-bias family: a content-free b(h, d) added to the logits.
      std::string allowed;
      for (const auto& info : ListEncodings())
        if (info.family == "relative bias") allowed += (allowed.empty() ? "" : ", ") + info.name;
      LEXP_INPUT_CHECK(FindEncoding(name).family == "relative bias",
                       "pe-table --run '" + file + "': encoding '" + name +
                           "' has no content-free bias b(d) to tabulate (allowed: " + allowed +
                           ")");
      std::vector<double> pos(Dn);
      for (uint64_t t = 0; t < Dn; ++t) pos[t] = static_cast<double>(t);
      enc->Prepare(pos, PositionSpan(pos));
      const AttentionPattern causal(true);
      const uint64_t L = es_run.n_layers, Hr = es_run.n_heads;
      std::vector<double> v(L * Hr * Dn);
      for (uint64_t l = 0; l < L; ++l)
        for (uint64_t h = 0; h < Hr; ++h) {
          AttentionContext ctx{static_cast<int>(l),
                               static_cast<int>(h),
                               static_cast<int>(Hr),
                               es_run.d_model / es_run.n_heads,
                               static_cast<int>(Dn),
                               pos.data(),
                               &causal,
                               true};
          for (uint64_t d = 0; d < Dn; ++d) {
            double s = 0;
            enc->AddLogitTerm(ctx, static_cast<int>(d), static_cast<int>(d) + 1, 0, 1,
                              HeadQK<double>{nullptr, nullptr, 0}, &s, 1);
            v[(l * Hr + h) * Dn + d] = s;
          }
        }
      const std::string label = std::filesystem::path(file).stem().string();
      learned.WriteDoubles(label, v, {L, Hr, Dn}, "layer,head,distance",
                           "learned logit bias at query d, key 0");
      learned.SetChildAttr(label, "encoding", name);
      learned.SetChildAttr(label, "run_file", file);
      learned.SetChildAttr(label, "train_length", std::to_string(es_run.train_length));
    }
  }
  w.Commit();
  return o.out_file;
}

}  // namespace lexp
