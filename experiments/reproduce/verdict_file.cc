#include "experiments/reproduce/verdict_file.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "experiments/core/provenance.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figure_kit.h"

namespace lexp {
namespace {

std::vector<std::string> Split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t at = 0;
  while (true) {
    const auto next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + sep.size();
  }
}

void WriteVector(const h5::Group& g, const std::string& name, const std::vector<double>& x,
                 const std::string& axes) {
  g.WriteDoubles(name, x, {x.size()}, axes);
}

}  // namespace

void WriteVerdictFile(const std::string& path, const VerdictRecord& rec) {
  h5::Writer w(path);
  const h5::Group& root = w.root();
  WriteProvenance(root, ThreadLimit::Active());
  root.SetAttr("format", "lexp-verdict/2");
  const Claim& c = rec.claim;
  const ClaimCriterion& k = c.criterion;
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"id", c.id},
           {"name", c.name},
           {"statement", c.statement},
           {"source", c.source},
           {"published", c.published},
           {"protocol", c.protocol},
           {"deviations", c.deviations},
           {"budget", rec.budget},
           {"verdict", rec.verdict.verdict},
           {"reason", rec.verdict.reason},
           {"metric", k.metric},
           {"seeds", k.seeds},
           {"holds", fmt::format("{}", fmt::join(k.holds, "; "))},
           {"task", k.task}})
    root.SetAttr(key, value);
  root.SetAttr("lengths", fmt::format("{}..{}", k.length_lo, k.length_hi));
  root.SetAttr("relative_to",
               k.relative_lo > 0 ? fmt::format("{}..{}", k.relative_lo, k.relative_hi) : "");
  root.SetAttr("compute", k.compute);
  root.SetAttr("at_compute", rec.verdict.at_compute);
  root.SetAttr("reach", k.reach);
  root.SetAttr("train_max_length", static_cast<int64_t>(rec.verdict.train_max_length));
  root.SetAttr("minutes", rec.minutes);
  root.SetAttr("labels", [&] {
    std::vector<std::string> labels;
    for (const auto& g : rec.verdict.groups) labels.push_back(g.label);
    return fmt::format("{}", fmt::join(labels, ","));
  }());
  const h5::Group groups = root.CreateGroup("groups");
  for (const auto& g : rec.verdict.groups) {
    const h5::Group s = groups.CreateGroup(g.label);
    s.SetAttr("score", g.score);
    s.SetAttr("lo", g.lo);
    s.SetAttr("hi", g.hi);
    s.SetAttr("interval", g.interval);
    s.SetAttr("incomplete_runs", static_cast<int64_t>(g.incomplete));
    s.SetAttr("censored_runs", static_cast<int64_t>(g.censored));
    if (k.published.count(g.label)) s.SetAttr("published", k.published.at(g.label));
    std::vector<int64_t> seeds(g.seeds.begin(), g.seeds.end());
    s.WriteInts("seed", seeds, {seeds.size()}, "seed");
    WriteVector(s, "per_seed", g.per_seed, "seed");
    // The curve's axis: the evaluated lengths, or the compute before each evaluation.
    const std::string x = k.compute.empty() ? "length" : "compute";
    WriteVector(s, x, g.x, x);
    WriteVector(s, "curve_mean", g.curve_mean, x);
    WriteVector(s, "curve_min", g.curve_min, x);
    WriteVector(s, "curve_max", g.curve_max, x);
  }
  const h5::Group comps = root.CreateGroup("comparisons");
  for (size_t i = 0; i < rec.verdict.comparisons.size(); ++i) {
    const auto& r = rec.verdict.comparisons[i];
    const h5::Group s = comps.CreateGroup(fmt::format("{}", i));
    s.SetAttr("text", r.comparison.Text());
    s.SetAttr("in_direction", r.in_direction);
    s.SetAttr("test", r.test);
    s.SetAttr("paired_seeds", static_cast<int64_t>(r.paired_seeds));
    s.SetAttr("difference", r.difference.score);
    s.SetAttr("difference_lo", r.difference.lo);
    s.SetAttr("difference_hi", r.difference.hi);
    s.SetAttr("significant_for", r.significant_for);
    s.SetAttr("significant_against", r.significant_against);
    s.SetAttr("family_for", r.family_for);
    s.SetAttr("family_against", r.family_against);
    for (const auto& [side, x] : {std::pair{"a", r.a}, std::pair{"b", r.b}}) {
      s.SetAttr(std::string(side) + "_score", x.score);
      s.SetAttr(std::string(side) + "_lo", x.lo);
      s.SetAttr(std::string(side) + "_hi", x.hi);
    }
  }
  if (!rec.trend.empty()) {
    const h5::Group trend = root.CreateGroup("trend");
    trend.SetAttr("stage", rec.trend_stage);
    for (size_t i = 0; i < rec.trend.size(); ++i) {
      const TrendPoint& p = rec.trend[i];
      const h5::Group t = trend.CreateGroup(fmt::format("{}", i));
      t.SetAttr("steps", static_cast<int64_t>(p.steps));
      t.SetAttr("budget", p.budget);
      t.SetAttr("verdict", p.verdict.verdict);
      t.SetAttr("reason", p.verdict.reason);
      for (const auto& g : p.verdict.groups) {
        const h5::Group l = t.CreateGroup(g.label);
        l.SetAttr("score", g.score);
        l.SetAttr("lo", g.lo);
        l.SetAttr("hi", g.hi);
        l.SetAttr("runs", static_cast<int64_t>(g.per_seed.size()));
      }
    }
  }
  root.CreateGroup("status").SetAttr("state", "completed");
  w.Commit();
}

