#include "experiments/core/dump_command.h"

#include <fmt/core.h>

#include <sstream>
#include <vector>

#include "nn/check.h"
#include "nn/io/hdf5.h"

namespace lexp {
namespace {

// A dataset's attribute as text, or "" when it has none.
std::string ChildAttr(const h5::Group& g, const std::string& child, const std::string& name) {
  try {
    return g.ChildAttrString(child, name);
  } catch (const Error&) {
    return "";
  }
}

std::string Shape(const std::vector<uint64_t>& dims) {
  std::string s;
  for (uint64_t d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

// The dataset's shape and values (numbers), or nullopt-like false for a text dataset.
bool ReadNumbers(const h5::Group& g, const std::string& name, std::vector<double>* v,
                 std::vector<uint64_t>* dims) {
  try {
    *v = g.ReadDoubles(name, dims);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string DescribeChild(const h5::Group& g, const std::string& name) {
  if (g.IsGroup(name)) return fmt::format("  {}/  (group)\n", name);
  std::vector<double> v;
  std::vector<uint64_t> dims;
  if (!ReadNumbers(g, name, &v, &dims)) return fmt::format("  {}  (text)\n", name);
  const std::string axes = ChildAttr(g, name, "axes"), units = ChildAttr(g, name, "units");
  return fmt::format("  {}  [{}]{}{}\n", name, Shape(dims), axes.empty() ? "" : "  axes: " + axes,
                     units.empty() ? "" : "  units: " + units);
}

}  // namespace

std::string DumpHdf5(const std::string& file, const std::string& path, long max_values) {
  h5::Reader r(file);
  std::vector<std::string> parts;
  {
    std::stringstream ss(path);
    for (std::string p; std::getline(ss, p, '/');)
      if (!p.empty()) parts.push_back(p);
  }
  h5::Group g = r.root().OpenGroup(".");
  std::string at = "/";
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    LEXP_INPUT_CHECK(g.Has(parts[i]) && g.IsGroup(parts[i]),
                     "'" + file + "' has no group '" + at + parts[i] + "'");
    g = g.OpenGroup(parts[i]);
    at += parts[i] + "/";
  }
  std::string out;
  const bool whole_group = parts.empty() || (g.Has(parts.back()) && g.IsGroup(parts.back()));
  if (whole_group) {
    if (!parts.empty()) g = g.OpenGroup(parts.back());
    const std::string name = parts.empty() ? "/" : at + parts.back();
    out += name + " (group)\n";
    for (const auto& a : g.AttrNames()) out += "  @" + a + " = " + g.AttrAsText(a) + "\n";
    for (const auto& c : g.Children()) out += DescribeChild(g, c);
    return out;
  }
  const std::string name = parts.back();
  LEXP_INPUT_CHECK(g.Has(name), "'" + file + "' has no dataset or group '" + at + name + "'");
  std::vector<double> v;
  std::vector<uint64_t> dims;
  if (!ReadNumbers(g, name, &v, &dims)) return at + name + " (text)\n" + g.ReadString(name) + "\n";
  out += at + name + "  [" + Shape(dims) + "]\n";
  const std::string axes = ChildAttr(g, name, "axes"), units = ChildAttr(g, name, "units");
  if (!axes.empty()) out += "axes: " + axes + "\n";
  if (!units.empty()) out += "units: " + units + "\n";
  const uint64_t row = dims.empty() ? 1 : dims.back();
  const uint64_t n = max_values > 0 ? std::min<uint64_t>(v.size(), max_values) : v.size();
  for (uint64_t i = 0; i < n; i += row) {
    // The indices of the axes before the last, then the row.
    std::string index;
    uint64_t rest = i / row;
    for (size_t d = dims.size() > 0 ? dims.size() - 1 : 0; d-- > 0;) {
      index = std::to_string(rest % dims[d]) + (index.empty() ? "" : ",") + index;
      rest /= dims[d];
    }
    out += index.empty() ? "" : "[" + index + "] ";
    for (uint64_t j = i; j < std::min<uint64_t>(i + row, n); ++j)
      out += fmt::format("{}{:.9g}", j > i ? " " : "", v[j]);
    out += "\n";
  }
  if (n < v.size()) out += fmt::format("... {} more values (--all prints them)\n", v.size() - n);
  return out;
}

}  // namespace lexp
