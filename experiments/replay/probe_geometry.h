// The attention geometry of a trained run, measured on its probe stream by replaying the model
// (experiments/replay/model_replay.h) over every probe sequence (probe.samples) at the training
// length and at every probe length, with the spread across sequences. Per (layer, head) and length:
//  * logit explosion as LM-Infinite measures it (Han et al. 2023, arXiv:2308.16137): the running
//    maximum over distance of the last query's logits, mean and sd over sequences; and the maximum
//    over every query at each distance (a different, length-biased statistic, under its own name);
//  * entropy, attended distance (mean and argmax), sink mass (attention on the first token) and
//    local mass (attention within `local_window` tokens) per query, mean and sd over sequences;
//  * the empirical attention expectation (xPos paper, Sun et al. 2022, arXiv:2212.10554): the mean
//    and sd of the logit at each distance over all visible pairs; its resolution over every
//    distance, over the training window only (the same N at every length), and the resolution of a
//    flat curve over the same distances (1/K^2: what length alone does to it); distances with no
//    pair are gaps, never joined;
//  * positional and content parts of the logits: the positional part of a logit is the mean logit
//    at its distance (over content), the content part the rest; the share of the logit variance the
//    positional part explains, and the fraction of logits, positional parts and content parts that
//    fall outside the range each had at the training length (LM-Infinite's Theorem 1: unseen
//    distances push logits out of the trained range; which part goes out is measured here);
//  * a head class at each length: sink (mean sink mass >= 0.5), else local (mean local mass
//    >= 0.5), else content-driven (distance explains < half the logit variance), else global; with
//    the sd over sequences of each head statistic and the fraction of sequences whose own
//    statistics give the same class (head_class_agreement: a class near a 0.5 threshold flips);
//  * NaN and +inf logits counted (every statistic skips them, so a diverged run must say so);
//  * with a reference run (typically NoPE, same probe stream): the Jensen-Shannon divergence of
//    attention rows between every head of this run and every head of the reference in the same
//    layer ([L, H, H]; head order is arbitrary between separately trained models), over the
//    queries that see two keys or more (a query seeing one key has JS 0 whatever the heads), and
//    the same over the queries beyond the training length only; per head its minimum over
//    reference heads (several heads may claim one reference head), its match in the one-to-one
//    assignment of the layer's heads to reference heads with the least total divergence
//    (analysis/assignment.h), and the mean (Kazemnejad et al. 2023 compare heads pairwise).
#pragma once

#include <string>
#include <vector>

#include "experiments/replay/model_replay.h"
#include "nn/io/hdf5.h"

namespace lexp {

// Mean and sample standard deviation over sequences of a per-sequence value (NaN where fewer than
// one, resp. two, sequences had a value).
struct SequenceSpread {
  std::vector<double> mean, sd;
};

enum class HeadClass : int { kSink = 0, kLocal = 1, kContent = 2, kGlobal = 3 };
const char* HeadClassName(HeadClass c);

// The range of each head's logits and of their two parts at the training length.
struct TrainedLogitRange {
  std::vector<double> logit_lo, logit_hi, pos_lo, pos_hi, content_lo, content_hi;  // [L, H]
};

struct ProbeGeometry {
  int length = 0, sequence_length = 0, input_tokens = 0, samples = 0, train_tokens = 0,
      local_window = 0;
  uint64_t layers = 0, heads = 0;
  std::vector<double> visible;                // [T] keys query i sees (layer 0, head 0)
  SequenceSpread explosion, running_max_all;  // [L, H, T] by distance
  SequenceSpread entropy, max_logit, attended_mean, attended_argmax, sink_mass,
      local_mass;                                                    // [L, H, T] by query
  std::vector<double> logit_mean_by_distance, logit_sd_by_distance;  // [L, H, T]
  std::vector<double> resolution, resolution_b, resolution_window;   // [L, H]
  double resolution_flat = 0, resolution_flat_window = 0;
  std::vector<double> positional_share;                                                   // [L, H]
  std::vector<double> out_of_range_logit, out_of_range_positional, out_of_range_content;  // [L, H]
  std::vector<double> head_sink_mass, head_local_mass;  // [L, H] mean over queries
  std::vector<double> head_sink_mass_sd, head_local_mass_sd, positional_share_sd;  // [L, H]
  std::vector<int64_t> head_class;                                                 // [L, H]
  std::vector<double> head_class_agreement;  // [L, H] fraction of sequences
  std::vector<int64_t> nonfinite;            // [L, H]
  bool has_reference = false;
  std::vector<double> js, js_best, js_mean;  // [L, H, H], [L, H], [L, H]
  std::vector<double> js_sd;                 // [L, H, H] over sequences
  std::vector<double> js_beyond;             // [L, H, H] queries >= train_tokens (NaN: none)
  std::vector<int64_t> js_matched_head;      // [L, H] the assignment's reference head
  std::vector<double> js_matched, js_matched_sd, js_matched_beyond;  // [L, H]
  TrainedLogitRange range;  // at this length (used as the trained range)
};

struct GeometryAnalysis {
  int train_length = 0;                // task length n of the training-length replay
  std::string reference;               // reference run file ("" without one)
  std::string reference_note;          // why there is no JS divergence, when there is none
  std::vector<ProbeGeometry> lengths;  // the training length first, then the probe lengths
};

// reference: a completed run file on the same probe stream, or "" for none.
GeometryAnalysis MeasureGeometry(const std::string& run_file, const std::string& reference);

// Writes /analysis/geometry (replacing an earlier one); returns report lines.
std::string WriteGeometry(const GeometryAnalysis& g, const h5::Group& analysis);

}  // namespace lexp
