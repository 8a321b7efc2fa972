// Options of an encoding, as given in a recipe (`[encoding_options.<name>]`). Each encoding declares
// them once, as a struct of typed members with their defaults and a Fields() list naming each
// member with its help and what it allows (the way experiments/core/recipe_fields.cc declares the
// recipe keys); the registry, the recipe check, `lexp list encodings`, the run file and
// pe/README.md's option tables (tests/pe/option_tables_test.cc) all read that one declaration. A
// misspelt, mistyped or out-of-range option is an error naming what exists.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace lexp {

// One option: the member it sets, and the values it allows (strings: one of `allowed` unless
// empty; numbers: within [lo, hi], an end excluded when it is open).
struct OptionField {
  std::string name;
  std::string help;
  std::variant<double*, int*, bool*, std::string*> value;
  std::vector<std::string> allowed = {};
  double lo = -std::numeric_limits<double>::infinity();
  bool lo_open = false;
  double hi = std::numeric_limits<double>::infinity();
  bool hi_open = false;
};

// An option as `lexp list encodings` and the docs show it: the declaration with its default.
struct OptionSpec {
  std::string name;
  std::string default_value;  // as OptionValueText writes it
  std::string help;
  std::string kind;           // number | integer | true or false | text
  std::string allowed;        // e.g. "> 1", "half | interleaved"; empty: any value of the kind
};

// The declaration of an encoding that takes no option.
struct NoOptions {
  std::vector<OptionField> Fields() { return {}; }
};

// What the rest of the model tells an encoding when it is created.
struct EncodingShape {
  int d_model = 64;
  int n_heads = 4;
  int n_layers = 2;
  bool causal = true;
  int max_length = 0;    // bound on every position id a batch can carry (RecipeConfig::
                         // MaxPositionId): above the longest sequence under the randomized and
                         // shift position schemes
  int train_length = 0;  // longest training sequence (tokens): L of the scaling rules, kept apart
                         // from max_length (a known pitfall); 0 = unknown
  int vocab = 0;         // token vocabulary (encodings that depend on the token; 0 = unknown)
  int digits = 0;        // token ids [0, digits) are the decimal digits (arithmetic tasks; 0 = none)
};

// The field's current value as text (numbers in their shortest form: 10000, 0.25, 1e-6).
std::string OptionValueText(const OptionField& f);
// The field's spec: its current value is the default.
OptionSpec SpecOf(const OptionField& f);
// Sets the field from `text` (a recipe's value as written), or fails naming the encoding, the
// option, the value and what is allowed.
void SetOptionField(const std::string& encoding, const OptionField& f, const std::string& text);
// Fails unless every key of `given` is a field, listing the encoding's options.
void CheckOptionNames(const std::string& encoding, const std::vector<OptionField>& fields,
                      const std::map<std::string, std::string>& given);

// The declared options of O with their defaults (those of `defaults`).
template <class O>
std::vector<OptionSpec> OptionSpecsOf(O defaults = {}) {
  std::vector<OptionSpec> specs;
  for (const OptionField& f : defaults.Fields()) specs.push_back(SpecOf(f));
  return specs;
}

// `defaults` with the options given in a recipe set, each checked against its declaration.
template <class O>
O ParseOptions(const std::string& encoding, const std::map<std::string, std::string>& given,
               O defaults = {}) {
  O o = defaults;
  const std::vector<OptionField> fields = o.Fields();
  CheckOptionNames(encoding, fields, given);
  for (const OptionField& f : fields) {
    auto it = given.find(f.name);
    if (it != given.end()) SetOptionField(encoding, f, it->second);
  }
  return o;
}

// Every option of o by name with its value as text (the run file's record).
template <class O>
std::vector<std::pair<std::string, std::string>> OptionValues(O o) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const OptionField& f : o.Fields()) values.emplace_back(f.name, OptionValueText(f));
  return values;
}

}  // namespace lexp
