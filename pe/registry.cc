#include "pe/registry.h"

#include "nn/check.h"
#include "pe/alibi.h"
#include "pe/cape.h"
#include "pe/complex_order.h"
#include "pe/cope.h"
#include "pe/da.h"
#include "pe/dape.h"
#include "pe/digit_places.h"
#include "pe/fire.h"
#include "pe/floater.h"
#include "pe/kerple.h"
#include "pe/learned.h"
#include "pe/nope.h"
#include "pe/position_schemes.h"
#include "pe/rope.h"
#include "pe/sandwich.h"
#include "pe/shaw.h"
#include "pe/sinusoidal.h"
#include "pe/t5.h"
#include "pe/transformer_xl.h"
#include "pe/tupe.h"
#include "pe/xpos.h"

namespace lexp {

namespace {

// TUPE, with T5's relative buckets when `relative` (TUPE-R).
constexpr auto MakeTupe = []<typename S>(
                              const EncodingShape& shape,
                              const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
  std::unique_ptr<PositionEncoding<S>> relative;
  if (opt.Bool("relative")) relative = CreateEncoding<S>("t5", {}, shape);
  return std::make_unique<Tupe<S>>(shape, opt, std::move(relative));
};

// SHAPE: the sinusoid under the `shift` position scheme.
constexpr auto MakeRandomShift =
    []<typename S>(const EncodingShape& shape,
                   const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
  PositionSchemeConfig pc;
  pc.name = "shift";
  LEXP_INPUT_CHECK(opt.Int("max_shift") >= 0,
                   "encoding 'random_shift': max_shift must be >= 0 (0 = the run's bound on "
                   "position ids), got " +
                       opt.Text("max_shift"));
  pc.max_position = opt.Int("max_shift") > 0 ? opt.Int("max_shift") : shape.max_length;
  return std::make_unique<WithPositionScheme<S>>(std::make_unique<Sinusoidal<S>>(shape, opt), pc,
                                                 "random_shift");
};

// DAPE over its base bias (default options).
constexpr auto MakeDape = []<typename S>(
                              const EncodingShape& shape,
                              const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
  const std::string base = opt.String("base", {"kerple_log", "alibi", "fire"});
  return std::make_unique<Dape<S>>(shape, opt, CreateEncoding<S>(base, {}, shape));
};

}  // namespace

const std::vector<EncodingInfo>& ListEncodings() {
  static const std::vector<EncodingInfo> kList = {
      {"nope",
       EncodingFactory::Generic(
           []<typename S>(const EncodingShape&, const EncodingOptions&)
               -> std::unique_ptr<PositionEncoding<S>> { return std::make_unique<NoPE<S>>(); }),
       "none",
       "-",
       "Kazemnejad et al. 2023, arXiv:2305.19466",
       {}},
      {"sinusoidal",
       EncodingFactory::Of<Sinusoidal>(),
       "absolute",
       "input embedding",
       "Vaswani et al. 2017, arXiv:1706.03762",
       {{"base", "10000", "frequency base: w_k = base^(-2k/d_model)"}},
       "its positions are added to the token embeddings before attention"},
      {"learned",
       EncodingFactory::Of<LearnedAbsolute>(),
       "absolute",
       "input embedding",
       "Gehring et al. 2017, arXiv:1705.03122",
       {{"max_len", "0", "table rows (0 = the run's bound on every position id a batch can carry)"},
        {"beyond", "error", "positions past the table: error | clamp (reuse the last row)"},
        {"init_std", "1.0", "standard deviation of the initial table"}},
       "its positions are added to the token embeddings before attention"},
      {"abacus",
       EncodingFactory::Generic(
           []<typename S>(const EncodingShape& shape,
                          const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
             return std::make_unique<DigitPlaceEmbedding<S>>(DigitPlaceRule::kAbacus, shape, opt);
           }),
       "absolute",
       "position ids, input embedding",
       "McLeish et al. 2024, arXiv:2405.17399",
       {{"max_k", "99",
         "largest training offset k of the digits' places (one k ~ U{0..max_k} per batch)"},
        {"rows", "1024", "table rows: places up to rows - 1 (the reference's max_seq_length)"},
        {"init_std", "1.0", "standard deviation of the initial table"}},
       "its places are added to the token embeddings before attention",
       true},
      {"position_coupling",
       EncodingFactory::Generic(
           []<typename S>(const EncodingShape& shape,
                          const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
             return std::make_unique<DigitPlaceEmbedding<S>>(DigitPlaceRule::kCoupling, shape,
                                                             opt);
           }),
       "absolute",
       "position ids, input embedding",
       "Cho et al. 2024, arXiv:2405.20671",
       {{"max_start", "170",
         "largest training start k of the coupled ids (one k ~ U{0..max_start} per batch; the "
         "reference's range for its 30-digit additions, max_position 202 = 200 + 2 digits)"},
        {"rows", "1024", "table rows: ids up to rows - 1 (the reference's n_positions is 256)"},
        {"init_std", "1.0", "standard deviation of the initial table"}},
       "its ids are added to the token embeddings before attention",
       true},
      {"alibi",
       EncodingFactory::Of<Alibi>(),
       "relative bias",
       "logit term",
       "Press et al. 2022, arXiv:2108.12409",
       {}},
      {"rope", EncodingFactory::Of<Rope>(), "rotary",
       "q/k transform (+ logit scale: yarn, dynamic_yarn, log_n; logit term: rerope, remapped "
       "pattern distances)",
       "Su et al. 2021, arXiv:2104.09864; scaling rules: pe/rope_scaling.h", RopeOptionSpecs()},
      {"rope_partial",
       EncodingFactory::Generic(
           []<typename S>(const EncodingShape& shape,
                          const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
             return std::make_unique<Rope<S>>(shape, opt, "rope_partial");
           }),
       "rotary", "q/k transform (+ logit scale, logit term as rope)",
       "Su et al. 2021; partial rotation as in GPT-NeoX / Kazemnejad et al. 2023 (25%)",
       RopeOptionSpecs("0.25")},
      {"xpos",
       EncodingFactory::Of<XPos>(),
       "rotary",
       "q/k transform",
       "Sun et al. 2022, arXiv:2212.10554",
       {{"base", "10000", "rotary base"},
        {"gamma", "0.4", "zeta_k = (2k + gamma D) / ((1 + gamma) D)"},
        {"scale_base", "0",
         "B: the query at m is scaled by zeta^(m/B), the key by zeta^(-n/B); 0 = half the "
         "longest training sequence, the reference's 512 to its 1024 training tokens (decoder "
         "layout only)"},
        {"pairing", "interleaved", "pair layout: interleaved (torchscale) | half"}},
       "its positions scale and rotate q and k before the logits, and its decay cannot be "
       "recomputed per key"},
      {"kerple_log",
       EncodingFactory::Generic(
           []<typename S>(const EncodingShape& shape,
                          const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
             return std::make_unique<Kerple<S>>(Kerple<S>::Kind::kLog, shape, opt);
           }),
       "relative bias",
       "logit term",
       "Chi et al. 2022, arXiv:2205.09921",
       {}},
      {"kerple_power",
       EncodingFactory::Generic(
           []<typename S>(const EncodingShape& shape,
                          const EncodingOptions& opt) -> std::unique_ptr<PositionEncoding<S>> {
             return std::make_unique<Kerple<S>>(Kerple<S>::Kind::kPower, shape, opt);
           }),
       "relative bias",
       "logit term",
       "Chi et al. 2022, arXiv:2205.09921",
       {}},
      {"sandwich",
       EncodingFactory::Of<Sandwich>(),
       "relative bias",
       "logit term",
       "Chi et al. 2023, arXiv:2212.10356",
       {{"base", "10000", "frequency base of the sinusoids"},
        {"dim", "128",
         "D', the sinusoids' dimension: the paper's 128 (recalled); 0 = the head width (NeMo)"}}},
      {"fire",
       EncodingFactory::Of<Fire>(),
       "relative bias",
       "logit term",
       "Li et al. 2023, arXiv:2310.04418",
       {{"init_c", "0.1", "initial c of psi(x) = ln(|c x| + 1)"},
        {"init_L", "0",
         "fixed threshold scale; L = |multiplier * init_L|, multiplier learnable; 0 = a quarter "
         "of the longest training sequence, the replications' 512 to the paper's 2048 training "
         "tokens (decoder layout only)"},
        {"eps", "1e-6", "added to the normaliser"},
        {"per_layer", "true", "one FIRE module per layer (false: shared by all layers)"}}},
      {"t5",
       EncodingFactory::Of<T5Bias>(),
       "relative bias",
       "logit term",
       "Raffel et al. 2020, arXiv:1910.10683",
       {{"num_buckets", "32", "number of buckets (per direction halves when bidirectional)"},
        {"max_distance", "128", "distance at which the log buckets end"},
        {"per_layer", "false", "own table per layer (T5 shares one across layers)"}}},
      {"shaw",
       EncodingFactory::Of<Shaw>(),
       "relative representation",
       "logit term (reads q) + value term",
       "Shaw et al. 2018, arXiv:1803.02155",
       {{"clip", "16", "k: offsets j - i are clipped to [-k, k] (2k+1 learned vectors per table)"},
        {"values", "true", "also add relative value vectors to the output (false: keys only)"}}},
      {"transformer_xl",
       EncodingFactory::Of<TransformerXL>(),
       "relative representation",
       "logit term (reads q, k)",
       "Dai et al. 2019, arXiv:1901.02860",
       {{"clamp_len", "0", "cap |i - j| of the sinusoid at this value (0 = no cap)"},
        {"share_biases", "true", "u, v shared by all layers (original code); false = per layer"}}},
      {"tupe",
       EncodingFactory::Generic(MakeTupe),
       "absolute (untied) + relative bias",
       "logit term + logit scale",
       "Ke et al. 2021, arXiv:2006.15595",
       {{"max_len", "0",
         "position table rows (0 = the run's bound on every position id a batch can carry)"},
        {"relative", "true", "TUPE-R: add T5 relative buckets (32 buckets, max distance 128)"}},
       "its untied position term correlates the absolute positions of query and key"},
      {"da",
       EncodingFactory::Of<DistanceAware>(),
       "relative (multiplicative)",
       "logit term (transforms q.k)",
       "Wu et al. 2021, arXiv:2010.06925 (form recalled, not checked against the paper text)",
       {{"init_w", "0.1", "w_h starts uniform in [-init_w, init_w]; v_h starts at 0"}}},
      {"cope",
       EncodingFactory::Of<Cope>(),
       "contextual (content-counted positions)",
       "logit term (reads q, k)",
       "Golovneva et al. 2024, arXiv:2405.18719",
       {{"npos", "0",
         "rows of the position table per layer; positions beyond are clamped to npos - 1 (0 = "
         "the training length + 1, the authors' block size + 1)"},
        {"nodiv", "false",
         "add the position term after 1/sqrt(D) (false: before it, the authors' default)"},
        {"init_std", "0", "table starts N(0, init_std^2) (0: zeros, as the authors' code)"}},
       "its positions count gates on the content between query and key, not distances",
       false,
       "its positions count the gates of every key between query and key, so each query needs "
       "its whole row of keys with their gradients"},
      {"dape",
       EncodingFactory::Generic(MakeDape),
       "relative bias + head-mixing MLP (data-adaptive)",
       "head mix (reads every head's q.k and bias)",
       "Zheng et al. 2024, arXiv:2405.14722",
       {{"base", "kerple_log",
         "the static bias b_h the MLP reads and corrects: kerple_log | alibi | fire (its options "
         "at their defaults)"},
        {"width", "32", "hidden width of the MLP 2H -> width -> H (the paper's D_DAPE)"}},
       "",
       false,
       "its MLP mixes every head's logit at each (query, key), so the attention runs per "
       "sequence over whole rows of keys with all heads together"},
      {"cape",
       EncodingFactory::Of<Cape>(),
       "absolute",
       "position ids + input embedding",
       "Likhomanenko et al. 2021, arXiv:2106.03143",
       {{"max_global_shift", "5", "delta ~ U(-max, max) added to every position (training only)"},
        {"max_local_shift", "0.5", "eps_t ~ U(-max, max) * pos_scale per token (keep <= 0.5)"},
        {"max_global_scaling", "1.03",
         "ln lambda ~ U(-ln max, ln max) multiplies positions (>= 1)"},
        {"normalize", "false", "subtract the mean position of the sequence first"},
        {"pos_scale", "1", "positions are pos_scale * t"},
        {"freq_scale", "1", "multiplies every sinusoid frequency"}},
       "its positions are added to the token embeddings before attention"},
      {"random_shift",
       EncodingFactory::Generic(MakeRandomShift),
       "absolute",
       "position ids + input embedding",
       "Kiyono et al. 2021 (SHAPE), arXiv:2109.05644",
       {{"base", "10000", "frequency base of the sinusoid"},
        {"max_shift", "0",
         "training positions k..k+T-1 with k ~ U{0..max_shift} "
         "(0 = the run's bound on every position id a batch can carry)"}},
       "its positions are added to the token embeddings before attention"},
      {"complex_order",
       EncodingFactory::Of<ComplexOrder>(),
       "absolute (word-dependent)",
       "input embedding (transforms it, reads tokens)",
       "Wang et al. 2020, arXiv:1912.12333",
       {},
       "its positions are folded into the token embeddings before attention"},
      {"floater",
       EncodingFactory::Of<Floater>(),
       "absolute (continuous dynamics)",
       "input embedding",
       "Liu et al. 2020, arXiv:2003.09229",
       {{"hidden", "32", "width of the learned correction network of dp/dt"},
        {"steps", "8", "RK4 substeps per unit position (phase error ~ n / (120 steps^4) after n)"}},
       "its positions are added to the token embeddings before attention"},
  };
  return kList;
}

const EncodingInfo& FindEncoding(const std::string& name) {
  std::string known;
  for (const auto& e : ListEncodings()) {
    if (e.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  FailInput("unknown encoding '" + name + "'; known encodings: " + known);
}

template <typename S>
std::unique_ptr<PositionEncoding<S>> CreateEncoding(
    const std::string& name, const std::map<std::string, std::string>& options,
    const EncodingShape& shape) {
  const EncodingInfo& info = FindEncoding(name);
  return info.factory.Create<S>(shape, EncodingOptions(name, info.options, options));
}

template std::unique_ptr<PositionEncoding<float>> CreateEncoding<float>(
    const std::string&, const std::map<std::string, std::string>&, const EncodingShape&);
template std::unique_ptr<PositionEncoding<double>> CreateEncoding<double>(
    const std::string&, const std::map<std::string, std::string>&, const EncodingShape&);

}  // namespace lexp