VerdictRecord ReadVerdictFile(const std::string& path) {
  h5::Reader r(path);
  const h5::Group& root = r.root();
  const std::string format = root.HasAttr("format") ? root.AttrString("format") : "";
  LEXP_INPUT_CHECK(format == "lexp-verdict/1" || format == "lexp-verdict/2",
                   "'" + path + "' is not a lexp verdict file (format lexp-verdict/1 or /2)");
  VerdictRecord rec;
  rec.format = format;
  if (root.HasAttr("git_commit")) rec.commit = root.AttrString("git_commit");
  Claim& c = rec.claim;
  c.id = root.AttrString("id");
  c.name = root.AttrString("name");
  c.statement = root.AttrString("statement");
  c.source = root.AttrString("source");
  c.published = root.AttrString("published");
  c.protocol = root.AttrString("protocol");
  c.deviations = root.AttrString("deviations");
  c.criterion.metric = root.AttrString("metric");
  c.criterion.seeds = root.AttrString("seeds");
  c.criterion.holds = Split(root.AttrString("holds"), "; ");
  c.criterion.task = root.AttrString("task");
  const auto lengths = Split(root.AttrString("lengths"), "..");
  if (lengths.size() == 2) {
    c.criterion.length_lo = std::stoi(lengths[0]);
    c.criterion.length_hi = std::stoi(lengths[1]);
  }
  rec.budget = root.AttrString("budget");
  rec.minutes = root.AttrDouble("minutes");
  rec.verdict.verdict = root.AttrString("verdict");
  rec.verdict.reason = root.AttrString("reason");
  rec.verdict.train_max_length = static_cast<int>(root.AttrInt("train_max_length"));
  if (root.HasAttr("compute")) {  // older files judge over lengths only
    c.criterion.compute = root.AttrString("compute");
    rec.verdict.at_compute = root.AttrDouble("at_compute");
    if (root.HasAttr("reach")) c.criterion.reach = root.AttrDouble("reach");
  }
  const h5::Group groups = root.OpenGroup("groups");
  for (const auto& label : SplitCommas(root.AttrString("labels"))) {
    const h5::Group s = groups.OpenGroup(label);
    GroupScore g;
    g.label = label;
    g.score = s.AttrDouble("score");
    g.lo = s.AttrDouble("lo");
    g.hi = s.AttrDouble("hi");
    g.interval = s.AttrString("interval");
    g.incomplete = static_cast<int>(s.AttrInt("incomplete_runs"));
    if (s.HasAttr("censored_runs")) g.censored = static_cast<int>(s.AttrInt("censored_runs"));
    if (s.HasAttr("published")) c.criterion.published[label] = s.AttrDouble("published");
    for (const int64_t x : s.ReadInts("seed")) g.seeds.push_back(static_cast<int>(x));
    g.per_seed = s.ReadDoubles("per_seed");
    g.x = s.ReadDoubles(c.criterion.compute.empty() ? "length" : "compute");
    g.curve_mean = s.ReadDoubles("curve_mean");
    g.curve_min = s.ReadDoubles("curve_min");
    g.curve_max = s.ReadDoubles("curve_max");
    rec.verdict.groups.push_back(std::move(g));
  }
  const h5::Group comps = root.OpenGroup("comparisons");
  for (size_t i = 0; comps.Has(fmt::format("{}", i)); ++i) {
    const h5::Group s = comps.OpenGroup(fmt::format("{}", i));
    ComparisonResult cr;
    cr.comparison = ParseComparison(s.AttrString("text"), path);
    cr.in_direction = s.AttrInt("in_direction") != 0;
    if (format == "lexp-verdict/1") {
      // Then a comparison held when the sides' intervals did not overlap.
      cr.test = "intervals compared";
      cr.significant_for = cr.family_for = s.AttrInt("beyond_intervals") != 0;
    } else {
      cr.test = s.AttrString("test");
      cr.significant_for = s.AttrInt("significant_for") != 0;
      cr.significant_against = s.AttrInt("significant_against") != 0;
      cr.family_for = s.AttrInt("family_for") != 0;
      cr.family_against = s.AttrInt("family_against") != 0;
    }
    if (s.HasAttr("a_score")) {  // files of before 2026-12-02 lack the sides' scores
      cr.a = {s.AttrDouble("a_score"), s.AttrDouble("a_lo"), s.AttrDouble("a_hi")};
      cr.b = {s.AttrDouble("b_score"), s.AttrDouble("b_lo"), s.AttrDouble("b_hi")};
    }
    if (s.HasAttr("paired_seeds")) {
      cr.paired_seeds = static_cast<int>(s.AttrInt("paired_seeds"));
      cr.difference = {s.AttrDouble("difference"), s.AttrDouble("difference_lo"),
                       s.AttrDouble("difference_hi")};
    }
    rec.verdict.comparisons.push_back(cr);
  }
  if (root.Has("trend")) {
    const h5::Group trend = root.OpenGroup("trend");
    rec.trend_stage = trend.AttrString("stage");
    for (size_t i = 0; trend.Has(fmt::format("{}", i)); ++i) {
      const h5::Group t = trend.OpenGroup(fmt::format("{}", i));
      TrendPoint p;
      p.steps = static_cast<int>(t.AttrInt("steps"));
      p.budget = t.AttrInt("budget") != 0;
      p.verdict.verdict = t.AttrString("verdict");
      p.verdict.reason = t.AttrString("reason");
      for (const auto& g : rec.verdict.groups) {
        if (!t.Has(g.label)) continue;
        const h5::Group l = t.OpenGroup(g.label);
        GroupScore x;
        x.label = g.label;
        x.score = l.AttrDouble("score");
        x.lo = l.AttrDouble("lo");
        x.hi = l.AttrDouble("hi");
        p.verdict.groups.push_back(x);
      }
      rec.trend.push_back(p);
    }
  }
  return rec;
}

}  // namespace lexp
