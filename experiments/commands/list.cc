// lexp list TOPIC: what exists (encodings, scalings, patterns, tasks, recipe keys, capture sites).
#include <fmt/core.h>

#include <cstdio>

#include "experiments/commands/command.h"
#include "experiments/core/default_recipe.h"
#include "experiments/core/run_file.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"
#include "nn/model/capture_sites.h"
#include "pe/registry.h"
#include "pe/rope.h"
#include "pe/rope_scaling.h"

namespace lexp::cli {
namespace {

class ListCommand final : public Command {
 public:
  CLI::App* Declare(CLI::App& app, Shared&) override {
    auto* list = app.add_subcommand(
        "list", "list encodings, scalings, patterns, tasks, recipe keys or capture sites");
    list->add_option("TOPIC", what_, "encodings | scalings | patterns | tasks | keys | sites")
        ->required();
    list->add_option("RUN_FILE", run_file_,
                     "sites only: the shapes of this run file's model (default: the default "
                     "recipe's)");
    return list;
  }
  int Run(Shared&) override {
    const std::string& what = what_;
    LEXP_INPUT_CHECK(run_file_.empty() || what == "sites",
                     "lexp list: a run file goes with the topic 'sites' only (lexp list sites "
                     "RUN_FILE), not '" + what + "'");
    if (what == "encodings") {
      for (const auto& e : ListEncodings()) {
        PrintLine(fmt::format("{:<15} {}", e.name, e.family));
        PrintLine(fmt::format("    paper: {}", e.paper));
        PrintLine(fmt::format("    sites: {}", e.sites));
        if (!e.cannot_remap.empty())
          PrintLine(fmt::format("    patterns lambda and sinks: refused: {}", e.cannot_remap));
        for (const auto& o : e.options())
          PrintLine(fmt::format("    {:<14} default {:<8} {}{}", o.name, o.default_value, o.help,
                                o.allowed.empty() ? std::string() : fmt::format(" ({})", o.allowed)));
      }
    } else if (what == "tasks") {
      PrintLine(
          "name, what it asks, source; then the decoding its source used (eval.decoding = \"task\" "
          "takes it in the decoder layout) and whether the decoder layout ends its answer with the "
          "end token:");
      for (const auto& t : ListTasks()) {
        const auto task = CreateTask(t.name, {});
        PrintLine(fmt::format("{:<28} {}  ({})", t.name, t.description, t.source));
        PrintLine(fmt::format("{:<28} decoding: {}; {}", "", DecodingName(task->SourceDecoding()),
                              task->HasAnswer() ? "answer ends with the end token"
                                                : "no answer to end (teacher forced only)"));
      }
    } else if (what == "scalings") {
      PrintLine(
          "RoPE scaling rules (rope option `scaling`, or lexp eval RUN --scale RULE:key=value):");
      for (const auto& r : RopeScalingInfos())
        PrintLine(
            fmt::format("  {:<16} {}  [options: {}]  ({})", r.name, r.summary, r.options, r.paper));
      PrintLine("  option details (defaults in brackets):");
      for (const auto& o : FindEncoding("rope").options())
        if (o.name != "base" && o.name != "pairing" && o.name != "scaling")
          PrintLine(fmt::format("    {:<18} [{}] {}", o.name, o.default_value, o.help));
    } else if (what == "patterns") {
      PrintLine(
          "Attention patterns (recipe [model] pattern = ..., with pattern_window / pattern_global "
          "/");
      PrintLine(
          "pattern_limit / pattern_memory / pattern_group / pattern_shift, applied at evaluation, in training or "
          "always with pattern_when):");
      PrintLine("  full            the model's causal or bidirectional mask (default)");
      PrintLine("  sliding_window  query i sees keys i-w+1..i (w = pattern_window)");
      PrintLine(
          "  bca             blockwise causal attention, block l = pattern_window (Sun et al. "
          "2022)");
      PrintLine(
          "  lambda          LM-Infinite: first pattern_global keys + last pattern_window keys; "
          "global");
      PrintLine(
          "                  keys outside the window seen at distance pattern_limit (Han et al. "
          "2023,");
      PrintLine(
          "                  arXiv:2308.16137); logit-term encodings, rope, rope_partial, nope");
      PrintLine(
          "  dilated         LongNet segments pattern_segments with dilations pattern_dilations "
          "(one "
          "of");
      PrintLine(
          "                  them 1); head h keeps offset h mod r; sets merged by their softmax "
          "mass");
      PrintLine("                  (Ding et al. 2023, arXiv:2307.02486)");
      PrintLine(
          "  shifted_sparse  LongLoRA S2-Attn: groups of pattern_ratio * T tokens, half the heads "
          "shifted");
      PrintLine(
          "                  by half a group, no wrap-around; training only: pattern_when = "
          "\"train\"");
      PrintLine("                  (Chen et al. 2023, arXiv:2309.12307)");
      PrintLine(
          "  sinks           StreamingLLM: first pattern_global keys + last pattern_window keys, "
          "positions");
      PrintLine(
          "                  renumbered inside the cache (Xiao et al. 2023, arXiv:2309.17453); "
          "same");
      PrintLine("                  encodings as lambda");
      PrintLine(
          "  recurrence      Transformer-XL: segments of pattern_window tokens, each query sees "
          "its");
      PrintLine(
          "                  segment and the pattern_memory keys before it, read without a "
          "gradient");
      PrintLine(
          "                  into their states (Dai et al. 2019, arXiv:1901.02860); pattern_when "
          "=");
      PrintLine("                  \"always\" trains with it");
      PrintLine(
          "  self_extend     Self-Extend: keys pattern_window or more tokens away seen at the "
          "grouped");
      PrintLine(
          "                  distance floor(p_i/G) + W - floor(W/G) - floor(p_j/G), G = "
          "pattern_group");
      PrintLine(
          "                  (Jin et al. 2024, arXiv:2401.01325); same encodings as lambda");
      PrintLine(
          "  string          STRING: keys pattern_shift (S) or more tokens away seen at d - S + W, "
          "W =");
      PrintLine(
          "                  pattern_window (An et al. 2024, arXiv:2410.18745); same encodings as "
          "lambda");
      PrintLine(
          "  anchor          AnchorAttention: token 0 is an anchor every query sees; the rest is "
          "packed");
      PrintLine(
          "                  documents of pattern_window tokens, each seeing itself only, with "
          "position");
      PrintLine(
          "                  ids running on (Wang et al. 2024, arXiv:2411.13476)");
    } else if (what == "keys") {
      std::fputs(RecipeKeysHelp().c_str(), stdout);
    } else if (what == "sites") {
      // The model of a run file (its recipe, read whole and checked), or the default recipe's.
      const RecipeConfig c = run_file_.empty()
                                 ? ParseRecipe(kDefaultRecipeToml, "<embedded default recipe>")
                                 : RunFile::Read(run_file_).recipe;
      const ModelConfig m = c.Model(1);
      PrintLine(
          "Capture sites: probe.capture = [\"layer*.attn.q\", \"layer1.resid_post\"] (names or "
          "globs) in a recipe, or lexp eval RUN --capture GLOB...,\nstores them for the "
          "probe.stored_samples sequences at every probe length, as /probe/length_<n>/<site> with "
          "a leading axis `sample`.");
      PrintLine(fmt::format(
          "Shapes per sequence for {} (C = {}, H = {}, D = {}, F = {}, {} layers: "
          "layer0..layer{}); T = the sequence's tokens:",
          run_file_.empty() ? std::string("the default recipe's model")
                            : fmt::format("the model of {}", run_file_),
          m.d_model, m.n_heads, m.HeadDim(), m.FF(), m.n_layers, m.n_layers - 1));
      const int kT = -1;  // printed as T
      for (const auto& s : CaptureSites(m, kT)) {
        std::string shape;
        for (const uint64_t d : s.dims)
          shape += (shape.empty() ? "" : ", ") +
                   (d == static_cast<uint64_t>(kT) ? std::string("T") : std::to_string(d));
        PrintLine(
            fmt::format("  {:<20} {:<13} {:<19} {}", s.name, "[" + shape + "]", s.axes, s.what));
      }
    } else {
      FailInput("lexp list: unknown topic '" + what +
                "'; topics: encodings, scalings, patterns, tasks, keys, sites");
    }
    return 0;
  }

 private:
  std::string what_, run_file_;
};

}  // namespace

std::unique_ptr<Command> MakeListCommand() { return std::make_unique<ListCommand>(); }

}  // namespace lexp::cli
