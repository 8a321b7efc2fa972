// Options of an encoding, as given in a recipe (`[encoding_options.<name>]`), validated against
// the encoding's declared option list so that a misspelt or out-of-range option is an error naming
// what exists.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace lexp {

struct OptionSpec {
  std::string name;
  std::string default_value;
  std::string help;
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

class EncodingOptions {
 public:
  EncodingOptions(const std::string& encoding, const std::vector<OptionSpec>& specs,
                  const std::map<std::string, std::string>& given);
  double Double(const std::string& name) const;
  int Int(const std::string& name) const;
  bool Bool(const std::string& name) const;
  std::string String(const std::string& name, const std::vector<std::string>& allowed) const;
  // The value as written (for messages).
  const std::string& Text(const std::string& name) const { return Raw(name); }

 private:
  const std::string& Raw(const std::string& name) const;
  std::string encoding_;
  std::map<std::string, std::string> values_;
};

}  // namespace lexp
