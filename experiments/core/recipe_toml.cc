// A recipe as text: TOML parsed into the fields of Fields() with an error naming the key, the
// value and what is allowed; --set overrides; and the effective recipe written back as TOML.
#include "experiments/core/recipe.h"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "experiments/core/sequence_layout.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"
#include "nn/model/capture_sites.h"
#include "pe/options.h"
#include "pe/registry.h"
#include "pe/rope.h"

namespace lexp {

std::string FieldTypeName(const Field& f) {
  switch (f.value.index()) {
    case 0:
      return "integer";
    case 1:
      return "number";
    case 2:
      return "string";
    case 3:
      return "list of integers";
    default:
      return "list of strings";
  }
}

// A TOML basic string of s: quotes, backslashes and control characters escaped.
std::string TomlQuoted(const std::string& s) {
  std::string q = "\"";
  for (const char ch : s) {
    switch (ch) {
      case '"': q += "\\\""; break;
      case '\\': q += "\\\\"; break;
      case '\n': q += "\\n"; break;
      case '\t': q += "\\t"; break;
      case '\r': q += "\\r"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
          q += fmt::format("\\u{:04X}", static_cast<unsigned char>(ch));
        else
          q += ch;
    }
  }
  return q + "\"";
}

std::string FieldValueString(const Field& f) {
  std::ostringstream s;
  std::visit(
      [&](auto* p) {
        using T = std::decay_t<decltype(*p)>;
        if constexpr (std::is_same_v<T, std::string>) {
          s << TomlQuoted(*p);
        } else if constexpr (std::is_same_v<T, std::vector<int>> ||
                             std::is_same_v<T, std::vector<std::string>>) {
          s << "[";
          for (size_t i = 0; i < p->size(); ++i) {
            if (i) s << ", ";
            if constexpr (std::is_same_v<T, std::vector<std::string>>)
              s << TomlQuoted((*p)[i]);
            else
              s << (*p)[i];
          }
          s << "]";
        } else {
          s << *p;
        }
      },
      f.value);
  return s.str();
}

std::string KeyLocation(const std::string& source, const std::string& key) {
  if (source == "--set") return "--set " + key;
  return "recipe '" + source + "': " + key;
}

namespace {

std::string Allowed(const Field& f) {
  if (!f.allowed.empty()) {
    std::string s;
    for (const auto& a : f.allowed) s += (s.empty() ? "" : ", ") + ("\"" + a + "\"");
    return "one of " + s;
  }
  std::string s = FieldTypeName(f);
  if (f.min < f.max) {
    std::ostringstream r;
    r << " in [" << f.min << ", " << f.max << "]";
    s += r.str();
  }
  return s;
}

std::string NodeText(const toml::node& n) {
  std::ostringstream s;
  if (n.is_string())
    s << '"' << n.value<std::string>().value_or("") << '"';
  else if (n.is_table())
    s << "a table";
  else if (n.is_array())
    s << "an array";
  else if (n.is_boolean())
    s << (n.value<bool>().value_or(false) ? "true" : "false");
  else if (n.is_integer())
    s << n.value<int64_t>().value_or(0);
  else if (n.is_floating_point())
    s << n.value<double>().value_or(0);
  else
    s << "a value";
  return s.str();
}

void CheckRange(const Field& f, double v, const std::string& source) {
  // Written so that NaN (every comparison false) is out of range too.
  if (!std::isfinite(v) || (f.min < f.max && !(v >= f.min && v <= f.max))) {
    std::ostringstream s;
    s << KeyLocation(source, f.key) << " = " << v << " is out of range; allowed: " << Allowed(f);
    FailInput(s.str());
  }
}

// Assigns a TOML node to a field, with a clear error on a wrong type or value.
void Assign(const Field& f, const toml::node& n, const std::string& source) {
  const std::string bad = KeyLocation(source, f.key) + " = " + NodeText(n) +
                          " has the wrong type; allowed: " + Allowed(f);
  std::visit(
      [&](auto* p) {
        using T = std::decay_t<decltype(*p)>;
        if constexpr (std::is_same_v<T, int>) {
          auto v = n.value_exact<int64_t>();
          if (!v && n.is_floating_point()) {
            const double d = *n.value<double>();
            if (d == static_cast<double>(static_cast<int64_t>(d))) v = static_cast<int64_t>(d);
          }
          if (!v) FailInput(bad);
          CheckRange(f, static_cast<double>(*v), source);
          *p = static_cast<int>(*v);
        } else if constexpr (std::is_same_v<T, double>) {
          auto v = n.value<double>();
          if (!v || n.is_boolean() || n.is_string()) FailInput(bad);
          CheckRange(f, *v, source);
          *p = *v;
        } else if constexpr (std::is_same_v<T, std::string>) {
          auto v = n.value_exact<std::string>();
          if (!v) FailInput(bad);
          if (!f.allowed.empty() &&
              std::find(f.allowed.begin(), f.allowed.end(), *v) == f.allowed.end())
            FailInput(KeyLocation(source, f.key) + " = \"" + *v +
                      "\" is not allowed; allowed: " + Allowed(f));
          *p = *v;
        } else if constexpr (std::is_same_v<T, std::vector<int>>) {
          const toml::array* a = n.as_array();
          if (!a) FailInput(bad);
          p->clear();
          for (const auto& e : *a) {
            auto v = e.value_exact<int64_t>();
            // Lists hold positive integers unless the field gives its own range.
            const double lo = f.min < f.max ? f.min : 1, hi = f.min < f.max ? f.max : 1e18;
            if (!v || *v < lo || *v > hi)
              FailInput(KeyLocation(source, f.key) + " must hold integers in [" +
                        fmt::format("{:g}", lo) + ", " + fmt::format("{:g}", hi) + "], got " +
                        NodeText(e));
            p->push_back(static_cast<int>(*v));
          }
        } else {
          const toml::array* a = n.as_array();
          if (!a) FailInput(bad);
          p->clear();
          for (const auto& e : *a) {
            auto v = e.value_exact<std::string>();
            // run.sweep_values are override texts: numbers and booleans are taken as written.
            if (!v && f.key == "run.sweep_values" && (e.is_number() || e.is_boolean())) {
              p->push_back(NodeText(e));
              continue;
            }
            if (!v)
              FailInput(KeyLocation(source, f.key) + " must hold strings, got " + NodeText(e));
            p->push_back(*v);
          }
        }
      },
      f.value);
}

std::string OptionValueText(const toml::node& n) {
  if (n.is_string()) return *n.value<std::string>();
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  if (n.is_integer()) return std::to_string(*n.value<int64_t>());
  if (n.is_floating_point()) {
    std::ostringstream s;
    s.precision(17);
    s << *n.value<double>();
    return s.str();
  }
  if (const toml::array* a = n.as_array()) {  // a list option (rope's long_factors): "x, y, z"
    std::string joined;
    for (const toml::node& e : *a) {
      LEXP_INPUT_CHECK(e.is_value(), "a list option holds numbers, strings or booleans");
      joined += (joined.empty() ? "" : ", ") + OptionValueText(e);
    }
    return joined;
  }
  return "";
}

void LoadEncodingOptions(RecipeConfig& c, const toml::table& t, const std::string& source) {
  for (const auto& [enc_key, node] : t) {
    const std::string enc(enc_key.str());
    const toml::table* opts = node.as_table();
    LEXP_INPUT_CHECK(opts != nullptr, KeyLocation(source, "encoding_options." + enc) +
                                          " must be a table of options");
    FindEncoding(enc);        // unknown encoding names are errors
    c.encoding_options[enc];  // an empty table still names the encoding
    for (const auto& [k, v] : *opts) {
      const std::string key = "encoding_options." + enc + "." + std::string(k.str());
      LEXP_INPUT_CHECK(v.is_value() || v.is_array(),
                       KeyLocation(source, key) +
                           " must be a number, string, boolean or a list of them");
      c.encoding_options[enc][std::string(k.str())] = OptionValueText(v);
    }
  }
}

}  // namespace

RecipeConfig ParseRecipe(const std::string& toml_text, const std::string& source) {
  RecipeConfig c;
  c.source_name = source;
  c.source_text = toml_text;
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream s;
    s << "recipe '" << source << "' is not valid TOML: " << e.description() << " (line "
      << e.source().begin.line << ", column " << e.source().begin.column << ")";
    FailInput(s.str());
  }
  std::vector<Field> fields = Fields(c);
  std::map<std::string, std::vector<std::string>> keys_of_section;
  for (const auto& f : fields) {
    const auto dot = f.key.find('.');
    keys_of_section[f.key.substr(0, dot)].push_back(f.key.substr(dot + 1));
  }
  for (const auto& [sec_key, sec_node] : root) {
    const std::string sec(sec_key.str());
    if (sec == "encoding_options") {
      LEXP_INPUT_CHECK(sec_node.is_table(), KeyLocation(source, sec) + " must be a table");
      LoadEncodingOptions(c, *sec_node.as_table(), source);
      continue;
    }
    if (!keys_of_section.count(sec)) {
      std::string known;
      for (const auto& [s, _] : keys_of_section) known += "[" + s + "] ";
      FailInput(KeyLocation(source, sec) + " is not a known section; sections: " + known +
                "[encoding_options]");
    }
    const toml::table* t = sec_node.as_table();
    LEXP_INPUT_CHECK(t != nullptr, KeyLocation(source, sec) + " must be a table ([" + sec + "])");
    for (const auto& [k, v] : *t) {
      const std::string key = sec + "." + std::string(k.str());
      auto it =
          std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
      if (it == fields.end()) {
        std::string known;
        for (const auto& n : keys_of_section[sec]) known += (known.empty() ? "" : ", ") + n;
        FailInput(KeyLocation(source, key) + " is not a known key; keys of [" + sec +
                  "]: " + known);
      }
      Assign(*it, v, source);
    }
  }
  return c;
}

