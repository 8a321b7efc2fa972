// Trains one model (one encoding of a recipe), evaluates it on every length, captures attention on
// the probe batch, runs the analysis and writes the run file. Data flow:
// recipe -> task batches -> model with its encoding -> captured tensors -> analysis -> HDF5.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "experiments/core/evaluation.h"
#include "experiments/core/recipe.h"
#include "experiments/core/run_file.h"
#include "nn/position_hooks.h"
#include "pe/options.h"

namespace lexp {


struct RunOptions {
  std::string out_dir;  // run file goes to <out_dir>/<encoding>.h5
  bool resume = false;  // continue from <encoding>.ckpt.h5; skip models already completed
  std::function<void(const std::string&)> progress;  // one line per call; may be empty
  std::string label;                                 // progress prefix, e.g. "rope 2/4"
  // Test hooks: stop (as if killed) after this many steps, leaving only the checkpoint (0 = never);
  // or once the run file is written, before its analysis (the file stays "analyzing").
  int stop_after_steps = 0;
  bool stop_before_analysis = false;
  // Evaluate only: take the trained weights from this run file's /model instead of training.
  std::string weights_from;
  // With weights_from: evaluate nothing, only probe (the capture sites of probe.capture); /eval
  // says why it has no rows (lexp eval --capture ... --analyses none).
  bool capture_only = false;
  // Run-file name (without .h5) and figure label; empty = the encoding name.
  std::string name;
  // The key sweep this model belongs to (recorded as the run file's `sweep`; "" for none).
  std::string sweep_key;
  // Called before the end-of-training analysis (a sweep with run.jobs > 1 waits there for the NoPE
  // run beside this one, the analysis's JS reference); may be empty.
  std::function<void()> before_analysis;
};

struct RunSummary {
  std::string encoding;
  std::string label;  // encoding plus the key-sweep suffix ("rope-base500"); = encoding otherwise
  std::string task;
  int seed = 0;
  std::string state;  // completed | diverged | failed | interrupted
  std::string message;
  // Why a failed model failed, for the exit code: bad input (2) or a bug (3).
  enum class Failure { kNone, kInput, kInternal } failure = Failure::kNone;
  std::string path;
  double final_train_loss = 0;
  std::vector<EvalRow> eval;
};

RunSummary TrainAndEvaluate(const RecipeConfig& cfg, const std::string& encoding,
                            const RunOptions& opt);


}  // namespace lexp
