#include "nn/model/capture_sites.h"

#include <fnmatch.h>

#include "nn/check.h"

namespace lexp {

namespace {

// A site name split into its layer (-1 for final.ln) and the part after "layer{l}.".
struct SiteName {
  int layer = -1;
  std::string part;
};

SiteName Parse(const std::string& name) {
  SiteName s;
  if (name == "final.ln") {
    s.part = name;
    return s;
  }
  const size_t dot = name.find('.');
  LEXP_CHECK(name.rfind("layer", 0) == 0 && dot != std::string::npos,
             "capture: '" + name + "' is not a site name");
  s.layer = std::stoi(name.substr(5, dot - 5));
  s.part = name.substr(dot + 1);
  return s;
}

// Rows [b*T, (b+1)*T) of an [N, cols] matrix, starting at column `col`, `width` columns.
template <typename S>
std::vector<float> Rows(const Mat<S>& m, int b, int T, long col, long width,
                        const std::string& name) {
  LEXP_CHECK(m.rows() >= static_cast<long>(b + 1) * T && m.cols() >= col + width,
             "capture: site " + name +
                 " was not kept (a capturing forward with set_capture_sites(true) keeps it)");
  std::vector<float> out(static_cast<size_t>(T) * width);
  for (int t = 0; t < T; ++t)
    for (long c = 0; c < width; ++c)
      out[static_cast<size_t>(t) * width + c] =
          static_cast<float>(m(static_cast<long>(b) * T + t, col + c));
  return out;
}

}  // namespace

std::vector<CaptureSite> CaptureSites(const ModelConfig& cfg, int T) {
  const uint64_t uT = static_cast<uint64_t>(T), C = static_cast<uint64_t>(cfg.d_model),
                 H = static_cast<uint64_t>(cfg.n_heads), D = static_cast<uint64_t>(cfg.HeadDim()),
                 F = static_cast<uint64_t>(cfg.FF());
  std::vector<CaptureSite> out;
  for (int l = 0; l < cfg.n_layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    out.push_back(
        {p + "resid_pre", {uT, C}, "position,channel", "residual stream entering the block"});
    out.push_back({p + "attn.q",
                   {uT, H, D},
                   "query,head,channel",
                   "q projection, before the encoding's q/k transform"});
    out.push_back({p + "attn.k",
                   {uT, H, D},
                   "key,head,channel",
                   "k projection, before the encoding's q/k transform"});
    out.push_back({p + "attn.v", {uT, H, D}, "key,head,channel", "v projection"});
    out.push_back({p + "attn.q_pe",
                   {uT, H, D},
                   "query,head,channel",
                   "q after the encoding's q/k transform (= attn.q without one)"});
    out.push_back({p + "attn.k_pe",
                   {uT, H, D},
                   "key,head,channel",
                   "k after the encoding's q/k transform (= attn.k without one)"});
    out.push_back({p + "attn.logits",
                   {H, uT, uT},
                   "head,query,key",
                   "pre-softmax logits, -inf where masked"});
    out.push_back({p + "attn.pattern", {H, uT, uT}, "head,query,key", "attention probabilities"});
    out.push_back({p + "attn.z",
                   {uT, H, D},
                   "query,head,channel",
                   "each head's output, before the output projection"});
    out.push_back({p + "attn.out",
                   {uT, C},
                   "position,channel",
                   "attention branch output (after the projection)"});
    out.push_back({p + "mlp.hidden", {uT, F}, "position,hidden", "MLP activations after the GELU"});
    out.push_back({p + "mlp.out", {uT, C}, "position,channel", "MLP branch output"});
    out.push_back(
        {p + "resid_post", {uT, C}, "position,channel", "residual stream leaving the block"});
  }
  out.push_back(
      {"final.ln", {uT, C}, "position,channel", "final LayerNorm output (the head's input)"});
  return out;
}

std::vector<std::string> MatchCaptureSites(const ModelConfig& cfg,
                                           const std::vector<std::string>& globs,
                                           const std::string& key) {
  const std::vector<CaptureSite> sites = CaptureSites(cfg, 1);
  std::vector<bool> chosen(sites.size(), false);
  for (const std::string& g : globs) {
    bool any = false;
    for (size_t i = 0; i < sites.size(); ++i)
      if (fnmatch(g.c_str(), sites[i].name.c_str(), 0) == 0) chosen[i] = any = true;
    if (!any) {
      std::string names;
      for (const CaptureSite& s : sites)
        if (s.name.rfind("layer0.", 0) == 0) names += (names.empty() ? "" : ", ") + s.name;
      FailInput(key + ": '" + g + "' matches no capture site of this model (" +
                std::to_string(cfg.n_layers) + " layers); the sites of layer 0 are " + names +
                ", the same for every layer, and final.ln (lexp list sites)");
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < sites.size(); ++i)
    if (chosen[i]) out.push_back(sites[i].name);
  return out;
}

template <typename S>
std::vector<float> ReadCaptureSite(const Transformer<S>& model, const std::string& name, int b,
                                   int T) {
  const ModelConfig& cfg = model.config();
  const long C = cfg.d_model, H = cfg.n_heads;
  const SiteName s = Parse(name);
  if (s.part == "final.ln") return Rows(model.FinalNorm(), b, T, 0, C, name);
  LEXP_CHECK(s.layer >= 0 && s.layer < cfg.n_layers, "capture: no layer in '" + name + "'");
  const BlockCache<S>& c = model.Cache(s.layer);
  if (s.part == "resid_pre") return Rows(model.Residual(s.layer), b, T, 0, C, name);
  if (s.part == "resid_post") return Rows(model.Residual(s.layer + 1), b, T, 0, C, name);
  if (s.part == "attn.q") return Rows(c.qkv, b, T, 0, C, name);
  if (s.part == "attn.k") return Rows(c.qkv, b, T, C, C, name);
  if (s.part == "attn.v") return Rows(c.qkv, b, T, 2 * C, C, name);
  if (s.part == "attn.q_pe") return Rows(c.q, b, T, 0, C, name);
  if (s.part == "attn.k_pe") return Rows(c.k, b, T, 0, C, name);
  if (s.part == "attn.z") return Rows(c.att, b, T, 0, C, name);
  if (s.part == "attn.out") return Rows(c.attn_out, b, T, 0, C, name);
  if (s.part == "mlp.hidden") return Rows(c.g, b, T, 0, cfg.FF(), name);
  if (s.part == "mlp.out") return Rows(c.mlp_out, b, T, 0, C, name);
  if (s.part == "attn.logits" || s.part == "attn.pattern") {
    // [B*H*T, T]: sequence b's heads are the H*T rows from b*H*T on.
    const Mat<S>& m = s.part == "attn.logits" ? c.attn.logits : c.attn.probs;
    return Rows(m, b, static_cast<int>(H) * T, 0, T, name);
  }
  LEXP_CHECK(false, "capture: unknown site '" + name + "'");
  return {};
}

template std::vector<float> ReadCaptureSite<float>(const Transformer<float>&, const std::string&,
                                                   int, int);
template std::vector<float> ReadCaptureSite<double>(const Transformer<double>&, const std::string&,
                                                    int, int);

}  // namespace lexp