void ApplyOverrides(RecipeConfig& c, const std::vector<std::string>& sets) {
  std::vector<Field> fields = Fields(c);
  for (const std::string& s : sets) {
    const auto eq = s.find('=');
    LEXP_INPUT_CHECK(eq != std::string::npos && eq > 0,
                     "--set '" + s + "': expected key=value, e.g. --set train.steps=200");
    const std::string key = s.substr(0, eq), value = s.substr(eq + 1);
    toml::table parsed;
    std::string text = "v = " + value;
    try {
      parsed = toml::parse(text);
    } catch (const toml::parse_error&) {
      // Bare words are strings; a,b,c is a list of bare words or numbers.
      std::string list;
      std::stringstream ss(value);
      std::string item;
      bool any = false;
      while (std::getline(ss, item, ',')) {
        toml::table probe;
        bool number = true;
        try {
          probe = toml::parse("x = " + item);
        } catch (const toml::parse_error&) {
          number = false;
        }
        list += std::string(any ? ", " : "") + (number ? item : "\"" + item + "\"");
        any = true;
      }
      const bool is_list = value.find(',') != std::string::npos;
      parsed = toml::parse("v = " + (is_list ? "[" + list + "]" : "\"" + value + "\""));
    }
    const toml::node& node = *parsed.get("v");
    if (key.rfind("encoding_options.", 0) == 0) {
      const std::string rest = key.substr(17);
      const auto dot = rest.find('.');
      LEXP_INPUT_CHECK(dot != std::string::npos,
                       "--set " + key + ": expected encoding_options.<encoding>.<option>=value");
      const std::string enc = rest.substr(0, dot);
      FindEncoding(enc);
      c.encoding_options[enc][rest.substr(dot + 1)] = OptionValueText(node);
      continue;
    }
    auto it =
        std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
    if (it == fields.end()) {
      std::string known;
      for (const auto& f : fields) known += (known.empty() ? "" : ", ") + f.key;
      FailInput("--set " + key + ": not a recipe key; keys: " + known);
    }
    // A single value for a list field becomes a one-element list.
    if ((it->value.index() == 3 || it->value.index() == 4) && !node.is_array()) {
      toml::table wrapped = toml::parse(fmt::format(
          "v = [{}]",
          node.is_string() ? TomlQuoted(*node.value<std::string>()) : value));
      Assign(*it, *wrapped.get("v"), "--set");
    } else {
      Assign(*it, node, "--set");
    }
  }
}

std::string RecipeToToml(RecipeConfig& c) {
  std::ostringstream s;
  std::string section;
  for (const Field& f : Fields(c)) {
    const auto dot = f.key.find('.');
    const std::string sec = f.key.substr(0, dot);
    if (sec != section) {
      s << (section.empty() ? "" : "\n") << "[" << sec << "]\n";
      section = sec;
    }
    s << f.key.substr(dot + 1) << " = " << FieldValueString(f) << "\n";
  }
  for (const auto& [enc, opts] : c.encoding_options) {
    s << "\n[encoding_options." << enc << "]\n";
    for (const auto& [k, v] : opts) s << k << " = " << TomlQuoted(v) << "\n";
  }
  return s.str();
}


}  // namespace lexp
