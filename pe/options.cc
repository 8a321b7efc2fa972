// See options.h.
#include "pe/options.h"

#include <cmath>
#include <cstdlib>

#include "nn/check.h"

namespace lexp {
namespace {

std::string ListSpecs(const std::vector<OptionSpec>& specs) {
  if (specs.empty()) return "it takes no options";
  std::string s = "its options are:";
  for (const auto& o : specs) s += " " + o.name + " (default " + o.default_value + ")";
  return s;
}

}  // namespace

EncodingOptions::EncodingOptions(const std::string& encoding, const std::vector<OptionSpec>& specs,
                                 const std::map<std::string, std::string>& given)
    : encoding_(encoding) {
  for (const auto& o : specs) values_[o.name] = o.default_value;
  for (const auto& [k, v] : given) {
    LEXP_INPUT_CHECK(values_.count(k) > 0,
                     "encoding '" + encoding + "' has no option '" + k + "'; " + ListSpecs(specs));
    values_[k] = v;
  }
}

const std::string& EncodingOptions::Raw(const std::string& name) const {
  auto it = values_.find(name);
  LEXP_INPUT_CHECK(it != values_.end(), "encoding '" + encoding_ + "': undeclared option " + name);
  return it->second;
}

double EncodingOptions::Double(const std::string& name) const {
  const std::string& s = Raw(name);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  LEXP_INPUT_CHECK(end != s.c_str() && *end == '\0', "encoding '" + encoding_ + "': option '" +
                                                         name + "' = '" + s + "' is not a number");
  LEXP_INPUT_CHECK(std::isfinite(v), "encoding '" + encoding_ + "': option '" + name + "' = '" + s +
                                         "' is not a finite number");
  return v;
}

int EncodingOptions::Int(const std::string& name) const {
  const double v = Double(name);
  LEXP_INPUT_CHECK(v == static_cast<int>(v), "encoding '" + encoding_ + "': option '" + name +
                                                 "' must be an integer, got " + Raw(name));
  return static_cast<int>(v);
}

bool EncodingOptions::Bool(const std::string& name) const {
  const std::string& s = Raw(name);
  if (s == "true" || s == "1") return true;
  if (s == "false" || s == "0") return false;
  FailInput("encoding '" + encoding_ + "': option '" + name + "' must be true or false, got " + s);
}

std::string EncodingOptions::String(const std::string& name,
                                    const std::vector<std::string>& allowed) const {
  const std::string& s = Raw(name);
  std::string list;
  for (const auto& a : allowed) {
    if (a == s) return s;
    list += (list.empty() ? "" : ", ") + a;
  }
  FailInput("encoding '" + encoding_ + "': option '" + name + "' = '" + s + "'; allowed: " + list);
}

}  // namespace lexp
