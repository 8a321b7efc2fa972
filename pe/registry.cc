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
constexpr auto MakeTupe = []<typename S>(const EncodingShape& shape, const TupeOptions& opt)
    -> std::unique_ptr<PositionEncoding<S>> {
  std::unique_ptr<PositionEncoding<S>> relative;
  if (opt.relative) relative = CreateEncoding<S>("t5", {}, shape);
  return std::make_unique<Tupe<S>>(shape, opt, std::move(relative));
};

// Options of `random_shift`: the sinusoid's, and the largest shift of the training positions.
struct RandomShiftOptions {
  SinusoidalOptions sinusoid;
  int max_shift = 0;
  std::vector<OptionField> Fields() {
    return {{.name = "base", .help = "frequency base of the sinusoid", .value = &sinusoid.base,
             .lo = 1, .lo_open = true},
            {.name = "max_shift",
             .help = "training positions k..k+T-1 with k ~ U{0..max_shift} (0 = the run's bound "
                     "on every position id a batch can carry)",
             .value = &max_shift, .lo = 0}};
  }
};

// SHAPE: the sinusoid under the `shift` position scheme.
constexpr auto MakeRandomShift = []<typename S>(const EncodingShape& shape,
                                                const RandomShiftOptions& opt)
    -> std::unique_ptr<PositionEncoding<S>> {
  PositionSchemeConfig pc;
  pc.name = "shift";
  pc.max_position = opt.max_shift > 0 ? opt.max_shift : shape.max_length;
  return std::make_unique<WithPositionScheme<S>>(
      std::make_unique<Sinusoidal<S>>(shape, opt.sinusoid), pc, "random_shift");
};

// DAPE over its base bias (default options).
constexpr auto MakeDape = []<typename S>(const EncodingShape& shape, const DapeOptions& opt)
    -> std::unique_ptr<PositionEncoding<S>> {
  return std::make_unique<Dape<S>>(shape, opt, CreateEncoding<S>(opt.base, {}, shape));
};

constexpr auto MakeNope = []<typename S>(const EncodingShape&, const NoOptions&)
    -> std::unique_ptr<PositionEncoding<S>> { return std::make_unique<NoPE<S>>(); };

constexpr auto MakeKerpleLog = []<typename S>(const EncodingShape& shape, const NoOptions& opt)
    -> std::unique_ptr<PositionEncoding<S>> {
  return std::make_unique<Kerple<S>>(Kerple<S>::Kind::kLog, shape, opt);
};

constexpr auto MakeKerplePower = []<typename S>(const EncodingShape& shape, const NoOptions& opt)
    -> std::unique_ptr<PositionEncoding<S>> {
  return std::make_unique<Kerple<S>>(Kerple<S>::Kind::kPower, shape, opt);
};

constexpr auto MakeDigitPlaces = []<typename S>(const EncodingShape& shape,
                                                const DigitPlaceOptions& opt)
    -> std::unique_ptr<PositionEncoding<S>> {
  return std::make_unique<DigitPlaceEmbedding<S>>(shape, opt);
};

constexpr auto MakeRopePartial = []<typename S>(const EncodingShape& shape, const RopeOptions& opt)
    -> std::unique_ptr<PositionEncoding<S>> {
  return std::make_unique<Rope<S>>(shape, opt, "rope_partial");
};

DigitPlaceOptions CouplingDefaults() {
  DigitPlaceOptions o;
  o.rule = DigitPlaceRule::kCoupling;
  o.max_offset = 170;
  return o;
}

RopeOptions RopePartialDefaults() {
  RopeOptions o;
  o.fraction = 0.25;
  return o;
}

}  // namespace

