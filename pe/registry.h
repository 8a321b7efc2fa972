// Every encoding by its recipe name: one row each in ListEncodings() (registry.cc) holding what
// `lexp list encodings`, the recipe check and the docs show (family, sites, paper, options with
// defaults) and the factory that builds it. Adding an encoding is adding its row.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {

// Builds an encoding from its shape and resolved options, in float (models) and double (gradient
// checks); Of<E>() for an encoding E<S>(shape, options), Generic(f) for a template lambda.
struct EncodingFactory {
  template <typename S>
  using Make = std::function<std::unique_ptr<PositionEncoding<S>>(const EncodingShape&,
                                                                  const EncodingOptions&)>;
  Make<float> f32;
  Make<double> f64;

  template <typename S>
  std::unique_ptr<PositionEncoding<S>> Create(const EncodingShape& shape,
                                              const EncodingOptions& opt) const {
    if constexpr (std::is_same_v<S, float>)
      return f32(shape, opt);
    else
      return f64(shape, opt);
  }
  template <typename F>
  static EncodingFactory Generic(F f) {
    return {[f](const EncodingShape& s, const EncodingOptions& o) {
              return f.template operator()<float>(s, o);
            },
            [f](const EncodingShape& s, const EncodingOptions& o) {
              return f.template operator()<double>(s, o);
            }};
  }
  template <template <typename> class E>
  static EncodingFactory Of() {
    return Generic(
        []<typename S>(const EncodingShape& s,
                       const EncodingOptions& o) -> std::unique_ptr<PositionEncoding<S>> {
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
  std::vector<OptionSpec> options;
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
};

const std::vector<EncodingInfo>& ListEncodings();
const EncodingInfo& FindEncoding(const std::string& name);  // error lists the known names

template <typename S>
std::unique_ptr<PositionEncoding<S>> CreateEncoding(
    const std::string& name, const std::map<std::string, std::string>& options,
    const EncodingShape& shape);

}  // namespace lexp
