#include "experiments/training/trainer.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <sstream>

#include "analysis/attention_stats.h"
#include "experiments/core/assembled_model.h"
#include "experiments/core/provenance.h"
#include "experiments/core/run_file.h"
#include "experiments/core/sequence_layout.h"
#include "experiments/replay/analyze.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/model/capture_sites.h"
#include "nn/model/checkpoint.h"
#include "nn/model/flops.h"
#include "nn/model/transformer.h"
#include "nn/ops/cross_entropy.h"
#include "nn/optim/adamw.h"
#include "nn/optim/lora.h"
#include "nn/optim/nf4.h"
#include "nn/parallel.h"
#include "pe/patterns.h"
#include "pe/position_schemes.h"
#include "pe/registry.h"

namespace lexp {

namespace {

using Clock = std::chrono::steady_clock;

// The end-of-training analysis of a run file in state "analyzing", which turns it "completed"
// (after opt.before_analysis, when set). When the analysis fails, the trained and evaluated file is
// kept as it is ("analyzing": --resume retries the analysis) and the summary says "failed" with
// the reason; returns false then.
bool FinishAnalysis(const RecipeConfig& cfg, const RunOptions& opt, RunSummary& sum,
                    const std::function<void(const std::string&)>& say) {
  if (opt.before_analysis) opt.before_analysis();
  try {
    std::stringstream lines(AnalyzeRunFile(sum.path, "", cfg.Analyses(), true));
    if (say)
      for (std::string line; std::getline(lines, line);) say(line);
    return true;
  } catch (const Error& e) {
    sum.state = "failed";
    sum.failure = dynamic_cast<const InputError*>(&e) ? RunSummary::Failure::kInput
                                                      : RunSummary::Failure::kInternal;
    sum.message = std::string(
                      "the end-of-training analysis failed; the trained and evaluated run "
                      "is kept in state \"analyzing\" (lexp run --resume retries the "
                      "analysis): ") +
                  e.what();
    return false;
  }
}

std::string FormatDuration(double s) {
  const long t = std::lround(std::max(0.0, s));
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

class Runner {
 public:
  Runner(const RecipeConfig& cfg, const std::string& encoding, const RunOptions& opt)
      : cfg_(cfg), encoding_(encoding), opt_(opt), parts_(AssembleModel(cfg, encoding)) {
    UseTrainingPattern();
    opt_cfg_ = cfg.Optimizer();
    adam_ = std::make_unique<AdamW<float>>(opt_cfg_);
  }

  RunSummary Run() {
    RunSummary sum;
    sum.encoding = encoding_;
    name_ = opt_.name.empty() ? encoding_ : opt_.name;
    sum.path = RunFilePath(opt_.out_dir, name_);
    start_time_ = UtcNow();
    Rng root(static_cast<uint64_t>(cfg_.seed));
    Rng init = root.Split("init");
    data_rng_ = root.Split("data");
    pos_rng_ = root.Split("positions");
    model_->Init(init);
    params_ = model_->Parameters();
    // LongMem: the side network's parameters (side<i>.*, side.ln_f.*) beside the backbone's.
    const bool side = model_->config().side.Active();
    auto is_side = [](const ParamRef<float>& p) { return p.name.rfind("side", 0) == 0; };
    if (!cfg_.init_from.empty() && opt_.weights_from.empty()) {
      LEXP_INPUT_CHECK(std::filesystem::exists(cfg_.init_from),
                       "train.init_from: '" + cfg_.init_from + "' does not exist");
      if (side) {
        // The backbone from the trained run, the side network a copy of its blocks.
        std::vector<ParamRef<float>> backbone;
        for (const auto& p : params_)
          if (!is_side(p)) backbone.push_back(p);
        LoadModelWeights(cfg_.init_from, backbone);  // the file holds no side network
        model_->CopyBackboneIntoSide();
        Say("LongMem: a side network beside the frozen backbone of " + cfg_.init_from);
      } else {
        LoadModelWeights(cfg_.init_from, params_);
        Say("fine-tuning from the weights of " + cfg_.init_from);
      }
    }
    // What the optimizer trains: every weight, (LoRA) the adapters of the frozen model, or
    // (LongMem) the side network beside its frozen backbone.
    trained_ = params_;
    if (side) {
      trained_.clear();
      for (const auto& p : params_)
        if (is_side(p)) trained_.push_back(p);
    }
    if (cfg_.lora_rank > 0 && opt_.weights_from.empty()) {
      // LongQLoRA: the frozen layer matrices as NF4 stores them, before the adapters copy W0.
      if (cfg_.lora_base == "nf4")
        for (const auto& p : params_)
          if (p.name.rfind("layer", 0) == 0 && p.shape.size() == 2) Nf4RoundTrip(p.value, p.size);
      Rng lora_rng = root.Split("lora");
      lora_ = std::make_unique<LoraAdapters<float>>(
          LoraTargetsOf(params_, cfg_.lora_targets), cfg_.lora_rank,
          cfg_.lora_alpha > 0 ? cfg_.lora_alpha : cfg_.lora_rank, lora_rng);
      trained_ = lora_->Parameters();
      // LongLoRA: the embeddings and norms train too (the adapters stay first).
      auto also = [&](const std::string& group) {
        return std::find(cfg_.lora_also_train.begin(), cfg_.lora_also_train.end(), group) !=
               cfg_.lora_also_train.end();
      };
      for (const auto& p : params_) {
        const bool norm = p.name.find(".ln") != std::string::npos || p.name.rfind("ln_f.", 0) == 0;
        if ((also("embeddings") && p.name == "tok_emb") || (also("norms") && norm))
          trained_.push_back(p);
      }
    }
    adam_->Attach(trained_);
    long start_step = 0;
    const std::string ckpt = CheckpointPath(opt_.out_dir, name_);
    if (opt_.resume && std::filesystem::exists(ckpt)) {
      start_step = LoadState(ckpt);
      Say(fmt::format("resuming from step {} ({})", start_step, ckpt));
    }
    state_ = RunState::kCompleted;
    if (!opt_.weights_from.empty()) {
      LoadWeights(opt_.weights_from);
      Say("evaluating the weights of " + opt_.weights_from);
    } else {
      Train(start_step);
      if (lora_) lora_->Merge();  // the model evaluates W0 + (alpha / r) A B of the last step
      if (state_ == RunState::kInterrupted) {
        sum.state = RunStateName(state_);
        return sum;
      }
    }
    if (state_ == RunState::kCompleted) EvaluateAndProbe();
    // Written as "analyzing" first: the file says "completed" only once its analysis is in it.
    TakeContent().Write(sum.path);
    if (state_ == RunState::kCompleted) {
      if (opt_.stop_before_analysis) {
        sum.state = "interrupted";
        return sum;
      }
      if (!FinishAnalysis(cfg_, opt_, sum, [&](const std::string& l) { Say("analysis: " + l); })) {
        std::filesystem::remove(ckpt);
        return sum;
      }
    }
    std::filesystem::remove(ckpt);
    sum.state = RunStateName(state_);
    sum.message = message_;
    sum.final_train_loss = hist_.loss.empty() ? 0 : hist_.loss.back();
    sum.eval = eval_;
    return sum;
  }

 private:
  void Say(const std::string& s) const {
    if (opt_.progress) opt_.progress("[" + opt_.label + "] " + s);
  }

  CheckpointExtras State(long step) const {
    CheckpointExtras ex;
    ex.ints["step"] = {step};
    auto rng_words = [](const Rng& r) {
      return std::vector<int64_t>(r.State(), r.State() + Rng::kStateWords);
    };
    ex.ints["rng_data"] = rng_words(data_rng_);
    ex.ints["rng_positions"] = rng_words(pos_rng_);
    ex.ints["hist_step"] = hist_.step;
    ex.ints["hist_length"] = hist_.length;
    ex.ints["hist_batch_size"] = hist_.batch_size;
    ex.ints["hist_tokens"] = hist_.tokens;
    ex.doubles["hist_flops"] = hist_.flops;
    ex.doubles["hist_loss"] = hist_.loss;
    ex.doubles["hist_lr"] = hist_.lr;
    ex.doubles["hist_grad_norm"] = hist_.grad_norm;
    ex.doubles["hist_tokens_per_s"] = hist_.tokens_per_s;
    ex.ints["evh_step"] = eval_history_.step;
    ex.ints["evh_length"] = eval_history_.length;
    ex.doubles["evh_loss"] = eval_history_.loss;
    ex.doubles["evh_token_accuracy"] = eval_history_.token_accuracy;
    ex.doubles["evh_exact_match"] = eval_history_.exact_match;
    return ex;
  }

  long LoadState(const std::string& path) {
    CheckpointExtras ex = LoadCheckpoint(path, trained_, *adam_);
    const std::string bad = "file '" + path + "': not a checkpoint of this run (or damaged): ";
    auto ints = [&](const std::string& key, size_t size) -> const std::vector<int64_t>& {
      LEXP_INPUT_CHECK(ex.ints.count(key) && (size == 0 || ex.ints[key].size() == size),
                       bad + "extra/i_" + key);
      return ex.ints[key];
    };
    auto set_rng = [&](Rng& r, const std::vector<int64_t>& w) {
      uint64_t s[Rng::kStateWords];
      for (int i = 0; i < Rng::kStateWords; ++i) s[i] = static_cast<uint64_t>(w[i]);
      r.SetState(s);
    };
    set_rng(data_rng_, ints("rng_data", Rng::kStateWords));
    set_rng(pos_rng_, ints("rng_positions", Rng::kStateWords));
    const long step = ints("step", 1)[0];
    hist_.step = ex.ints["hist_step"];
    hist_.length = ex.ints["hist_length"];
    hist_.batch_size = ex.ints["hist_batch_size"];
    hist_.tokens = ex.ints["hist_tokens"];
    hist_.flops = ex.doubles["hist_flops"];
    if (!ex.ints.count("hist_tokens") && hist_.length.size() == hist_.batch_size.size()) {
      // A checkpoint of before 2026-12-02: the compute of its steps, from their lengths.
      for (size_t i = 0; i < hist_.length.size(); ++i)
        RecordCompute(static_cast<int>(hist_.batch_size[i]),
                      layout_.SequenceLengthFor(static_cast<int>(hist_.length[i])));
    }
    hist_.loss = ex.doubles["hist_loss"];
    hist_.lr = ex.doubles["hist_lr"];
    hist_.grad_norm = ex.doubles["hist_grad_norm"];
    hist_.tokens_per_s = ex.doubles["hist_tokens_per_s"];
    eval_history_.step = ex.ints["evh_step"];
    eval_history_.length = ex.ints["evh_length"];
    eval_history_.loss = ex.doubles["evh_loss"];
    eval_history_.token_accuracy = ex.doubles["evh_token_accuracy"];
    eval_history_.exact_match = ex.doubles["evh_exact_match"];
    const size_t R = eval_history_.step.size();
    LEXP_INPUT_CHECK(eval_history_.length.size() == R && eval_history_.loss.size() == R &&
                         eval_history_.token_accuracy.size() == R &&
                         eval_history_.exact_match.size() == R,
                     bad + "the evaluation history's columns disagree");
    const size_t S = hist_.step.size();
    LEXP_INPUT_CHECK(step >= 0 && step <= cfg_.steps && hist_.length.size() == S &&
                         hist_.batch_size.size() == S && hist_.tokens.size() == S &&
                         hist_.flops.size() == S && hist_.loss.size() == S &&
                         hist_.lr.size() == S && hist_.grad_norm.size() == S &&
                         hist_.tokens_per_s.size() == S,
                     bad + "the step and the training history disagree");
    return step;
  }

  void LoadWeights(const std::string& path) {
    LoadModelWeights(path, params_);
    weights_source_ = path;
  }

  // Leaves state_ completed, diverged or interrupted.
  void Train(long start_step) {
    const std::vector<RecipeConfig::LengthPhase> schedule = cfg_.LengthSchedule();
    MatF logits, d_logits;
    std::vector<double> pos;
    const auto t_start = Clock::now();
    double window_tokens = 0, window_loss = 0;
    int window_steps = 0;
    auto t_window = Clock::now();
    if (cfg_.eval_every > 0 && start_step == 0) EvaluateDuringTraining(0);
    for (long step = start_step; step < cfg_.steps; ++step) {
      const auto t0 = Clock::now();
      // GrowLength: the phase's longest length, and a batch that keeps the tokens per step.
      const RecipeConfig::TrainingPhase phase = cfg_.PhaseAt(step, schedule);
      // Lengths from the task's shortest (1 for all but selective_copy) to the phase's longest.
      const int n = static_cast<int>(
          data_rng_.UniformInt(std::min(task_->MinLength(), phase.max_length), phase.max_length));
      const int shape = layout_.DrawShape(n, data_rng_);
      const Batch b = layout_.MakeBatch(n, phase.batch_size, data_rng_, -1, shape);
      enc_->PositionIds(b.T, true, pos_rng_, pos);
      model_->ZeroGrad();
      if (lora_) {
        lora_->ZeroGrad();
        lora_->Merge();
      }
      model_->Forward(b.tokens, b.B, b.T, pos, true, false, logits);
      const CrossEntropyResult ce =
          CrossEntropyForwardBackward(logits, b.targets, b.mask, &d_logits, nullptr, nullptr);
      const double loss = ce.MeanLoss();
      const double lr = ScheduledLr(opt_cfg_, step);
      double gnorm = std::numeric_limits<double>::quiet_NaN();
      if (std::isfinite(loss)) {
        model_->Backward(b.tokens, d_logits);
        if (lora_) lora_->Backward();
        gnorm = adam_->Step(trained_, lr);
        enc_->AfterOptimizerStep();
      }
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      hist_.step.push_back(step);
      hist_.length.push_back(n);
      hist_.batch_size.push_back(b.B);
      RecordCompute(b.B, b.T);
      hist_.loss.push_back(loss);
      hist_.lr.push_back(lr);
      hist_.grad_norm.push_back(gnorm);
      hist_.tokens_per_s.push_back(static_cast<double>(b.B) * b.T / std::max(dt, 1e-9));
      if (!std::isfinite(loss) || !std::isfinite(gnorm)) {
        state_ = RunState::kDiverged;
        message_ = fmt::format("non-finite {} at step {} (length {})",
                               std::isfinite(loss) ? "gradient norm" : "loss", step, n);
        return;
      }
      window_tokens += static_cast<double>(b.B) * b.T;
      window_loss += loss;
      ++window_steps;
      const bool last = step + 1 == cfg_.steps;
      if ((step + 1) % cfg_.log_every == 0 || last) {
        const double wt = std::chrono::duration<double>(Clock::now() - t_window).count();
        const double done = static_cast<double>(step + 1 - start_step);
        const double el = std::chrono::duration<double>(Clock::now() - t_start).count();
        Say(fmt::format("step {:>6}/{}  loss {:.4f}  lr {:.2e}  |g| {:.3f}  {:.1f}k tok/s  ETA {}",
                        step + 1, cfg_.steps, window_loss / window_steps, lr, gnorm,
                        window_tokens / std::max(wt, 1e-9) / 1e3,
                        FormatDuration(el / done * (cfg_.steps - step - 1))));
        window_tokens = window_loss = 0;
        window_steps = 0;
        t_window = Clock::now();
      }
      if (cfg_.eval_every > 0 && ((step + 1) % cfg_.eval_every == 0 || last))
        EvaluateDuringTraining(step + 1);
      if ((step + 1) % cfg_.checkpoint_every == 0 && !last)
        SaveCheckpoint(CheckpointPath(opt_.out_dir, name_), trained_, *adam_, State(step + 1));
      if (opt_.stop_after_steps > 0 && step + 1 - start_step >= opt_.stop_after_steps && !last) {
        SaveCheckpoint(CheckpointPath(opt_.out_dir, name_), trained_, *adam_, State(step + 1));
        state_ = RunState::kInterrupted;
        return;
      }
    }
  }

  // The compute of a training step over B sequences of T tokens, into the history: its tokens and
  // its matrix-product FLOPs (forward and backward) under the training pattern.
  void RecordCompute(int B, int T) {
    hist_.tokens.push_back(static_cast<int64_t>(B) * T);
    hist_.flops.push_back(3 * ForwardMatmulFlops(model_->config(), model_->pattern(), B, T));
  }

  // train.eval_every: the eval_every_lengths on the end-of-training evaluation's sequences (their
  // own streams, so the training data and position streams are left as they were), under the
  // evaluation pattern and, with LoRA, the current adapters merged. Training resumes under its own
  // pattern; the next step recomputes every activation, so its bits do not depend on this.
  void EvaluateDuringTraining(long steps_done) {
    if (lora_) lora_->Merge();
    UseEvaluationPattern();
    std::string line = fmt::format("evaluation at step {}:", steps_done);
    for (int n : cfg_.EvalEveryLengths()) {
      LengthStreams st = EvalStreams(cfg_.seed, n);
      const EvalRow r = EvaluateAt(n, -1, st.data, st.positions);
      eval_history_.step.push_back(steps_done);
      eval_history_.length.push_back(n);
      eval_history_.loss.push_back(r.loss);
      eval_history_.token_accuracy.push_back(r.token_accuracy);
      eval_history_.exact_match.push_back(r.exact_match);
      line += fmt::format("  n={} loss {:.4f} accuracy {:.3f}", n, r.loss, r.token_accuracy);
    }
    Say(line);
    UseTrainingPattern();
  }

  // The recipe's pattern where it applies: in training unless pattern_when = "eval", in evaluation
  // and probes unless it is "train" (the model's own causal or bidirectional mask otherwise).
  void UseTrainingPattern() {
    model_->set_pattern(parts_.pattern && cfg_.pattern_when != "eval" ? parts_.pattern.get()
                                                                      : nullptr);
  }
  void UseEvaluationPattern() {
    model_->set_pattern(parts_.pattern && cfg_.pattern_when != "train" ? parts_.pattern.get()
                                                                       : nullptr);
  }

  // Evaluation and probe both run under the evaluation pattern (if the recipe has one; a
  // training-only pattern is removed).
  void EvaluateAndProbe() {
    UseEvaluationPattern();
    if (opt_.capture_only) {
      Say("capture only: no evaluation; the probe stores its capture sites");
    } else {
      Evaluate();
    }
    Probe();
  }

  // eval_samples sequences of length n (depth >= 0: at that depth), in evaluation batches.
  EvalRow EvaluateAt(int n, double depth, Rng& data, Rng& positions) {
    return EvaluateLength(parts_, n, cfg_.eval_samples, cfg_.eval_batch_size, depth, data,
                          positions, eval_buf_, cfg_.DecodingFor(*task_));
  }

  void Evaluate() {
    const auto t0 = Clock::now();
    for (int n : cfg_.EvalLengths()) {
      LengthStreams st = EvalStreams(cfg_.seed, n);
      eval_.push_back(EvaluateAt(n, -1, st.data, st.positions));
      if (task_->HasDepth())
        for (int d : cfg_.eval_depths) {
          Rng ddata = st.data.Split(static_cast<uint64_t>(1000 + d));
          const EvalRow dr = EvaluateAt(n, d / 100.0, ddata, st.positions);
          depth_accuracy_.push_back(dr.token_accuracy);
          depth_exact_.push_back(dr.exact_match);
        }
    }
    const double el = std::chrono::duration<double>(Clock::now() - t0).count();
    const ProtocolScores p = ScoreEvalRows(eval_, cfg_.train_max_length);
    auto or_zero = [](double x) { return std::isnan(x) ? 0.0 : x; };
    Say(fmt::format(
        "evaluated {} lengths in {:.1f}s ({}): token accuracy {:.3f} at 1..{}, {:.3f} beyond",
        eval_.size(), el, DecodingName(cfg_.DecodingFor(*task_)), or_zero(p.in_distribution),
        cfg_.train_max_length, or_zero(p.ruoss)));
    if (cfg_.DecodingFor(*task_) == Decoding::kGreedy) Say(GreedyCostLine(eval_));
    // A loss that is not finite at some length (the model overflows there: xPos with a small
    // scale base at n = 256, say) is a finding, said here and kept in the file.
    nonfinite_lengths_ = NonFiniteLossLengths(eval_);
    if (!nonfinite_lengths_.empty()) {
      const std::string warning =
          "warning: the evaluation loss is not finite at n = " + nonfinite_lengths_ +
          ": the model overflows there (its scores at those lengths are not measurements; "
          "/eval@nonfinite_lengths)";
      Say(warning);
      std::fprintf(stderr, "lexp: %s\n", warning.c_str());
    }
  }

  void Probe() {
    const int L = cfg_.model.n_layers, H = cfg_.model.n_heads;
    MatF logits;
    std::vector<double> pos;
    const std::vector<std::string> sites =
        MatchCaptureSites(model_->config(), cfg_.probe_capture, "probe.capture");
    for (int n : cfg_.ProbeLengths()) {
      LengthStreams st = ProbeStreams(cfg_.seed, n);
      const Batch b = layout_.MakeBatch(n, cfg_.probe_samples, st.data);
      enc_->PositionIds(b.T, false, st.positions, pos);
      // Capture sites keep every layer's activations (same bits as without): only when asked.
      model_->set_capture_sites(!sites.empty());
      model_->Forward(b.tokens, b.B, b.T, pos, false, true, logits);
      model_->set_capture_sites(false);
      ProbeRecord p;
      p.length = n;
      p.T = b.T;
      p.input_tokens = layout_.InputTokensFor(n);
      p.positions = pos;
      const int T = b.T, stored = std::min(cfg_.probe_stored_samples, b.B);
      p.tokens.assign(b.tokens.begin(), b.tokens.begin() + static_cast<long>(stored) * T);
      p.entropy.assign(static_cast<size_t>(L) * H, 0);
      p.max_logit = p.mean_logit = p.entropy;
      const size_t map = static_cast<size_t>(T) * T;
      p.logits.resize(static_cast<size_t>(stored) * L * H * map);
      p.probs.resize(p.logits.size());
      for (int l = 0; l < L; ++l) {
        const MatF& lg = model_->Logits(l);  // [B*H*T, T]
        const MatF& pr = model_->Probs(l);
        for (int s = 0; s < b.B; ++s)
          for (int h = 0; h < H; ++h) {
            const long task = static_cast<long>(s) * H + h;
            const float* z = lg.data() + task * T * T;
            const AttentionMapStats map_stats = MapStats(z, T, T);
            const size_t lh = static_cast<size_t>(l) * H + h;
            p.entropy[lh] += map_stats.entropy / b.B;
            p.max_logit[lh] += map_stats.max_logit / b.B;
            p.mean_logit[lh] += map_stats.mean_logit / b.B;
            p.log_visible += map_stats.log_visible / (static_cast<double>(b.B) * H * L);
            if (s < stored) {
              const size_t off = ((static_cast<size_t>(s) * L + l) * H + h) * map;
              std::copy(z, z + map, p.logits.begin() + off);
              std::copy(pr.data() + task * T * T, pr.data() + (task + 1) * T * T,
                        p.probs.begin() + off);
            }
          }
      }
      for (const CaptureSite& site : CaptureSites(model_->config(), T)) {
        if (std::find(sites.begin(), sites.end(), site.name) == sites.end()) continue;
        StoredTensor s{site.name, "sample," + site.axes, site.dims, {}};
        s.shape.insert(s.shape.begin(), static_cast<uint64_t>(stored));
        for (int k = 0; k < stored; ++k) {
          const std::vector<float> v = ReadCaptureSite(*model_, site.name, k, T);
          s.values.insert(s.values.end(), v.begin(), v.end());
        }
        p.sites.push_back(std::move(s));
      }
      probes_.push_back(std::move(p));
    }
  }

  // The run file's content as this run has it (experiments/core/run_file.h writes it). The probe
  // maps, the large part, move: nothing reads them after the file is written.
  RunFile TakeContent() {
    RunFile f;
    f.encoding = encoding_;
    f.label = name_;
    f.task = cfg_.task;
    f.seed = cfg_.seed;
    f.train_max_length = cfg_.train_max_length;
    f.weights_from = weights_source_;
    f.init_from = cfg_.init_from;
    f.sweep_key = opt_.sweep_key;
    for (const auto& p : params_) f.total_parameters += p.size;
    for (const auto& p : trained_) f.trainable_parameters += p.size;
    if (lora_)
      for (const auto& p : lora_->Parameters()) f.total_parameters += p.size;
    f.start_time = start_time_;
    f.recipe = cfg_;
    f.encoding_values = enc_->Describe();
    f.train = hist_;
    f.eval_history = eval_history_;
    f.eval_history.decoding = DecodingName(cfg_.DecodingFor(*task_));
    f.eval = eval_;
    f.decoding = cfg_.DecodingFor(*task_);
    f.end_token = layout_.EndsWithEndToken();
    f.source_entropy_rate = task_->EntropyRate();
    f.chance_token_accuracy = 1.0 / task_->OutputAlphabet();
    f.nonfinite_lengths = nonfinite_lengths_;
    if (opt_.capture_only)
      f.eval_skipped =
          "a capture-only evaluation (lexp eval --capture ... --analyses none): the probe's "
          "capture sites, no scores";
    f.depth_exact = depth_exact_;
    f.depth_accuracy = depth_accuracy_;
    f.probes = std::move(probes_);
    if (state_ == RunState::kCompleted)
      // The model's weights (with LoRA: merged), then the adapters.
      for (const auto& ps : {params_, lora_ ? lora_->Parameters() : std::vector<ParamRef<float>>{}})
        for (const auto& p : ps)
          f.weights.push_back(
              {p.name, p.axes, p.shape, std::vector<float>(p.value, p.value + p.size)});
    f.state = state_;
    f.message = message_;
    return f;
  }

  const RecipeConfig& cfg_;
  std::string encoding_;
  RunOptions opt_;
  AssembledModel parts_;
  Task* task_ = parts_.task.get();
  SequenceLayout& layout_ = *parts_.layout;
  PositionEncoding<float>* enc_ = parts_.encoding.get();
  Transformer<float>* model_ = parts_.model.get();
  AdamWConfig opt_cfg_;
  std::unique_ptr<AdamW<float>> adam_;
  std::vector<ParamRef<float>> params_;
  std::vector<ParamRef<float>> trained_;       // what the optimizer updates (params_, or LoRA's)
  std::unique_ptr<LoraAdapters<float>> lora_;  // train.lora_rank > 0
  Rng data_rng_, pos_rng_;
  TrainHistory hist_;
  EvalHistory eval_history_;  // train.eval_every
  std::vector<EvalRow> eval_;
  std::string nonfinite_lengths_;  // lengths whose evaluation loss is not finite ("": none)
  std::vector<double> depth_accuracy_, depth_exact_;  // [length, depth] (tasks with a depth axis)
  EvalBuffers eval_buf_;                              // reused across evaluation batches
  std::vector<ProbeRecord> probes_;
  RunState state_ = RunState::kCompleted;
  std::string message_, start_time_, name_, weights_source_;
};

}  // namespace

RunSummary TrainAndEvaluate(const RecipeConfig& cfg, const std::string& encoding,
                            const RunOptions& opt) {
  const std::string name = opt.name.empty() ? encoding : opt.name;
  const std::string path = RunFilePath(opt.out_dir, name);
  if (opt.resume && std::filesystem::exists(path)) {
    const RunFileHead head = ReadRunFileHead(path);
    std::string state = RunStateName(head.state);
    const std::string message = head.message;
    RunSummary s;
    s.encoding = encoding;
    s.path = path;
    if (state == "analyzing") {  // killed during the end-of-training analysis: finish it
      if (opt.progress) opt.progress("[" + opt.label + "] resuming the analysis of " + path);
      if (!FinishAnalysis(cfg, opt, s, nullptr)) return s;
      state = "completed";
    }
    if (state == "completed" || state == "diverged") {
      std::filesystem::remove(CheckpointPath(opt.out_dir, name));
      s.state = state;
      s.message = state == "diverged" ? message : "completed by an earlier run (--resume)";
      if (state == "completed") s.eval = ReadEvalRows(path);
      return s;
    }
  }
  Runner runner(cfg, encoding, opt);
  return runner.Run();
}

}  // namespace lexp