const std::vector<EncodingInfo>& ListEncodings() {
  static const std::vector<EncodingInfo> kList = {
      {"nope", EncodingFactory::Typed<NoOptions>(MakeNope), "none", "-",
       "Kazemnejad et al. 2023, arXiv:2305.19466"},
      {"sinusoidal", EncodingFactory::Of<Sinusoidal>(), "absolute", "input embedding",
       "Vaswani et al. 2017, arXiv:1706.03762",
       "its positions are added to the token embeddings before attention"},
      {"learned", EncodingFactory::Of<LearnedAbsolute>(), "absolute", "input embedding",
       "Gehring et al. 2017, arXiv:1705.03122",
       "its positions are added to the token embeddings before attention"},
      {"abacus", EncodingFactory::Typed<DigitPlaceOptions>(MakeDigitPlaces), "absolute",
       "position ids, input embedding", "McLeish et al. 2024, arXiv:2405.17399",
       "its places are added to the token embeddings before attention", true},
      {"position_coupling",
       EncodingFactory::Typed<DigitPlaceOptions>(MakeDigitPlaces, CouplingDefaults()), "absolute",
       "position ids, input embedding", "Cho et al. 2024, arXiv:2405.20671",
       "its ids are added to the token embeddings before attention", true},
      {"alibi", EncodingFactory::Of<Alibi>(), "relative bias", "logit term",
       "Press et al. 2022, arXiv:2108.12409"},
      {"rope", EncodingFactory::Of<Rope>(), "rotary",
       "q/k transform (+ logit scale: yarn, dynamic_yarn, log_n; logit term: rerope, remapped "
       "pattern distances)",
       "Su et al. 2021, arXiv:2104.09864; scaling rules: pe/rope_scaling.h"},
      {"rope_partial", EncodingFactory::Typed<RopeOptions>(MakeRopePartial, RopePartialDefaults()),
       "rotary", "q/k transform (+ logit scale, logit term as rope)",
       "Su et al. 2021; partial rotation as in GPT-NeoX / Kazemnejad et al. 2023 (25%)"},
      {"xpos", EncodingFactory::Of<XPos>(), "rotary", "q/k transform",
       "Sun et al. 2022, arXiv:2212.10554",
       "its positions scale and rotate q and k before the logits, and its decay cannot be "
       "recomputed per key"},
      {"kerple_log",
       EncodingFactory::Typed<NoOptions>(MakeKerpleLog), "relative bias",
       "logit term", "Chi et al. 2022, arXiv:2205.09921"},
      {"kerple_power",
       EncodingFactory::Typed<NoOptions>(MakeKerplePower),
       "relative bias", "logit term", "Chi et al. 2022, arXiv:2205.09921"},
      {"sandwich", EncodingFactory::Of<Sandwich>(), "relative bias", "logit term",
       "Chi et al. 2023, arXiv:2212.10356"},
      {"fire", EncodingFactory::Of<Fire>(), "relative bias", "logit term",
       "Li et al. 2023, arXiv:2310.04418"},
      {"t5", EncodingFactory::Of<T5Bias>(), "relative bias", "logit term",
       "Raffel et al. 2020, arXiv:1910.10683"},
      {"shaw", EncodingFactory::Of<Shaw>(), "relative representation",
       "logit term (reads q) + value term", "Shaw et al. 2018, arXiv:1803.02155"},
      {"transformer_xl", EncodingFactory::Of<TransformerXL>(), "relative representation",
       "logit term (reads q, k)", "Dai et al. 2019, arXiv:1901.02860"},
      {"tupe", EncodingFactory::Typed<TupeOptions>(MakeTupe), "absolute (untied) + relative bias",
       "logit term + logit scale", "Ke et al. 2021, arXiv:2006.15595",
       "its untied position term correlates the absolute positions of query and key"},
      {"da", EncodingFactory::Of<DistanceAware>(), "relative (multiplicative)",
       "logit term (transforms q.k)",
       "Wu et al. 2021, arXiv:2010.06925 (form recalled, not checked against the paper text)"},
      {"cope", EncodingFactory::Of<Cope>(), "contextual (content-counted positions)",
       "logit term (reads q, k)", "Golovneva et al. 2024, arXiv:2405.18719",
       "its positions count gates on the content between query and key, not distances", false,
       "its positions count the gates of every key between query and key, so each query needs "
       "its whole row of keys with their gradients"},
      {"dape", EncodingFactory::Typed<DapeOptions>(MakeDape),
       "relative bias + head-mixing MLP (data-adaptive)",
       "head mix (reads every head's q.k and bias)", "Zheng et al. 2024, arXiv:2405.14722", "",
       false,
       "its MLP mixes every head's logit at each (query, key), so the attention runs per "
       "sequence over whole rows of keys with all heads together"},
      {"cape", EncodingFactory::Of<Cape>(), "absolute", "position ids + input embedding",
       "Likhomanenko et al. 2021, arXiv:2106.03143",
       "its positions are added to the token embeddings before attention"},
      {"random_shift", EncodingFactory::Typed<RandomShiftOptions>(MakeRandomShift), "absolute",
       "position ids + input embedding", "Kiyono et al. 2021 (SHAPE), arXiv:2109.05644",
       "its positions are added to the token embeddings before attention"},
      {"complex_order", EncodingFactory::Of<ComplexOrder>(), "absolute (word-dependent)",
       "input embedding (transforms it, reads tokens)", "Wang et al. 2020, arXiv:1912.12333",
       "its positions are folded into the token embeddings before attention"},
      {"floater", EncodingFactory::Of<Floater>(), "absolute (continuous dynamics)",
       "input embedding", "Liu et al. 2020, arXiv:2003.09229",
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
  return FindEncoding(name).factory.Create<S>(name, shape, options);
}

std::vector<std::pair<std::string, std::string>> ResolvedEncodingOptions(
    const std::string& name, const std::map<std::string, std::string>& options) {
  return FindEncoding(name).factory.values(name, options);
}

template std::unique_ptr<PositionEncoding<float>> CreateEncoding<float>(
    const std::string&, const std::map<std::string, std::string>&, const EncodingShape&);
template std::unique_ptr<PositionEncoding<double>> CreateEncoding<double>(
    const std::string&, const std::map<std::string, std::string>&, const EncodingShape&);

}  // namespace lexp
