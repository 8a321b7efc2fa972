#include "experiments/core/run_file.h"

#include <cmath>
#include <filesystem>

#include "analysis/binomial.h"
#include "experiments/core/provenance.h"
#include "nn/check.h"
#include "nn/io/hdf5.h"
#include "nn/model/capture_sites.h"
#include "nn/parallel.h"
#include "notebooks_cpp/figure_data.h"
#include "pe/registry.h"

namespace lexp {

std::string CaptureSiteUnits(const std::string& site) {
  const auto ends_with = [&](const std::string& suffix) {
    return site.size() >= suffix.size() &&
           site.compare(site.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".attn.pattern")) return "attention probability, 0 where masked";
  if (ends_with(".attn.logits")) return "pre-softmax logit; -inf where masked";
  if (ends_with(".mlp.hidden")) return "activation after the GELU (model units)";
  return "activation (model units: the residual stream's scale)";
}

std::string RunFilePath(const std::string& out_dir, const std::string& name) {
  return (std::filesystem::path(out_dir) / (name + ".h5")).string();
}
std::string CheckpointPath(const std::string& out_dir, const std::string& name) {
  return (std::filesystem::path(out_dir) / (name + ".ckpt.h5")).string();
}

const char* RunStateName(RunState s) {
  switch (s) {
    case RunState::kAnalyzing:
      return "analyzing";
    case RunState::kCompleted:
      return "completed";
    case RunState::kDiverged:
      return "diverged";
    case RunState::kInterrupted:
      return "interrupted";
    case RunState::kFailed:
      return "failed";
  }
  return "failed";
}

bool HasFinalWeights(RunState s) { return s == RunState::kCompleted || s == RunState::kAnalyzing; }

bool HasFinalWeights(const std::string& state) {
  return state == "completed" || state == "analyzing";
}

RunFileHead ReadRunFileHead(const std::string& path) {
  h5::Reader r(path);
  const h5::Group& root = r.root();
  RunFileFormat(root);
  const std::string state = RunFileState(root);
  RunFileHead h;
  h.path = path;
  const h5::Group st = root.OpenGroup("status");
  for (const RunState s : {RunState::kAnalyzing, RunState::kCompleted, RunState::kDiverged,
                           RunState::kInterrupted, RunState::kFailed})
    if (state == RunStateName(s)) h.state = s;
  if (st.HasAttr("message")) h.message = st.AttrString("message");
  if (st.HasAttr("steps_completed")) h.steps_completed = st.AttrInt("steps_completed");
  if (root.HasAttr("encoding")) {
    h.encoding = root.AttrString("encoding");
    bool known = false;
    for (const auto& e : ListEncodings()) known = known || e.name == h.encoding;
    LEXP_INPUT_CHECK(known, "'" + path + "': its root attribute encoding is '" + h.encoding +
                                "', which is no encoding of lexp (the file is damaged or was "
                                "changed; lexp list encodings)");
  }
  h.label = root.HasAttr("label") ? root.AttrString("label") : h.encoding;
  if (root.HasAttr("task")) h.task = root.AttrString("task");
  if (root.HasAttr("seed")) h.seed = static_cast<int>(root.AttrInt("seed"));
  if (root.HasAttr("train_max_length"))
    h.train_max_length = static_cast<int>(root.AttrInt("train_max_length"));
  if (root.HasAttr("sweep")) h.sweep_key = root.AttrString("sweep");
  return h;
}

std::vector<EvalRow> ReadEvalRows(const std::string& path) {
  h5::Reader r(path);
  const h5::Group ev = r.root().OpenGroup("eval");
  if (ev.HasAttr("skipped") && !ev.Has("length")) return {};  // a capture-only evaluation
  const auto len = ev.ReadIntsShaped("length", {h5::Group::kAnySize});
  const uint64_t E = len.size();
  const auto seq = ev.ReadIntsShaped("sequence_length", {E}),
             samples = ev.ReadIntsShaped("samples", {E}),
             scored = ev.ReadIntsShaped("scored_tokens", {E});
  const auto loss = ev.ReadDoublesShaped("loss", {E}),
             acc = ev.ReadDoublesShaped("token_accuracy", {E}),
             em = ev.ReadDoublesShaped("exact_match", {E});
  std::vector<EvalRow> rows(E);
  const bool greedy = ev.HasAttr("decoding") && ev.AttrString("decoding") == "greedy";
  std::vector<double> tf_acc, tf_em, ended, written;
  if (greedy) {
    tf_acc = ev.ReadDoublesShaped("teacher_forced_token_accuracy", {E});
    tf_em = ev.ReadDoublesShaped("teacher_forced_exact_match", {E});
    ended = ev.ReadDoublesShaped("ended", {E});
    written = ev.ReadDoublesShaped("written_length", {E});
  }
  for (size_t i = 0; i < E; ++i) {
    EvalRow& row = rows[i];
    row.length = static_cast<int>(len[i]);
    row.seq_len = static_cast<int>(seq[i]);
    row.samples = static_cast<int>(samples[i]);
    row.scored_tokens = scored[i];
    row.loss = loss[i];
    row.token_accuracy = acc[i];
    row.exact_match = em[i];
    if (greedy) {
      row.decoding = Decoding::kGreedy;
      row.teacher_forced_accuracy = tf_acc[i];
      row.teacher_forced_exact = tf_em[i];
      row.ended = ended[i];
      row.written_length = written[i];
    }
  }
  return rows;
}

RecipeConfig CompletedRunRecipe(const std::string& run_file, std::string* encoding) {
  const RunFileHead head = ReadRunFileHead(run_file);
  LEXP_INPUT_CHECK(HasFinalWeights(head.state), "'" + run_file + "' did not complete (" +
                                                    RunStateName(head.state) +
                                                    "); there are no trained weights");
  std::string recipe;
  {
    h5::Reader r(run_file);
    LEXP_INPUT_CHECK(r.root().Has("config") && r.root().OpenGroup("config").Has("recipe"),
                     "'" + run_file + "' is not a lexp run file (no /config/recipe)");
    recipe = r.root().OpenGroup("config").ReadString("recipe");
  }
  *encoding = head.encoding;
  RecipeConfig cfg = ParseRecipe(recipe, run_file + ":/config/recipe");
  cfg.encodings = {*encoding};
  for (auto it = cfg.encoding_options.begin(); it != cfg.encoding_options.end();)
    it = it->first == *encoding ? std::next(it) : cfg.encoding_options.erase(it);
  return cfg;
}

void WriteFailedRunFile(const RecipeConfig& cfg, const std::string& encoding,
                        const std::string& path, const std::string& message) {
  h5::Writer w(path);
  WriteProvenance(w.root(), ThreadLimit::Active());
  w.root().SetAttr("seed", cfg.seed);
  w.root().SetAttr("encoding", encoding);
  w.root().SetAttr("task", cfg.task);
  w.root().SetAttr("train_max_length", cfg.train_max_length);
  RecipeConfig copy = cfg;
  w.root().CreateGroup("config").WriteString("recipe", RecipeToToml(copy));
  h5::Group st = w.root().CreateGroup("status");
  st.SetAttr("state", "failed");
  st.SetAttr("message", message);
  st.SetAttr("steps_completed", static_cast<int64_t>(0));
  w.root().SetAttr("end_time", UtcNow());
  w.Commit();
}

void RunFile::WriteEvalRows(h5::Group& ev) const {
  const uint64_t E = eval.size();
  std::vector<int64_t> len, seq, samples, scored;
  std::vector<double> loss, acc, em;
  for (const auto& r : eval) {
    len.push_back(r.length);
    seq.push_back(r.seq_len);
    samples.push_back(r.samples);
    scored.push_back(r.scored_tokens);
    loss.push_back(r.loss);
    acc.push_back(r.token_accuracy);
    em.push_back(r.exact_match);
  }
  ev.WriteInts("length", len, {E}, "length", "tokens (requested task length n)");
  ev.WriteInts("sequence_length", seq, {E}, "length", "tokens (model sequence T)");
  ev.WriteDoubles("loss", loss, {E}, "length", "nats per scored token");
  ev.WriteDoubles("token_accuracy", acc, {E}, "length", "fraction of scored tokens");
  ev.WriteDoubles("exact_match", em, {E}, "length", "fraction of sequences");
  ev.WriteInts("samples", samples, {E}, "length", "sequences");
  ev.WriteInts("scored_tokens", scored, {E}, "length", "tokens");
  ev.SetAttr("decoding", DecodingName(decoding));
  ev.SetAttr("end_token", static_cast<int64_t>(end_token));
  if (decoding == Decoding::kGreedy) {
    std::vector<double> tf_acc, tf_em, ended, written;
    for (const auto& r : eval) {
      tf_acc.push_back(r.teacher_forced_accuracy);
      tf_em.push_back(r.teacher_forced_exact);
      ended.push_back(r.ended);
      written.push_back(r.written_length);
    }
    ev.WriteDoubles("teacher_forced_token_accuracy", tf_acc, {E}, "length",
                    "fraction of scored tokens, each predicted from the true ones before it");
    ev.WriteDoubles("teacher_forced_exact_match", tf_em, {E}, "length", "fraction of sequences");
    ev.WriteDoubles("ended", ended, {E}, "length",
                    "fraction of sequences whose written answer ends with the end token");
    ev.WriteDoubles("written_length", written, {E}, "length",
                    "tokens written (end token included), mean over sequences");
  }
  std::vector<double> acc_ci, em_ci;
  for (const auto& r : eval) {
    const Interval a =
        ClopperPearson(std::lround(r.token_accuracy * r.scored_tokens), r.scored_tokens);
    const Interval m = ClopperPearson(std::lround(r.exact_match * r.samples), r.samples);
    acc_ci.insert(acc_ci.end(), {a.lo, a.hi});
    em_ci.insert(em_ci.end(), {m.lo, m.hi});
  }
  ev.WriteDoubles("token_accuracy_ci", acc_ci, {E, 2}, "length,bound",
                  "fraction; Clopper-Pearson 95% (tokens taken as independent: optimistic)");
  ev.WriteDoubles("exact_match_ci", em_ci, {E, 2}, "length,bound", "fraction; Clopper-Pearson 95%");
  ev.SetAttr("chance_token_accuracy", chance_token_accuracy);
  if (!nonfinite_lengths.empty()) ev.SetAttr("nonfinite_lengths", nonfinite_lengths);
  if (std::isfinite(source_entropy_rate))
    ev.SetAttr("source_entropy_rate", source_entropy_rate);  // nats per token
  if (!depth_exact.empty()) {
    const uint64_t Dn = recipe.eval_depths.size();
    std::vector<int64_t> dp(recipe.eval_depths.begin(), recipe.eval_depths.end());
    ev.WriteInts("depth", dp, {Dn}, "depth", "percent of the input before the hidden item");
    ev.WriteDoubles("depth_exact_match", depth_exact, {E, Dn}, "length,depth",
                    "fraction of sequences (passkey accuracy)");
    ev.WriteDoubles("depth_token_accuracy", depth_accuracy, {E, Dn}, "length,depth",
                    "fraction of scored tokens");
  }
}

void RunFile::Write(const std::string& path) const {
  h5::Writer w(path);
  const h5::Group& root = w.root();
  WriteProvenance(root, ThreadLimit::Active());
  root.SetAttr("seed", seed);
  root.SetAttr("encoding", encoding);
  root.SetAttr("label", label);
  if (!weights_from.empty()) root.SetAttr("weights_from", weights_from);
  if (!init_from.empty()) root.SetAttr("init_from", init_from);
  if (!sweep_key.empty()) root.SetAttr("sweep", sweep_key);
  root.SetAttr("trainable_parameters", trainable_parameters);
  root.SetAttr("total_parameters", total_parameters);
  root.SetAttr("task", task);
  root.SetAttr("train_max_length", train_max_length);
  root.SetAttr("precision", PrecisionPolicyText(recipe.Precision()));
  root.SetAttr("start_time", start_time);

  RecipeConfig copy = recipe;
  h5::Group config = root.CreateGroup("config");
  config.WriteString("recipe", RecipeToToml(copy));
  config.WriteString("recipe_source_text", recipe.source_text);
  config.SetAttr("recipe_source", recipe.source_name);
  for (const Field& f : Fields(copy)) config.SetAttr(f.key, FieldValueString(f));
  config.SetAttr("encoding", encoding);
  // Every declared option's value as the encoding read it (pe/options.h).
  auto it = recipe.encoding_options.find(encoding);
  const std::map<std::string, std::string> given =
      it == recipe.encoding_options.end() ? std::map<std::string, std::string>() : it->second;
  for (const auto& [name, value] : ResolvedEncodingOptions(encoding, given))
    config.SetAttr("encoding_option." + name, value);

  // Encoding values the options do not show: defaults resolved against this run, and values
  // derived from the learned parameters.
  h5::Group described = root.CreateGroup("encoding");
  described.SetAttr("name", encoding);
  for (const auto& [key, values] : encoding_values)
    described.WriteDoubles(key, values, {values.size()}, "module",
                           "as the encoding defines it (lexp list encodings)");

  h5::Group tg = root.CreateGroup("train");
  const uint64_t S = train.step.size();
  tg.WriteInts("step", train.step, {S}, "step");
  tg.WriteInts("length", train.length, {S}, "step", "tokens (requested task length n)");
  tg.WriteInts("batch_size", train.batch_size, {S}, "step", "sequences");
  tg.WriteInts("tokens", train.tokens, {S}, "step", "model tokens");
  tg.WriteDoubles("flops", train.flops, {S}, "step",
                  "matrix-product FLOPs of the step, forward and backward (nn/model/flops.h)");
  tg.WriteDoubles("loss", train.loss, {S}, "step", "nats per scored token");
  tg.WriteDoubles("lr", train.lr, {S}, "step");
  tg.WriteDoubles("grad_norm", train.grad_norm, {S}, "step", "L2 norm before clipping");
  tg.WriteDoubles("tokens_per_s", train.tokens_per_s, {S}, "step", "tokens/s (wall clock)");
  if (eval_history.size() > 0) {
    h5::Group eh = tg.CreateGroup("eval_history");
    const uint64_t R = eval_history.size();
    eh.SetAttr("decoding", eval_history.decoding);
    eh.WriteInts("step", eval_history.step, {R}, "row", "steps trained before the evaluation");
    eh.WriteInts("length", eval_history.length, {R}, "row", "tokens (requested task length n)");
    eh.WriteDoubles("loss", eval_history.loss, {R}, "row", "nats per scored token");
    eh.WriteDoubles("token_accuracy", eval_history.token_accuracy, {R}, "row");
    eh.WriteDoubles("exact_match", eval_history.exact_match, {R}, "row");
  }

  h5::Group ev = root.CreateGroup("eval");
  if (!eval_skipped.empty()) {
    LEXP_CHECK(eval.empty(), "a run file's /eval is skipped or holds rows, not both");
    ev.SetAttr("skipped", eval_skipped);
  } else {
    WriteEvalRows(ev);
  }

  h5::Group probe = root.CreateGroup("probe");
  h5::Group an = root.CreateGroup("analysis");
  const uint64_t P = probes.size(), L = recipe.model.n_layers, H = recipe.model.n_heads;
  std::vector<int64_t> plen;
  std::vector<double> ent, mx, mean, ent_m, mx_m, mean_m, logv;
  for (const auto& p : probes) {
    plen.push_back(p.length);
    ent.insert(ent.end(), p.entropy.begin(), p.entropy.end());
    mx.insert(mx.end(), p.max_logit.begin(), p.max_logit.end());
    mean.insert(mean.end(), p.mean_logit.begin(), p.mean_logit.end());
    auto avg = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += x;
      return v.empty() ? 0.0 : s / v.size();
    };
    ent_m.push_back(avg(p.entropy));
    mx_m.push_back(avg(p.max_logit));
    mean_m.push_back(avg(p.mean_logit));
    logv.push_back(p.log_visible);
    const uint64_t T = p.T, stored = p.tokens.size() / p.T;
    h5::Group g = probe.CreateGroup("length_" + std::to_string(p.length));
    g.SetAttr("length", p.length);
    g.SetAttr("sequence_length", p.T);
    g.SetAttr("input_tokens", p.input_tokens);
    g.WriteInts("tokens", p.tokens, {stored, T}, "sample,query");
    g.WriteDoubles("positions", p.positions, {T}, "query", "position ids (site 1)");
    g.WriteFloats("logits", p.logits, {stored, L, H, T, T}, "sample,layer,head,query,key",
                  "pre-softmax logit; -inf where masked");
    g.WriteFloats("probs", p.probs, {stored, L, H, T, T}, "sample,layer,head,query,key",
                  "attention probability");
    for (const StoredTensor& s : p.sites)
      g.WriteFloats(s.name, s.values, s.shape, s.axes, CaptureSiteUnits(s.name));
  }
  probe.WriteInts("lengths", plen, {P}, "probe", "tokens (requested task length n)");
  an.WriteInts("probe_length", plen, {P}, "probe", "tokens (requested task length n)");
  an.WriteDoubles("entropy", ent, {P, L, H}, "probe,layer,head",
                  "nats (mean over queries, samples)");
  an.WriteDoubles("max_logit", mx, {P, L, H}, "probe,layer,head",
                  "logit (mean over queries of the row max)");
  an.WriteDoubles("mean_logit", mean, {P, L, H}, "probe,layer,head",
                  "logit (mean over visible keys and queries)");
  an.WriteDoubles("entropy_mean", ent_m, {P}, "probe", "nats (mean over layers, heads)");
  an.WriteDoubles("max_logit_mean", mx_m, {P}, "probe", "logit (mean over layers, heads)");
  an.WriteDoubles("mean_logit_mean", mean_m, {P}, "probe", "logit (mean over layers, heads)");
  an.WriteDoubles("log_visible_keys", logv, {P}, "probe",
                  "nats: mean over queries of ln(visible keys), the uniform-attention entropy");

