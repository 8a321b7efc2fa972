// See options.h.
#include "pe/options.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>

#include "nn/check.h"

namespace lexp {
namespace {

// 1e-06 -> 1e-6, 1e+20 -> 1e20: the form a recipe would be written in.
std::string NumberText(double v) {
  std::string s = fmt::format("{}", v);
  const size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  const bool negative = !exponent.empty() && exponent[0] == '-';
  if (!exponent.empty() && (exponent[0] == '-' || exponent[0] == '+')) exponent.erase(0, 1);
  exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
  return mantissa + "e" + (negative ? "-" : "") + exponent;
}

std::string KindOf(const OptionField& f) {
  if (std::holds_alternative<double*>(f.value)) return "number";
  if (std::holds_alternative<int*>(f.value)) return "integer";
  if (std::holds_alternative<bool*>(f.value)) return "true or false";
  return "text";
}

// "> 1", ">= 0", "in (0, 1]", "half | interleaved"; empty when any value of the kind is allowed.
std::string AllowedText(const OptionField& f) {
  if (!f.allowed.empty()) {
    std::string s;
    for (const auto& a : f.allowed) s += (s.empty() ? "" : " | ") + a;
    return s;
  }
  const bool has_lo = std::isfinite(f.lo), has_hi = std::isfinite(f.hi);
  if (has_lo && has_hi)
    return std::string("in ") + (f.lo_open ? "(" : "[") + NumberText(f.lo) + ", " +
           NumberText(f.hi) + (f.hi_open ? ")" : "]");
  if (has_lo) return std::string(f.lo_open ? "> " : ">= ") + NumberText(f.lo);
  if (has_hi) return std::string(f.hi_open ? "< " : "<= ") + NumberText(f.hi);
  return "";
}

std::string ListOptions(const std::vector<OptionField>& fields) {
  if (fields.empty()) return "it takes no options";
  std::string s = "its options are:";
  for (const auto& f : fields) {
    s += " ";
    s += f.name;
    s += " (default ";
    s += OptionValueText(f);
    s += ")";
  }
  return s;
}

}  // namespace

std::string OptionValueText(const OptionField& f) {
  if (auto* d = std::get_if<double*>(&f.value)) return NumberText(**d);
  if (auto* i = std::get_if<int*>(&f.value)) return std::to_string(**i);
  if (auto* b = std::get_if<bool*>(&f.value)) return **b ? "true" : "false";
  return *std::get<std::string*>(f.value);
}

OptionSpec SpecOf(const OptionField& f) {
  return {f.name, OptionValueText(f), f.help, KindOf(f), AllowedText(f)};
}

void SetOptionField(const std::string& encoding, const OptionField& f, const std::string& text) {
  std::string what = "encoding '";
  what += encoding;
  what += "': option '";
  what += f.name;
  what += "' = '";
  what += text;
  what += "'";
  if (auto* b = std::get_if<bool*>(&f.value)) {
    LEXP_INPUT_CHECK(text == "true" || text == "false" || text == "1" || text == "0",
                     what + " must be true or false");
    **b = text == "true" || text == "1";
    return;
  }
  if (auto* s = std::get_if<std::string*>(&f.value)) {
    if (!f.allowed.empty()) {
      bool ok = false;
      for (const auto& a : f.allowed) ok = ok || a == text;
      LEXP_INPUT_CHECK(ok, what + "; allowed: " + AllowedText(f));
    }
    **s = text;
    return;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  LEXP_INPUT_CHECK(end != text.c_str() && *end == '\0', what + " is not a number");
  LEXP_INPUT_CHECK(std::isfinite(v), what + " is not a finite number");
  const bool above = f.lo_open ? v > f.lo : v >= f.lo, below = f.hi_open ? v < f.hi : v <= f.hi;
  LEXP_INPUT_CHECK(above && below, what + " must be " + AllowedText(f));
  if (auto* i = std::get_if<int*>(&f.value)) {
    LEXP_INPUT_CHECK(v == std::floor(v) && std::fabs(v) < 2e9, what + " must be an integer");
    **i = static_cast<int>(v);
    return;
  }
  *std::get<double*>(f.value) = v;
}

void CheckOptionNames(const std::string& encoding, const std::vector<OptionField>& fields,
                      const std::map<std::string, std::string>& given) {
  for (const auto& [key, value] : given) {
    bool known = false;
    for (const auto& f : fields) known = known || f.name == key;
    std::string message = "encoding '";
    message += encoding;
    message += "' has no option '";
    message += key;
    message += "'; ";
    message += ListOptions(fields);
    LEXP_INPUT_CHECK(known, message);
  }
}

}  // namespace lexp
