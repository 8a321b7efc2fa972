// Every encoding by its recipe name: one row each in ListEncodings() (registry.cc) holding what
// `lexp list encodings`, the recipe check and the docs show (family, sites, paper, options with
// defaults) and the factory that builds it. Adding an encoding is adding its row.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Builds an encoding from its shape and the options a recipe gives (by name, as written), in
// float (models) and double (gradient checks). The options are parsed into the encoding's
// declared struct O (pe/options.h) before the constructor sees them: Of<E>() for an encoding
// E<S>(shape, const typename E<S>::Options&), Typed<O>(f, defaults) for a template lambda
// f(shape, const O&).
struct EncodingFactory {
  using Given = std::map<std::string, std::string>;
  template <typename S>
  using Make = std::function<std::unique_ptr<PositionEncoding<S>>(
      const std::string& name, const EncodingShape&, const Given&)>;
  Make<float> f32;
  Make<double> f64;
  std::vector<OptionSpec> options;  // the declaration, with its defaults
  // Every option's value after the given ones are parsed (the run file's record).
  std::function<std::vector<std::pair<std::string, std::string>>(const std::string& name,
                                                                  const Given&)>
      values;

  template <typename S>
  std::unique_ptr<PositionEncoding<S>> Create(const std::string& name, const EncodingShape& shape,
                                              const Given& given) const {
    if constexpr (std::is_same_v<S, float>)
      return f32(name, shape, given);
    else
      return f64(name, shape, given);
  }
  template <class O, typename F>
  static EncodingFactory Typed(F f, O defaults = {}) {
    return {[f, defaults](const std::string& name, const EncodingShape& s, const Given& g) {
              return f.template operator()<float>(s, ParseOptions<O>(name, g, defaults));
            },
            [f, defaults](const std::string& name, const EncodingShape& s, const Given& g) {
              return f.template operator()<double>(s, ParseOptions<O>(name, g, defaults));
            },
            OptionSpecsOf<O>(defaults),
            [defaults](const std::string& name, const Given& g) {
              return OptionValues<O>(ParseOptions<O>(name, g, defaults));
            }};
  }
  template <template <typename> class E>
  static EncodingFactory Of() {
    using O = typename E<float>::Options;
    return Typed<O>([]<typename S>(const EncodingShape& s,
                                   const O& o) -> std::unique_ptr<PositionEncoding<S>> {
      return std::make_unique<E<S>>(s, o);
    });
  }
};

struct EncodingInfo {
  std::string name;
  EncodingFactory factory;
  std::string family;  // absolute / relative bias / rotary / none
  std::string sites;   // hook sites it uses
  std::string paper;
  // Empty when the encoding can show a key at a distance other than its own (it reads the
  // pattern's effective distance, or recomputes the logit at it, as rope does), as LM-Infinite's
  // Lambda mask and StreamingLLM's sinks need; otherwise why it cannot (the patterns would be
  // masks only).
  std::string cannot_remap = "";
  // True for encodings that number the digits of each number (Abacus): they need a task with
  // digit symbols (Task::DigitSymbols).
  bool reads_digits = false;
  // Empty when the logit term of (i, j) reads only q_i, k_j and the positions; otherwise why the
  // encoding cannot run where a query's keys are split or extended outside the attention (the
  // recurrence pattern's memory without gradient, landmarks, kNN memories, LongMem's side network).
  std::string needs_whole_rows = "";
  // The declared options with their defaults (factory.options; pe/options.h).
  const std::vector<OptionSpec>& options() const { return factory.options; }
};

const std::vector<EncodingInfo>& ListEncodings();
const EncodingInfo& FindEncoding(const std::string& name);  // error lists the known names

// Every option of the encoding by name with its value once `options` are applied to the defaults
// (checked as CreateEncoding checks them): what a run file records.
std::vector<std::pair<std::string, std::string>> ResolvedEncodingOptions(
    const std::string& name, const std::map<std::string, std::string>& options);

template <typename S>
std::unique_ptr<PositionEncoding<S>> CreateEncoding(
    const std::string& name, const std::map<std::string, std::string>& options,
    const EncodingShape& shape);

}  // namespace lexp