  if (state == RunState::kCompleted) {
    h5::Group model = root.CreateGroup("model");
    for (const StoredTensor& p : weights)
      model.WriteFloats(p.name, p.values, p.shape, p.axes, "parameter values (float32)");
  }

  h5::Group st = root.CreateGroup("status");
  st.SetAttr("state", RunStateName(state == RunState::kCompleted ? RunState::kAnalyzing : state));
  st.SetAttr("message", message);
  st.SetAttr("steps_completed", static_cast<int64_t>(train.step.size()));
  root.SetAttr("end_time", UtcNow());
  w.Commit();
}

RunFile RunFile::Read(const std::string& path, bool with_probes) {
  const RunFileHead head = ReadRunFileHead(path);
  RunFile f;
  f.encoding = head.encoding;
  f.label = head.label;
  f.task = head.task;
  f.seed = head.seed;
  f.train_max_length = head.train_max_length;
  f.state = head.state == RunState::kAnalyzing ? RunState::kCompleted : head.state;
  f.message = head.message;
  h5::Reader r(path);
  const h5::Group& root = r.root();
  if (root.HasAttr("weights_from")) f.weights_from = root.AttrString("weights_from");
  if (root.HasAttr("init_from")) f.init_from = root.AttrString("init_from");
  if (root.HasAttr("sweep")) f.sweep_key = root.AttrString("sweep");
  if (root.HasAttr("trainable_parameters"))
    f.trainable_parameters = root.AttrInt("trainable_parameters");
  if (root.HasAttr("total_parameters")) f.total_parameters = root.AttrInt("total_parameters");
  if (root.HasAttr("start_time")) f.start_time = root.AttrString("start_time");
  if (root.Has("config") && root.OpenGroup("config").Has("recipe")) {
    const h5::Group config = root.OpenGroup("config");
    f.recipe = ParseRecipe(config.ReadString("recipe"), path + ":/config/recipe");
    if (config.Has("recipe_source_text"))
      f.recipe.source_text = config.ReadString("recipe_source_text");
    if (config.HasAttr("recipe_source")) f.recipe.source_name = config.AttrString("recipe_source");
  }
  if (root.Has("encoding")) {
    const h5::Group enc = root.OpenGroup("encoding");
    for (const auto& key : enc.Children()) f.encoding_values[key] = enc.ReadDoubles(key);
  }
  if (root.Has("train")) {
    const h5::Group tg = root.OpenGroup("train");
    std::vector<uint64_t> got;
    f.train.step = tg.ReadIntsShaped("step", {kAny}, &got);
    const uint64_t S = got[0];
    f.train.length = tg.ReadIntsShaped("length", {S});
    // Format 2 files written before train.length_schedule existed have no batch sizes.
    if (tg.Has("batch_size")) f.train.batch_size = tg.ReadIntsShaped("batch_size", {S});
    // Files written before 2026-12-02 have no compute per step.
    if (tg.Has("tokens")) f.train.tokens = tg.ReadIntsShaped("tokens", {S});
    if (tg.Has("flops")) f.train.flops = tg.ReadDoublesShaped("flops", {S});
    f.train.loss = tg.ReadDoublesShaped("loss", {S});
    f.train.lr = tg.ReadDoublesShaped("lr", {S});
    f.train.grad_norm = tg.ReadDoublesShaped("grad_norm", {S});
    f.train.tokens_per_s = tg.ReadDoublesShaped("tokens_per_s", {S});
    if (tg.Has("eval_history")) {
      const h5::Group eh = tg.OpenGroup("eval_history");
      f.eval_history.step = eh.ReadIntsShaped("step", {kAny}, &got);
      const uint64_t R = got[0];
      f.eval_history.length = eh.ReadIntsShaped("length", {R});
      f.eval_history.loss = eh.ReadDoublesShaped("loss", {R});
      f.eval_history.token_accuracy = eh.ReadDoublesShaped("token_accuracy", {R});
      f.eval_history.exact_match = eh.ReadDoublesShaped("exact_match", {R});
      if (eh.HasAttr("decoding")) f.eval_history.decoding = eh.AttrString("decoding");
    }
  }
  if (root.Has("eval") && root.OpenGroup("eval").HasAttr("skipped"))
    f.eval_skipped = root.OpenGroup("eval").AttrString("skipped");
  if (root.Has("eval") && root.OpenGroup("eval").Has("length")) {
    f.eval = ReadEvalRows(path);
    const h5::Group ev = root.OpenGroup("eval");
    const uint64_t E = f.eval.size();
    if (ev.HasAttr("decoding") && ev.AttrString("decoding") == "greedy")
      f.decoding = Decoding::kGreedy;
    if (ev.HasAttr("end_token")) f.end_token = ev.AttrInt("end_token") != 0;
    if (ev.HasAttr("chance_token_accuracy"))
      f.chance_token_accuracy = ev.AttrDouble("chance_token_accuracy");
    if (ev.HasAttr("nonfinite_lengths")) f.nonfinite_lengths = ev.AttrString("nonfinite_lengths");
    if (ev.HasAttr("source_entropy_rate"))
      f.source_entropy_rate = ev.AttrDouble("source_entropy_rate");
    if (ev.Has("depth_exact_match")) {
      const uint64_t Dn = f.recipe.eval_depths.size();
      f.depth_exact = ev.ReadDoublesShaped("depth_exact_match", {E, Dn});
      f.depth_accuracy = ev.ReadDoublesShaped("depth_token_accuracy", {E, Dn});
    }
  }
  if (root.Has("probe") && root.OpenGroup("probe").Has("lengths")) {
    const h5::Group probe = root.OpenGroup("probe");
    const h5::Group an = root.OpenGroup("analysis");
    const uint64_t L = f.recipe.model.n_layers, H = f.recipe.model.n_heads;
    std::vector<uint64_t> got;
    const auto lengths = probe.ReadIntsShaped("lengths", {kAny}, &got);
    const uint64_t P = got[0];
    const auto ent = an.ReadDoublesShaped("entropy", {P, L, H});
    const auto mx = an.ReadDoublesShaped("max_logit", {P, L, H});
    const auto mean = an.ReadDoublesShaped("mean_logit", {P, L, H});
    const auto logv = an.ReadDoublesShaped("log_visible_keys", {P});
    for (uint64_t i = 0; i < P; ++i) {
      ProbeRecord p;
      p.length = static_cast<int>(lengths[i]);
      const h5::Group g = probe.OpenGroup("length_" + std::to_string(p.length));
      p.T = static_cast<int>(g.AttrInt("sequence_length"));
      if (g.HasAttr("input_tokens")) p.input_tokens = static_cast<int>(g.AttrInt("input_tokens"));
      const uint64_t T = p.T;
      p.positions = g.ReadDoublesShaped("positions", {T});
      auto part = [&](const std::vector<double>& v) {
        return std::vector<double>(v.begin() + i * L * H, v.begin() + (i + 1) * L * H);
      };
      p.entropy = part(ent);
      p.max_logit = part(mx);
      p.mean_logit = part(mean);
      p.log_visible = logv[i];
      if (with_probes) {
        p.tokens = g.ReadIntsShaped("tokens", {kAny, T}, &got);
        const uint64_t stored = got[0];
        for (const char* name : {"logits", "probs"}) {
          const auto v = g.ReadDoublesShaped(name, {stored, L, H, T, T});
          (std::string(name) == "logits" ? p.logits : p.probs).assign(v.begin(), v.end());
        }
        for (const std::string& site :
             f.recipe.probe_capture.empty()
                 ? std::vector<std::string>{}
                 : MatchCaptureSites(f.recipe.Model(1), f.recipe.probe_capture,
                                     path + ": probe.capture")) {
          StoredTensor s;
          s.name = site;
          const auto v = g.ReadDoubles(site, &s.shape);
          s.values.assign(v.begin(), v.end());
          s.axes = g.ChildAttrString(site, "axes");
          p.sites.push_back(std::move(s));
        }
      }
      f.probes.push_back(std::move(p));
    }
  }
  return f;
}

}  // namespace lexp
