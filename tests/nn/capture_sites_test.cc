// Capture sites (nn/model/capture_sites.h) on every registered encoding: each site holds what its
// name says, checked against the identities that tie the sites together (the residual sums, the
// softmax, the value mixture, the projections), and capturing changes no output bit.
#include "nn/model/capture_sites.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "nn/model/transformer.h"
#include "pe/registry.h"

namespace lexp {
namespace {

constexpr int kB = 2, kT = 6;

struct Captured {
  std::map<std::string, std::vector<float>> sites;  // sequence 1 of the batch
  MatD logits, plain_logits;                        // with sites, and attention capture only
  std::map<std::string, std::vector<double>> params;
  ModelConfig cfg;
  unsigned enc_sites = 0;
};

Captured Capture(const std::string& encoding, bool pre_ln) {
  Captured c;
  c.cfg.vocab = 7;
  c.cfg.d_model = 8;
  c.cfg.n_heads = 2;
  c.cfg.n_layers = 2;
  c.cfg.d_ff = 12;
  c.cfg.pre_ln = pre_ln;
  c.cfg.causal = true;
  // Tokens 0..2 are digits for the encodings that number them (abacus).
  const EncodingShape es{c.cfg.d_model, c.cfg.n_heads, c.cfg.n_layers, true, 16, 6, c.cfg.vocab, 3};
  std::map<std::string, std::string> options;
  if (encoding == "rope_partial") options["fraction"] = "0.5";
  auto enc = CreateEncoding<double>(encoding, options, es);
  c.enc_sites = enc->Sites();
  Transformer<double> model(c.cfg, enc.get());
  Rng rng(5);
  model.Init(rng);
  std::vector<int> tokens(kB * kT);
  for (auto& t : tokens) t = static_cast<int>(rng.UniformInt(0, 6));
  std::vector<double> pos;
  enc->PositionIds(kT, false, rng, pos);
  // The probe's pass captures attention (a plain evaluation streams over keys with an online
  // softmax, another summation order); sites on top of it must change nothing.
  model.Forward(tokens, kB, kT, pos, false, true, c.plain_logits);
  model.set_capture_sites(true);
  model.Forward(tokens, kB, kT, pos, false, true, c.logits);
  for (const CaptureSite& s : CaptureSites(c.cfg, kT)) {
    c.sites[s.name] = ReadCaptureSite(model, s.name, 1, kT);
    size_t n = 1;
    for (uint64_t d : s.dims) n *= d;
    EXPECT_EQ(c.sites[s.name].size(), n) << s.name;
  }
  for (const auto& p : model.Parameters()) {
    c.params[p.name] = std::vector<double>(p.value, p.value + p.size);
    // Files store every parameter with its shape and axes: they must describe its elements.
    uint64_t n = 1;
    for (uint64_t d : p.shape) n *= d;
    EXPECT_EQ(n, static_cast<uint64_t>(p.size)) << p.name;
    EXPECT_EQ(static_cast<size_t>(std::count(p.axes.begin(), p.axes.end(), ',') + 1),
              p.shape.size())
        << p.name << " " << p.axes;
  }
  return c;
}

// |a - b| within float rounding of values of this size.
void ExpectClose(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 2e-5 * (1 + std::abs(b))) << what;
}

class CaptureSitesOf : public ::testing::TestWithParam<std::string> {};

TEST_P(CaptureSitesOf, EverySiteHoldsWhatItsNameSays) {
  const std::string enc = GetParam();
  for (const bool pre_ln : {true, false}) {
    const Captured c = Capture(enc, pre_ln);
    const auto& s = c.sites;
    const int C = c.cfg.d_model, H = c.cfg.n_heads, D = c.cfg.HeadDim(), F = c.cfg.FF();
    EXPECT_EQ(c.logits, c.plain_logits) << "capturing sites changed the output";
    for (int l = 0; l < c.cfg.n_layers; ++l) {
      const std::string p = "layer" + std::to_string(l) + ".";
      if (l + 1 < c.cfg.n_layers) {
        EXPECT_EQ(s.at(p + "resid_post"), s.at("layer" + std::to_string(l + 1) + ".resid_pre"));
      }
      const std::vector<float>&pre = s.at(p + "resid_pre"), &post = s.at(p + "resid_post"),
            &aout = s.at(p + "attn.out"), &mout = s.at(p + "mlp.out");
      if (pre_ln)  // x_out = x_in + attention branch + MLP branch
        for (int i = 0; i < kT * C; ++i)
          ExpectClose(post[i], pre[i] + aout[i] + mout[i], p + "sum");
      // attn.out = z Wproj + bproj.
      {
        const auto &wp = c.params.at(p + "attn.proj.w"), &bp = c.params.at(p + "attn.proj.b");
        const auto& zz = s.at(p + "attn.z");
        for (int t = 0; t < kT; ++t)
          for (int o = 0; o < C; ++o) {
            double y = bp[o];
            for (int k = 0; k < C; ++k) y += zz[t * C + k] * wp[k * C + o];
            ExpectClose(aout[t * C + o], y, p + "attn.out");
          }
      }
      // Without a logit term or scale (NoPE), the logit is q_pe.k_pe / sqrt(D).
      if (enc == "nope") {
        const auto &qp = s.at(p + "attn.q_pe"), &kp = s.at(p + "attn.k_pe"),
                   &lg = s.at(p + "attn.logits");
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < kT; ++i)
            for (int j = 0; j <= i; ++j) {
              double dot = 0;
              for (int d = 0; d < D; ++d) dot += qp[(i * H + h) * D + d] * kp[(j * H + h) * D + d];
              ExpectClose(lg[(h * kT + i) * kT + j], dot / std::sqrt(double(D)), p + "logit");
            }
      }
      // mlp.out = hidden W2 + b2.
      const auto &w2 = c.params.at(p + "mlp.fc2.w"), &b2 = c.params.at(p + "mlp.fc2.b");
      const auto& hidden = s.at(p + "mlp.hidden");
      for (int t = 0; t < kT; ++t)
        for (int o = 0; o < C; ++o) {
          double y = b2[o];
          for (int f = 0; f < F; ++f) y += hidden[t * F + f] * w2[f * C + o];
          ExpectClose(mout[t * C + o], y, p + "mlp.out");
        }
      // pattern = softmax(logits) over the keys each query sees (causal: j <= i).
      const auto &z = s.at(p + "attn.logits"), &pr = s.at(p + "attn.pattern");
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < kT; ++i) {
          const float* row = z.data() + (h * kT + i) * kT;
          double m = -INFINITY, sum = 0;
          for (int j = 0; j <= i; ++j) m = std::max(m, static_cast<double>(row[j]));
          for (int j = 0; j <= i; ++j) sum += std::exp(row[j] - m);
          for (int j = 0; j < kT; ++j) {
            const double want = j <= i ? std::exp(row[j] - m) / sum : 0.0;
            ExpectClose(pr[(h * kT + i) * kT + j], want, p + "pattern");
            if (j > i) {
              EXPECT_TRUE(std::isinf(row[j]) && row[j] < 0) << p << "masked logit";
            }
          }
        }
      // z = sum_j p_ij v_j, unless the encoding adds a value term.
      if (!(c.enc_sites & kSiteValueTerm)) {
        const auto &v = s.at(p + "attn.v"), &zz = s.at(p + "attn.z");
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < kT; ++i)
            for (int d = 0; d < D; ++d) {
              double want = 0;
              for (int j = 0; j < kT; ++j)
                want += pr[(h * kT + i) * kT + j] * v[(j * H + h) * D + d];
              ExpectClose(zz[(i * H + h) * D + d], want, p + "attn.z");
            }
      }
      // Without a q/k transform the encoding leaves q and k as projected; RoPE rotates pairs,
      // keeping each pair's norm.
      const auto &q = s.at(p + "attn.q"), &qpe = s.at(p + "attn.q_pe");
      if (!(c.enc_sites & kSiteQKTransform)) {
        EXPECT_EQ(q, qpe);
        EXPECT_EQ(s.at(p + "attn.k"), s.at(p + "attn.k_pe"));
      } else if (enc == "rope") {
        EXPECT_NE(q, qpe);
        for (int t = 0; t < kT; ++t)
          for (int h = 0; h < H; ++h)
            for (int k = 0; k < D / 2; ++k) {  // pairs (k, k + D/2)
              const int a = (t * H + h) * D + k, b = a + D / 2;
              ExpectClose(std::hypot(qpe[a], qpe[b]), std::hypot(q[a], q[b]), "rotation");
            }
      }
    }
    // final.ln feeds the head: its product with the head's weights is the output.
    const std::vector<float>& fl = s.at("final.ln");
    const auto &hw = c.params.at("head.w"), &hb = c.params.at("head.b");
    const int V = c.cfg.vocab;
    for (int t = 0; t < kT; ++t)
      for (int o = 0; o < V; ++o) {
        double y = hb[o];
        for (int k = 0; k < C; ++k) y += fl[t * C + k] * hw[k * V + o];
        ExpectClose(c.logits(kT + t, o), y, "final.ln");
      }
  }
}

std::vector<std::string> CausalEncodingNames() {
  std::vector<std::string> out;
  for (const auto& e : ListEncodings()) out.push_back(e.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, CaptureSitesOf, ::testing::ValuesIn(CausalEncodingNames()),
                         [](const auto& param_info) { return param_info.param; });

TEST(CaptureSites, GlobsSelectSitesInForwardOrderAndUnknownOnesNameWhatExists) {
  ModelConfig cfg;
  cfg.n_layers = 2;
  EXPECT_EQ(MatchCaptureSites(cfg, {"layer1.resid_post", "layer*.attn.q"}, "probe.capture"),
            (std::vector<std::string>{"layer0.attn.q", "layer1.attn.q", "layer1.resid_post"}));
  EXPECT_EQ(MatchCaptureSites(cfg, {"*"}, "k").size(), CaptureSites(cfg, 4).size());
  EXPECT_EQ(CaptureSites(cfg, 4).size(), 2u * 13 + 1);
  try {
    MatchCaptureSites(cfg, {"layer2.attn.q"}, "probe.capture");
    ADD_FAILURE() << "a site of a third layer was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("probe.capture: 'layer2.attn.q' matches no"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("layer0.attn.q_pe"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lexp
