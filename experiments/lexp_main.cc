// The `lexp` command: run recipes, redraw figures, list what exists, and benchmark.
// Exit codes: 0 success; 1 a model of the sweep diverged (its run file says so); 2 bad input
// (recipe, options, files, memory), also when found while a model ran; 3 internal error.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "experiments/analyze.h"
#include "experiments/assembled_model.h"
#include "experiments/base_law_command.h"
#include "experiments/bench.h"
#include "experiments/default_recipe.h"
#include "experiments/dump_command.h"
#include "experiments/eval_command.h"
#include "experiments/gemm_bench.h"
#include "experiments/job_list.h"
#include "experiments/memory_estimate.h"
#include "experiments/pe_table.h"
#include "experiments/recipe.h"
#include "experiments/run_file.h"
#include "experiments/slurm.h"
#include "experiments/sweep.h"
#include "experiments/tasks/task.h"
#include "experiments/theory_command.h"
#include "nn/check.h"
#include "nn/model/capture_sites.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figure_kit.h"
#include "notebooks_cpp/figures.h"
#include "pe/registry.h"
#include "pe/rope.h"

namespace {

void PrintLine(const std::string& s) {
  std::fputs((s + "\n").c_str(), stdout);
  std::fflush(stdout);
}

std::string ReadRecipeFile(const std::string& path) {
  LEXP_INPUT_CHECK(!path.empty(),
                   "the recipe path is empty (omit it to run the embedded default recipe)");
  LEXP_INPUT_CHECK(std::filesystem::exists(path), "recipe '" + path + "' does not exist");
  LEXP_INPUT_CHECK(std::filesystem::is_regular_file(path),
                   "recipe '" + path + "' is not a file (a TOML recipe was expected)");
  std::ifstream f(path);
  LEXP_INPUT_CHECK(f.good(), "cannot read recipe '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string RecipeKeysHelp() {
  lexp::RecipeConfig c;
  std::string s =
      "Recipe keys (TOML sections [run] [task] [model] [train] [eval] [probe]; "
      "defaults in brackets):\n";
  for (const auto& f : lexp::Fields(c))
    s += fmt::format("  {:<22} {:<16} {}  [{}]\n", f.key, lexp::FieldTypeName(f), f.help,
                     lexp::FieldValueString(f));
  s += "  encoding_options.<encoding>.<option>   per-encoding options (lexp list encodings)\n";
  return s;
}

int ListCommand(const std::string& what) {
  if (what == "encodings") {
    for (const auto& e : lexp::ListEncodings()) {
      PrintLine(fmt::format("{:<15} {}", e.name, e.family));
      PrintLine(fmt::format("    paper: {}", e.paper));
      PrintLine(fmt::format("    sites: {}", e.sites));
      if (!e.cannot_remap.empty())
        PrintLine(fmt::format("    patterns lambda and sinks: refused: {}", e.cannot_remap));
      for (const auto& o : e.options)
        PrintLine(fmt::format("    {:<14} default {:<8} {}", o.name, o.default_value, o.help));
    }
  } else if (what == "tasks") {
    PrintLine(
        "name, what it asks, source; then the decoding its source used (eval.decoding = \"task\" "
        "takes it in the decoder layout) and whether the decoder layout ends its answer with the "
        "end token:");
    for (const auto& t : lexp::ListTasks()) {
      const auto task = lexp::CreateTask(t.name, {});
      PrintLine(fmt::format("{:<28} {}  ({})", t.name, t.description, t.source));
      PrintLine(fmt::format("{:<28} decoding: {}; {}", "",
                            lexp::DecodingName(task->SourceDecoding()),
                            task->HasAnswer() ? "answer ends with the end token"
                                              : "no answer to end (teacher forced only)"));
    }
  } else if (what == "scalings") {
    PrintLine(
        "RoPE scaling rules (rope option `scaling`, or lexp eval RUN --scale RULE:key=value):");
    for (const auto& r : lexp::RopeScalingInfos())
      PrintLine(
          fmt::format("  {:<16} {}  [options: {}]  ({})", r.name, r.summary, r.options, r.paper));
    PrintLine("  option details (defaults in brackets):");
    for (const auto& o : lexp::RopeOptionSpecs())
      if (o.name != "base" && o.name != "pairing" && o.name != "scaling")
        PrintLine(fmt::format("    {:<18} [{}] {}", o.name, o.default_value, o.help));
  } else if (what == "patterns") {
    PrintLine(
        "Attention patterns (recipe [model] pattern = ..., with pattern_window / pattern_global /");
    PrintLine("pattern_limit, applied at evaluation or always with pattern_when):");
    PrintLine("  full            the model's causal or bidirectional mask (default)");
    PrintLine("  sliding_window  query i sees keys i-w+1..i (w = pattern_window)");
    PrintLine(
        "  bca             blockwise causal attention, block l = pattern_window (Sun et al. 2022)");
    PrintLine(
        "  lambda          LM-Infinite: first pattern_global keys + last pattern_window keys; "
        "global");
    PrintLine(
        "                  keys outside the window seen at distance pattern_limit (Han et al. "
        "2023,");
    PrintLine(
        "                  arXiv:2308.16137); logit-term encodings, rope, rope_partial, nope");
    PrintLine(
        "  dilated         LongNet segments pattern_segments with dilations pattern_dilations (one "
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
        "                  renumbered inside the cache (Xiao et al. 2023, arXiv:2309.17453); same");
    PrintLine("                  encodings as lambda");
  } else if (what == "keys") {
    std::fputs(RecipeKeysHelp().c_str(), stdout);
  } else if (what == "sites") {
    const lexp::RecipeConfig c =
        lexp::ParseRecipe(lexp::kDefaultRecipeToml, "<embedded default recipe>");
    const lexp::ModelConfig m = c.Model(1);
    PrintLine(
        "Capture sites: probe.capture = [\"layer*.attn.q\", \"layer1.resid_post\"] (names or "
        "globs) in a recipe, or lexp eval RUN --capture GLOB...,\nstores them for the "
        "probe.stored_samples sequences at every probe length, as /probe/length_<n>/<site> with "
        "a leading axis `sample`.");
    PrintLine(fmt::format(
        "Shapes per sequence for the default recipe's model (C = {}, H = {}, D = {}, F = {}, {} "
        "layers: layer0..layer{}); T = the sequence's tokens:",
        m.d_model, m.n_heads, m.HeadDim(), m.FF(), m.n_layers, m.n_layers - 1));
    const int kT = -1;  // printed as T
    for (const auto& s : lexp::CaptureSites(m, kT)) {
      std::string shape;
      for (const uint64_t d : s.dims)
        shape += (shape.empty() ? "" : ", ") +
                 (d == static_cast<uint64_t>(kT) ? std::string("T") : std::to_string(d));
      PrintLine(
          fmt::format("  {:<20} {:<13} {:<19} {}", s.name, "[" + shape + "]", s.axes, s.what));
    }
  } else {
    lexp::FailInput("lexp list: unknown topic '" + what +
                    "'; topics: encodings, scalings, patterns, tasks, keys, sites");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "lexp: length-extrapolation experiments with positional encodings.\n"
      "Trains small transformers from scratch on synthetic tasks, evaluates them past their\n"
      "training length, measures attention, and writes one HDF5 file per model plus figures."};
  app.set_version_flag("--version", std::string("lexp ") + LEXP_VERSION);
  app.require_subcommand(1);
  int threads = 0;
  app.add_option("--threads", threads,
                 "worker threads (0 = all cores; results do not depend on it)")
      ->check(CLI::NonNegativeNumber);

  auto* run = app.add_subcommand("run", "train and evaluate every model of a recipe");
  std::string recipe_path, out_dir;
  std::vector<std::string> sets;
  bool resume = false, no_figures = false, print_recipe = false;
  auto* recipe_option = run->add_option(
      "RECIPE", recipe_path,
      "TOML recipe (default: the embedded default recipe, experiments/recipes/default.toml)");
  run->add_option("--set", sets,
                  "override a recipe key: --set train.steps=200 "
                  "--set model.encodings=rope,alibi --set encoding_options.rope.base=500")
      ->take_all();
  run->add_option("--out", out_dir, "output directory (default: data/runs/<run.name>)");
  run->add_flag("--resume", resume,
                "continue interrupted models from their checkpoints; keep models already done");
  bool overwrite = false;
  run->add_flag("--overwrite", overwrite,
                "train every model again even where the output directory holds its run file")
      ->excludes("--resume");
  run->add_flag("--no-figures", no_figures, "do not draw figures at the end");
  int run_jobs = 0;
  run->add_option(
         "--jobs", run_jobs,
         "models of the sweep trained at once, each with its share of --threads (as "
         "run.jobs, whose default 0 packs one model per thread as memory allows; run files "
         "are the same as one at a time)")
      ->check(CLI::Range(1, 64));
  run->add_flag("--print-recipe", print_recipe, "print the effective recipe and exit");
  std::string run_job;
  run->add_option("--job", run_job,
                  "run only these rows of the sweep's plan (lexp plan): K, K1-K2 or a list "
                  "0,3,7-9; a row whose run file is complete is skipped, an interrupted one "
                  "resumes from its checkpoint; no figures or summary (lexp collect makes them)")
      ->excludes("--overwrite");
  run->footer(RecipeKeysHelp());

  auto* dump = app.add_subcommand(
      "dump",
      "print what an HDF5 file of lexp holds at a path: a group's contents, or a dataset "
      "with its shape, axes and units");
  std::string dump_file, dump_path = "/";
  bool dump_all = false;
  dump->add_option("FILE", dump_file, "a run file, summary.h5 or any lexp HDF5 file")->required();
  dump->add_option("PATH", dump_path, "a group or dataset in it, e.g. /eval/token_accuracy")
      ->capture_default_str();
  dump->add_flag("--all", dump_all, "print every value (default: the first 200)");

  // The sweep as a job list: plan, status, collect, and SLURM (experiments/job_list.h, slurm.h).
  auto* plan = app.add_subcommand(
      "plan", "list the independent models (rows) of a recipe's sweep, for lexp run --job");
  std::string plan_recipe, plan_out;
  std::vector<std::string> plan_sets;
  auto* plan_recipe_option =
      plan->add_option("RECIPE", plan_recipe, "TOML recipe (default: the embedded default recipe)");
  plan->add_option("--set", plan_sets, "override a recipe key, as for lexp run")->take_all();
  plan->add_option("--out", plan_out,
                   "run directory (default: data/runs/<run.name>); the plan goes to DIR/plan/ "
                   "(recipe.toml, the frozen recipe every job reads; plan.tsv; plan.json)");
  plan->footer(
      "Each printed line starts with the row's index: index, task, encoding, label (encoding "
      "and key-sweep suffix), seed, sweep key and value, run file. Run rows with\n"
      "  lexp run DIR/plan/recipe.toml --out DIR --job K\n"
      "e.g. on a machine without a scheduler: seq 0 N-1 | xargs -P 4 -I{} lexp --threads 1 run "
      "DIR/plan/recipe.toml --out DIR --job {}");
  auto* status = app.add_subcommand(
      "status", "count a run directory's rows that are done, running, failed, diverged, pending");
  std::string status_dir;
  status->add_option("RUN_DIR", status_dir, "a run directory with a plan (lexp plan/slurm/run)")
      ->required();
  auto* collect = app.add_subcommand(
      "collect",
      "make a run directory's summary, score tables and figures from the run files there");
  std::string collect_dir;
  bool collect_no_figures = false;
  collect->add_option("RUN_DIR", collect_dir, "a run directory with a plan (lexp plan/slurm/run)")
      ->required();
  collect->add_flag("--no-figures", collect_no_figures, "do not draw figures");
  collect->footer(
      "Runs that finished before their NoPE reference are analysed again with it, so that the "
      "files are those of one lexp run; missing, failed and diverged rows are listed by index.");
  auto* slurm = app.add_subcommand(
      "slurm", "write (and with --submit, submit) a recipe's sweep as a SLURM job array");
  std::string slurm_target, slurm_out;
  std::vector<std::string> slurm_sets;
  bool slurm_resubmit = false;
  lexp::SlurmOptions slo;
  auto* slurm_target_option = slurm->add_option(
      "RECIPE_OR_RUN_DIR", slurm_target,
      "TOML recipe (default: the embedded default recipe), or with --resubmit the run directory");
  slurm->add_option("--set", slurm_sets, "override a recipe key, as for lexp run")->take_all();
  slurm->add_option("--out", slurm_out, "run directory (default: data/runs/<run.name>)");
  slurm->add_option("--partition", slo.partition, "SLURM partition");
  slurm->add_option("--account", slo.account, "SLURM account");
  slurm->add_option("--qos", slo.qos, "SLURM quality of service");
  slurm->add_option("--time", slo.time, "time limit per array task (HH:MM:SS)")
      ->capture_default_str();
  slurm
      ->add_option("--cpus-per-task", slo.cpus_per_task,
                   "CPUs per array task, each a model (1: the fastest packing measured)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  slurm->add_option("--mem", slo.mem,
                    "memory per task, e.g. 2G (default: lexp's estimate of one model's peak, "
                    "with half again)");
  slurm
      ->add_option("--max-parallel", slo.max_parallel,
                   "array tasks at once (--array=...%N; 0: no limit)")
      ->check(CLI::Range(0, 100000));
  slurm->add_option("--setup", slo.setup,
                    "shell lines run before lexp in each job, e.g. 'module load gcc'");
  slurm->add_flag("--submit", slo.submit, "submit the array and the collect job (sbatch)");
  slurm->add_flag("--resubmit", slurm_resubmit,
                  "with RUN_DIR: submit only the rows not done (missing, killed or failed), then "
                  "collect again");
  slurm->footer(
      "Writes RUN_DIR/plan/ (the frozen recipe and the rows), RUN_DIR/slurm/sweep.sbatch (a job "
      "array, one task per row, logs in RUN_DIR/slurm/logs/%A_%a.out) and "
      "RUN_DIR/slurm/collect.sbatch (lexp collect, after the array with "
      "--dependency=afterany).");

  auto* eval = app.add_subcommand(
      "eval", "evaluate a trained run file again, optionally with a RoPE scaling rule");
  lexp::EvalCommandOptions eo;
  bool eval_no_figures = false;
  eval->add_option("RUN_FILE", eo.run_file, "a completed run file (data/runs/<name>/<encoding>.h5)")
      ->required();
  std::vector<std::string> eval_scales;
  eval->add_option("--scale", eval_scales,
                   "RULE[:key=value,...], e.g. yarn:factor=4 or ntk:factor=8 or "
                   "llama3:factor=8,low_freq_factor=1 (rules: lexp list scalings); give it several "
                   "times to compare rules (one file each, and a table of entropy and max logit "
                   "by length)")
      ->take_all();
  eval->add_option("--set", eo.sets,
                   "recipe overrides for the evaluation, e.g. --set eval.max_factor=16")
      ->take_all();
  std::vector<std::string> eval_capture;
  eval->add_option("--capture", eval_capture,
                   "capture sites to store at every probe length (names or globs, e.g. "
                   "'layer*.attn.q' layer1.resid_post; lexp list sites); the same as "
                   "--set probe.capture=[...]")
      ->take_all();
  eval->add_option("--out", eo.out_dir, "output directory (default: the run file's directory)");
  eval->add_flag("--no-figures", eval_no_figures, "do not redraw the directory's figures");
  eval->add_flag("--force", eo.force,
                 "replace an earlier evaluation's file of the same name (refused otherwise)");
  eval->footer(
      "Writes <out>/<encoding>+<rule>x<factor>[-<option><value>...].h5 with the same layout as a "
      "trained run "
      "(weights taken from RUN_FILE, /train empty), then redraws the figures of <out>.");

  auto* pe_table = app.add_subcommand(
      "pe-table",
      "closed-form tables without training: RoPE scaling rules per pair, bias families "
      "vs distance (HDF5 + figure)");
  lexp::PeTableOptions pto;
  pe_table->add_option("--head-dim", pto.head_dim, "rotary head dimension D")
      ->capture_default_str();
  pe_table->add_option("--base", pto.base, "RoPE base")->capture_default_str();
  pe_table->add_option("--train-length", pto.train_length, "training length L of the rules")
      ->capture_default_str();
  pe_table->add_option("--factor", pto.factor, "scale s of the rules")->capture_default_str();
  pe_table->add_option("--heads", pto.heads, "heads of the bias families")->capture_default_str();
  pe_table->add_option("--max-distance", pto.max_distance, "largest distance tabulated")
      ->capture_default_str();
  pe_table->add_option("--out", pto.out_file, "HDF5 file to write")->capture_default_str();
  pe_table
      ->add_option("--run", pto.runs,
                   "completed run file of a bias encoding (t5, fire, kerple_*, ...): tabulate its "
                   "learned b(d) too (repeatable)")
      ->check(CLI::ExistingFile);

  auto* theory = app.add_subcommand(
      "theory",
      "closed-form rotary analyses without training: critical dimension, base-scaling law, decay "
      "bound, attention expectation and resolution for RoPE, xPos and a scaling rule (HDF5 + "
      "figure)");
  lexp::TheoryOptions tho;
  theory->add_option("--head-dim", tho.head_dim, "rotary head dimension d")->capture_default_str();
  theory->add_option("--base", tho.base, "RoPE base")->capture_default_str();
  theory->add_option("--train-length", tho.train_length, "training length T_train (tokens)")
      ->capture_default_str();
  theory
      ->add_option("--max-distance", tho.max_distance, "longest distance of the expectation curves")
      ->capture_default_str();
  theory->add_option("--xpos-scale-base", tho.xpos_scale_base, "xPos B")->capture_default_str();
  theory->add_option("--xpos-gamma", tho.xpos_gamma, "xPos gamma")->capture_default_str();
  theory->add_option("--scale", tho.scale,
                     "also the expectation under a RoPE rule, e.g. yarn:factor=4 (factor and "
                     "original_length are read)");
  theory->add_option("--mc-samples", tho.mc_samples, "Monte-Carlo samples of the expectation")
      ->capture_default_str();
  theory
      ->add_option("--mc-max-distance", tho.mc_max_distance,
                   "Monte-Carlo expectation at every distance 0..this")
      ->capture_default_str();
  theory
      ->add_option("--mc-distribution", tho.mc_distribution,
                   "content components i.i.d. gaussian | uniform")
      ->capture_default_str();
  theory->add_option("--mc-mean", tho.mc_mean, "mean mu of each q/k component")
      ->capture_default_str();
  theory->add_option("--mc-sd", tho.mc_sd, "standard deviation sigma of each component")
      ->capture_default_str();
  theory->add_flag("--mc-independent", tho.mc_independent,
                   "draw q and k independently (default: q = k = x, the same content)");
  theory->add_option("--out", tho.out_file, "HDF5 file to write")->capture_default_str();

  auto* analyze = app.add_subcommand(
      "analyze",
      "every analysis that applies to trained runs, into each run file's /analysis (training runs "
      "do it at the end; probe.replay = 0 leaves all but the geometry to this command): attention "
      "geometry, expectation, scores by position, position probes, receptive field, entropy "
      "variants and, for rope, the rotary pairs. Inapplicable metrics are named with the reason.");
  analyze->footer(
      "Statistics, as computed (layouts in data/README.md):\n"
      "  geometry      replay of every probe sequence (probe.samples) at the training length N\n"
      "                and every probe length; mean and sd across sequences of: LM-Infinite's\n"
      "                logit bound (running max over distance of the last query's logits); the\n"
      "                all-queries max at each distance (grows with length for i.i.d. logits);\n"
      "                entropy, attended distance (mean, argmax), attention on the first token\n"
      "                (sink) and within max(2, T_N/8) tokens (local) per query. Pooled over\n"
      "                pairs: mean and sd of the logit at each distance (the expectation, and the\n"
      "                positional part of a logit); its resolution (convention A, gaps not "
      "joined)\n"
      "                over every distance, over the training window, and a flat curve's (1/K^2);\n"
      "                the share of logit variance the positional part explains; the fraction of\n"
      "                logits / positional parts / content parts (logit - positional part) "
      "outside\n"
      "                their range at N; head class sink (sink mass >= 0.5) > local (local mass\n"
      "                >= 0.5) > content (positional share < 0.5) > global; NaN/+inf logits\n"
      "                counted; with --reference (default: the nope run beside the file) the JS\n"
      "                divergence of every head against every reference head of the layer, its\n"
      "                minimum (best match) and mean.\n"
      "  expectation   the logit by distance at every evaluation length, with the same\n"
      "                resolutions (every distance, training window, flat curve).\n"
      "  position_scores  teacher-forced loss and accuracy by absolute position at every\n"
      "                evaluation length (the /eval sequences); the last T_N tokens scored with\n"
      "                the whole sequence, alone at their own positions, alone at the positions\n"
      "                a short sequence gets (0.. when consecutive): the cost of extra keys and "
      "of\n"
      "                unseen positions.\n"
      "  position_probes  ridge probes (lambda 1e-3 per row, standardised states) of each\n"
      "                residual stream for the index and the distance to the separator, fitted at\n"
      "                N and tested in range / beyond on the longest length; a linear classifier "
      "of\n"
      "                'beyond N' (balanced accuracy, half/half split); the fraction of states "
      "past\n"
      "                the 99th percentile of the training states' Mahalanobis distance.\n"
      "  receptive_field  share of ||d ln p(top) / d x_j|| at distance d from the last position\n"
      "                (x_j: embedded input), mean over <= 32 sequences; distances holding 50%\n"
      "                and 90% of it.\n"
      "  entropy_variants  entropy of the longest probe under log-n, YaRN and the Lambda mask,\n"
      "                against ln(visible keys).\n"
      "  rotary        (rope) pair periods against the positions training showed, contributions\n"
      "                below/beyond it, the logit supremum (unrotated q.k included) against the\n"
      "                observed maximum, and the post-critical ablation (measured boundary: the\n"
      "                cut with the lowest loss beyond N; -1 without a length beyond N).");
  std::vector<std::string> analyze_files;
  std::string analyze_reference;
  analyze->add_option("RUN_FILE", analyze_files, "completed run files")
      ->required()
      ->check(CLI::ExistingFile);
  analyze
      ->add_option(
          "--reference", analyze_reference,
          "run file (typically NoPE) of the same recipe: JS divergence of attention rows (default: "
          "the nope run beside each file, when there is one)")
      ->check(CLI::ExistingFile);

  auto* base_law = app.add_subcommand(
      "base-law",
      "RoPE base-scaling law: measured extrapolation limit of every rope run of a directory (e.g. "
      "a "
      "run.sweep over encoding_options.rope.base) against T_extra = 2 pi b^(d_extra/d), with a "
      "fitted exponent; writes RUN_DIR/base_law.h5");
  std::string base_law_dir;
  double base_law_tolerance = 0.1;
  base_law->add_option("RUN_DIR", base_law_dir, "directory of rope run files")->required();
  base_law
      ->add_option("--tolerance", base_law_tolerance,
                   "a length is within the limit while its loss <= (1 + tolerance) x the loss "
                   "at the longest evaluated length <= N")
      ->capture_default_str();

  auto* figures =
      app.add_subcommand("figures", "redraw every figure of a run directory from its files");
  std::string fig_dir;
  figures->add_option("RUN_DIR", fig_dir, "directory holding the run files (*.h5)")->required();
  std::vector<std::string> fig_runs;
  figures
      ->add_option("--runs", fig_runs,
                   "draw only these runs, by file name without .h5 (globs allowed), e.g. --runs "
                   "nope,rope-base500; the figures go to RUN_DIR/figures/<nope+rope-base500>/")
      ->delimiter(',');
  // Figure formats: PNG always, SVG and PDF on request (papers), for every command that draws.
  std::vector<std::string> figure_formats;
  const std::string formats_help =
      "figure formats besides PNG, comma-separated: png, svg, pdf (e.g. --format png,svg,pdf)";
  figures->add_option("--format", figure_formats, formats_help)->delimiter(',');
  run->add_option("--format", figure_formats, formats_help)->delimiter(',');
  collect->add_option("--format", figure_formats, formats_help)->delimiter(',');
  eval->add_option("--format", figure_formats, formats_help)->delimiter(',');

  auto* list = app.add_subcommand(
      "list", "list encodings, scalings, patterns, tasks, recipe keys or capture sites");
  std::string topic;
  list->add_option("TOPIC", topic, "encodings | scalings | patterns | tasks | keys | sites")
      ->required();

  auto* bench = app.add_subcommand(
      "bench", "time training steps and evaluation passes against the PyTorch reference");
  lexp::BenchOptions bo;
  bench
      ->add_option(
          "--config", bo.configs,
          "configurations: T S E512 E2048 (the default set) and E8192 (S evaluated on 8192 "
          "tokens: evaluation memory)")
      ->delimiter(',');
  bench->add_option("--pos", bo.positions, "encodings: rope alibi")->delimiter(',');
  bench->add_option("--steps", bo.steps,
                    "timed steps per measurement (0 = 20 for T, 10 for S, 5 for E*)");
  bench->add_option("--warmup", bo.warmup, "untimed steps before each measurement");
  bench->add_option("--rounds", bo.rounds, "alternations of lexp and the reference (--compare)");
  bench->add_flag("--compare", bo.compare,
                  "also run the PyTorch reference (needs Debian's python3-torch), alternating");
  bench->add_option("--python", bo.python, "python interpreter for --compare");
  bench->add_option("--out", bo.out_file, "HDF5 results file (default data/bench/bench-<time>.h5)");
  bool gemm_bench = false;
  bench->add_flag("--gemm", gemm_bench,
                  "instead: GFLOP/s, one thread, of every matrix-product shape of the layers of "
                  "--config (default T S E2048) for each GEMM backend installed (Eigen, serial "
                  "OpenBLAS, serial BLIS, libxsmm) and lexp's choice, beside a 2048^3 sgemm");

  // Hidden: fails an internal check, so that tests can see exit code 3 and its message.
  auto* internal_error = app.add_subcommand("internal-error-for-tests", "")->group("");

  // The first word that is not an option must name a command (CLI11 would only say that a
  // subcommand is required).
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sub->get_name() == a;
      if (!sub->get_group().empty()) names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "lexp: error: unknown command '%s'; commands: %s (lexp --help)\n",
                   a.c_str(), names.c_str());
      return 2;
    }
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    lexp::ThreadLimit limit(threads);
    lexp::SetFigureFormats(figure_formats);
    if (*internal_error)
      LEXP_CHECK(false, "this check fails on purpose (internal-error-for-tests)");
    if (*list) return ListCommand(topic);
    if (*dump) {
      LEXP_INPUT_CHECK(std::filesystem::is_regular_file(dump_file),
                       "lexp dump: '" + dump_file + "' is not a file");
      std::fputs(lexp::DumpHdf5(dump_file, dump_path, dump_all ? 0 : 200).c_str(), stdout);
      return 0;
    }
    // A recipe named on the command line (or the embedded default) with its --set overrides.
    auto load_recipe = [](bool given, const std::string& path,
                          const std::vector<std::string>& overrides) {
      lexp::RecipeConfig c =
          given ? lexp::ParseRecipe(ReadRecipeFile(path), path)
                : lexp::ParseRecipe(lexp::kDefaultRecipeToml, "<embedded default recipe>");
      lexp::ApplyOverrides(c, overrides);
      lexp::ValidateRecipe(c);
      return c;
    };
    auto default_dir = [](const lexp::RecipeConfig& c) {
      return (std::filesystem::path("data") / "runs" / c.name).string();
    };
    if (*plan) {
      const lexp::RecipeConfig c =
          load_recipe(plan_recipe_option->count() > 0, plan_recipe, plan_sets);
      const std::string dir = plan_out.empty() ? default_dir(c) : plan_out;
      const auto rows = lexp::SweepPlan(c, dir);
      lexp::WritePlanFiles(c, rows, dir);
      std::fputs(lexp::PlanTable(rows).c_str(), stdout);
      PrintLine(fmt::format("plan: {} rows; written to {}/ (recipe.toml, plan.tsv, plan.json)",
                            rows.size(), lexp::PlanDirectory(dir)));
      return 0;
    }
    if (*status) {
      const lexp::RecipeConfig c = lexp::ReadFrozenRecipe(status_dir);
      const auto states = lexp::ReadRowStates(lexp::SweepPlan(c, status_dir));
      PrintLine(fmt::format("{}: {} rows (recipe {})", status_dir, states.size(),
                            lexp::FrozenRecipePath(status_dir)));
      std::fputs(lexp::StatusReport(states).c_str(), stdout);
      return 0;
    }
    if (*collect) {
      const auto res = lexp::CollectSweep(collect_dir, !collect_no_figures, PrintLine);
      std::fputs(res.report.c_str(), stdout);
      return 0;
    }
    if (*slurm) {
      slo.print = PrintLine;
      if (slurm_resubmit) {
        LEXP_INPUT_CHECK(slurm_target_option->count() > 0,
                         "lexp slurm --resubmit: give the run directory");
        lexp::ResubmitSlurmSweep(slurm_target, slo);
        return 0;
      }
      LEXP_INPUT_CHECK(slurm_target.empty() || !std::filesystem::is_directory(slurm_target),
                       "lexp slurm: '" + slurm_target +
                           "' is a directory; give a recipe, or add --resubmit for a run "
                           "directory");
      const lexp::RecipeConfig c =
          load_recipe(slurm_target_option->count() > 0, slurm_target, slurm_sets);
      lexp::WriteSlurmSweep(c, slurm_out.empty() ? default_dir(c) : slurm_out, slo);
      return 0;
    }
    if (*eval) {
      eo.progress = PrintLine;
      if (!eval_capture.empty()) {
        std::string globs;
        for (const auto& g : eval_capture)
          globs += fmt::format("{}\"{}\"", globs.empty() ? "" : ",", g);
        eo.sets.push_back("probe.capture=[" + globs + "]");
      }
      if (eval_scales.empty()) eval_scales.push_back("");
      // Every rule is checked before any evaluation runs.
      for (const auto& sc : eval_scales)
        if (!sc.empty()) lexp::ParseScaleSpec(sc);
      std::vector<std::string> written;
      for (const auto& sc : eval_scales) {
        eo.scale = sc;
        written.push_back(lexp::EvaluateRunFile(eo).path);
        PrintLine("wrote " + written.back());
      }
      if (written.size() > 1) std::fputs(lexp::ScaleComparisonTable(written).c_str(), stdout);
      if (!eval_no_figures) {
        const std::string dir = std::filesystem::path(written.back()).parent_path().string();
        for (const auto& png : lexp::DrawAllFigures(dir)) PrintLine("figure: " + png);
      }
      return 0;
    }
    if (*analyze) {
      for (const auto& f : analyze_files) {
        // The replays' memory, checked here rather than inside a training process that holds its
        // own model already.
        std::string name;
        lexp::RecipeConfig cfg = lexp::CompletedRunRecipe(f, &name);
        cfg.probe_replay = 1;
        lexp::CheckMemoryFits(cfg);
      }
      for (const auto& f : analyze_files) {
        PrintLine("analyzing " + f);
        std::fputs(lexp::AnalyzeRunFile(f, analyze_reference).c_str(), stdout);
      }
      return 0;
    }
    if (*base_law) {
      std::fputs(lexp::WriteBaseLaw(base_law_dir, base_law_tolerance).c_str(), stdout);
      const std::string file = (std::filesystem::path(base_law_dir) / "base_law.h5").string();
      PrintLine("wrote " + file);
      PrintLine("figure: " + lexp::DrawBaseLaw(file));
      return 0;
    }
    if (*theory) {
      std::string report;
      PrintLine("wrote " + lexp::WriteTheory(tho, &report));
      std::fputs(report.c_str(), stdout);
      PrintLine("figure: " + lexp::DrawTheory(tho.out_file));
      return 0;
    }
    if (*pe_table) {
      PrintLine("wrote " + lexp::WritePeTable(pto));
      PrintLine("figure: " + lexp::DrawPeTable(pto.out_file));
      return 0;
    }
    if (*figures) {
      LEXP_INPUT_CHECK(std::filesystem::exists(fig_dir),
                       "lexp figures: '" + fig_dir + "' does not exist");
      LEXP_INPUT_CHECK(
          std::filesystem::is_directory(fig_dir),
          "lexp figures: '" + fig_dir + "' is a file; give the run directory that holds it");
      if (!fig_runs.empty()) {
        lexp::SetRunSelection(fig_runs);
        if (lexp::FindRunFiles(fig_dir).empty()) {
          lexp::SetRunSelection({});
          std::string names;
          for (const auto& f : lexp::FindRunFiles(fig_dir))
            names += (names.empty() ? "" : ", ") + std::filesystem::path(f).stem().string();
          lexp::FailInput("lexp figures --runs: no run of '" + fig_dir + "' is named " +
                          fmt::format("{}", fmt::join(fig_runs, " or ")) +
                          "; its runs: " + (names.empty() ? "none" : names));
        }
        for (const auto& png : lexp::DrawAllFigures(fig_dir)) PrintLine("figure: " + png);
        return 0;
      }
      // A sweep directory: the score table, then every task directory holding run files.
      const std::filesystem::path summary = std::filesystem::path(fig_dir) / "summary.h5";
      if (std::filesystem::exists(summary)) {
        PrintLine("figure: " + lexp::DrawScoreTable(summary.string()));
        for (const auto& e : std::filesystem::directory_iterator(fig_dir))
          if (e.is_directory() && e.path().filename() != "figures" &&
              e.path().filename() != "plan" && e.path().filename() != "slurm")
            for (const auto& png : lexp::DrawAllFigures(e.path().string()))
              PrintLine("figure: " + png);
      }
      bool has_runs = false;
      for (const auto& e : std::filesystem::directory_iterator(fig_dir))
        has_runs =
            has_runs || (e.path().extension() == ".h5" && e.path().filename() != "summary.h5");
      if (has_runs || !std::filesystem::exists(summary))
        for (const auto& png : lexp::DrawAllFigures(fig_dir)) PrintLine("figure: " + png);
      const std::filesystem::path law = std::filesystem::path(fig_dir) / "base_law.h5";
      if (std::filesystem::exists(law)) PrintLine("figure: " + lexp::DrawBaseLaw(law.string()));
      return 0;
    }
    if (*bench && gemm_bench) {
      lexp::GemmBenchOptions go;
      if (bench->get_option("--config")->count() > 0) go.configs = bo.configs;
      go.out_file = bo.out_file;
      go.print = PrintLine;
      lexp::RunGemmBench(go);
      return 0;
    }
    if (*bench) {
      bo.threads = threads;
      bo.print = PrintLine;
      lexp::RunBench(bo);
      return 0;
    }
    // run
    lexp::RecipeConfig cfg =
        recipe_option->count() == 0
            ? lexp::ParseRecipe(lexp::kDefaultRecipeToml, "<embedded default recipe>")
            : lexp::ParseRecipe(ReadRecipeFile(recipe_path), recipe_path);
    // A job of a planned sweep reads the frozen recipe of its run directory with the source it was
    // made from, so that its run file records what a single-process run of the sweep records.
    std::error_code same_ec;
    if (!run_job.empty() && !out_dir.empty() && recipe_option->count() > 0 &&
        std::filesystem::equivalent(recipe_path, lexp::FrozenRecipePath(out_dir), same_ec))
      cfg = lexp::ReadFrozenRecipe(out_dir);
    lexp::ApplyOverrides(cfg, sets);
    if (run_jobs > 0) cfg.jobs = run_jobs;
    lexp::ValidateRecipe(cfg);
    if (out_dir.empty()) out_dir = (std::filesystem::path("data") / "runs" / cfg.name).string();
    if (print_recipe) {
      std::fputs(lexp::RecipeToToml(cfg).c_str(), stdout);
      // What the run will write, as TOML comments (the plan's rows).
      std::string files = "\n# files this run writes (lexp plan lists them as rows):\n";
      for (const auto& row : lexp::SweepPlan(cfg, out_dir)) files += "#   " + row.file + "\n";
      files += "#   " + lexp::PlanDirectory(out_dir) + "/, figures/ beside the run files" +
               (cfg.tasks.empty() && cfg.seeds.empty() && cfg.sweep_key.empty()
                    ? std::string("\n")
                    : ", " + (std::filesystem::path(out_dir) / "summary.h5").string() + "\n");
      std::fputs(files.c_str(), stdout);
      return 0;
    }
    if (cfg.threads > 0 && threads == 0) limit = lexp::ThreadLimit(cfg.threads);
    const size_t models = lexp::SweepPlan(cfg, out_dir).size();
    const int jobs = lexp::SweepJobs(cfg, models);
    PrintLine(fmt::format("lexp run: recipe {}, task {}, {} model(s), {} threads{}, output {}",
                          cfg.source_name, fmt::format("{}", fmt::join(cfg.Tasks(), ",")), models,
                          lexp::ThreadLimit::Active(),
                          jobs > 1 ? fmt::format(", {} models at once", jobs) : "", out_dir));
    // NoPE sees a set, not a sequence, without a causal mask: in the encoder layout it cannot tell
    // positions apart, and its runs measure that.
    if (cfg.layout == "encoder" &&
        std::find(cfg.encodings.begin(), cfg.encodings.end(), "nope") != cfg.encodings.end())
      PrintLine(
          "note: nope in the encoder layout is order-blind (no causal mask, no positions): its "
          "outputs cannot depend on where a token is");
    lexp::SweepOptions so;
    so.out_dir = out_dir;
    so.resume = resume;
    so.overwrite = overwrite;
    so.figures = !no_figures;
    so.progress = PrintLine;
    if (!run_job.empty()) so.rows = lexp::ParseJobList(run_job);
    const auto runs = lexp::RunRecipe(cfg, so);
    if (!so.rows.empty())
      PrintLine(
          fmt::format("rows {} done; lexp status {} counts the sweep's rows, lexp collect {} "
                      "summarises them",
                      lexp::JobListText(so.rows), out_dir, out_dir));
    else if (cfg.tasks.empty() && cfg.seeds.empty())
      std::fputs(lexp::SummaryTable(cfg, runs).c_str(), stdout);
    else
      std::fputs(lexp::SeedSummaryTable(cfg, runs).c_str(), stdout);
    // A model that failed on bad input or on a bug gives the exit code of that error once the
    // sweep is done; one that diverged (or failed otherwise) gives 1.
    int code = 0;
    for (const auto& r : runs) {
      if (r.state == "failed")
        std::fprintf(stderr, "lexp: %s: %s failed: %s\n",
                     r.failure == lexp::RunSummary::Failure::kInternal ? "internal error" : "error",
                     (r.label.empty() ? r.encoding : r.label).c_str(), r.message.c_str());
      if (r.failure == lexp::RunSummary::Failure::kInternal) code = 3;
      if (r.failure == lexp::RunSummary::Failure::kInput && code != 3) code = 2;
      if ((r.state == "diverged" || r.state == "failed") && code == 0) code = 1;
    }
    return code;
  } catch (const lexp::InputError& e) {
    std::fprintf(stderr, "lexp: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "lexp: error: out of memory; ask for less (shorter eval.lengths or "
                 "probe.lengths, smaller eval.batch_size or probe.samples)\n");
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    std::string paths = "'" + e.path1().string() + "'";
    if (!e.path2().empty()) paths += " / '" + e.path2().string() + "'";
    std::fprintf(stderr, "lexp: error: %s: %s\n", paths.c_str(), e.code().message().c_str());
    return 2;
  } catch (const lexp::Error& e) {
    std::fprintf(stderr, "lexp: internal error (please report): %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lexp: internal error (please report): %s\n", e.what());
    return 3;
  }
}
