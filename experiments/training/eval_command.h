// `lexp eval RUN_FILE --scale RULE[:key=value,...]`: evaluates the trained weights of a run file
// again, with a RoPE scaling rule applied at evaluation time only (the scaling rules of
// pe/rope_scaling.h), and writes a run file of its own next to the original (or in --out), named
// after the source run's label: <label>+<rule>[x<factor>][-<option><value>...].h5, e.g.
// rope-base500+yarnx4.h5, or <label>+eval.h5 without --scale; model and encoding overrides add
// -<key><value>.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "experiments/training/trainer.h"

namespace lexp {

struct ScaleSpec {
  std::string rule;
  std::map<std::string, std::string> options;  // rope options besides `scaling`
};

// "yarn:factor=4,beta_fast=32" -> {yarn, {factor: 4, beta_fast: 32}}.
ScaleSpec ParseScaleSpec(const std::string& text);

struct EvalCommandOptions {
  std::string run_file;
  std::string scale;              // empty: re-evaluate unchanged
  std::vector<std::string> sets;  // recipe overrides (eval.*, probe.*)
  std::string out_dir;            // default: the run file's directory
  // The evaluation's name: its file is <label>+<name>.h5 (default: from the rule and the model
  // overrides, EvaluationNameSuffix).
  std::string name;
  bool force = false;             // replace an earlier evaluation's file of the same name
  bool capture_only = false;      // no /eval rows: only the probe and its capture sites
  std::function<void(const std::string&)> progress;
};

RunSummary EvaluateRunFile(const EvalCommandOptions& opt);
// The file EvaluateRunFile(opt) writes (the rule, options and overrides checked as it would).
std::string EvaluationFile(const EvalCommandOptions& opt);
// What an evaluation adds to its source run's label to name its file: "+<rule>[x<factor>]
// [-<option><value>...]" with a rule, "+eval" without, then "-<key><value>" per model or encoding
// override (a claim checks the labels its criterion names with it before anything trains).
std::string EvaluationNameSuffix(const std::string& scale, const std::vector<std::string>& sets);

// ValidateRecipe for a recipe an evaluation runs: encoding_options.rope.long_factors = "search"
// (LongRoPE's search, resolved by EvaluateRunFile) is checked with its requirements (scaling
// longrope, factor > 1, no start_tokens) and the rest of the recipe as if the rule were PI.
void ValidateEvaluationRecipe(const RecipeConfig& cfg);

// Evaluations of one run under several rules side by side: per probe length, each file's attention
// entropy and max logit (means over layers and heads, /analysis/entropy_mean and max_logit_mean).
std::string ScaleComparisonTable(const std::vector<std::string>& run_files);

}  // namespace lexp
