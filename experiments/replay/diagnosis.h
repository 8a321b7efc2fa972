// Why a trained model fails beyond its training length, by intervention (issue: lexp diagnose).
// LM-Infinite (Han et al. 2023, arXiv:2308.16137, sec. 3) names three out-of-distribution
// factors: unseen distances, too many tokens attended (entropy), and the starting tokens' distinct
// features. Each intervention removes one at evaluation time, on the run's own evaluation
// sequences (those /eval scored), and reads how much of the loss gap beyond N it closes:
//   gap(n)   = mean loss at n - mean loss at the longest evaluated length <= N (in distribution)
//   closed   = mean over sequences of (loss at n - loss at n under the intervention)  [paired]
//   share    = closed / gap, with a delta-method interval from the per-sequence losses (the
//              covariance of closed and gap included; the in-distribution sequences independent)
// The gap holds whatever makes tokens at n easier or harder than at N besides the failure (a task
// whose early tokens lack context): a share above 1 puts the loss at n below the reference's. The
// window also caps every distance at L - 1 for relative encodings, so window - distance_clamp is
// what the key count alone adds. Each intervention's cost at the reference length is reported.
// Beside each reading, the symptom each intervention should remove (attention_symptoms.h): the
// last query's attention entropy against ln n, and its largest logit, with and without it.
// Interventions, each a set of recipe overrides replayed on the trained weights:
//   distance_clamp  unseen distances: RoPE distances >= L - 1 seen as L - 1 (ReRoPE's rule without
//                   its log-n, L the longest training sequence); any other relative encoding
//                   (biases, CoPE, ...) the same through the Lambda mask with every key global
//                   (keys beyond the last L seen at distance L - 1), where it can show a key at
//                   another distance than its own
//   position_remap  unseen absolute positions (absolute encodings): positions >= L read as L - 1
//   window          too many keys: a sliding window of L keys
//   lambda          too many keys, starting tokens kept: LM-Infinite's Lambda mask (window L and
//                   the first 2 tokens); lambda - window is what the starting tokens add
//   log_n           too many keys, entropy held: the content logits of query i times
//                   max(1, log_L(i + 1)) (model.log_n, any encoding)
//   freeze_slow     rotary: the pairs that never complete a period within the trained distances
//                   (from the critical one, Liu et al. 2023) stop rotating (theta_k = 0, at
//                   every position: their part of the logit no longer depends on position)
//   ntk, yarn       rotary: the frequencies rescaled for the length (factor = tokens / L)
// An intervention that does not apply (the encoding has no such mechanism, or the run already
// uses a pattern or a scaling rule it would replace) is listed with the reason, not run.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "nn/io/hdf5.h"

namespace lexp {

struct Diagnosis {
  std::string encoding, task;
  int train_length = 0;       // N (task length)
  int train_tokens = 0;       // L: tokens of the longest training sequence
  int reference_length = 0;   // the longest evaluated length <= N
  double reference_loss = 0;  // its mean loss per graded token
  std::vector<int> lengths;   // the lengths beyond N diagnosed
  std::vector<std::string> interventions, factors;  // the ones run, with the factor each removes
  std::vector<std::string> not_applied;             // "name: reason"
  // [length]: the loss at n and its gap to the reference, with the gap's 95% interval.
  std::vector<double> loss, gap, gap_lo, gap_hi;
  // [intervention, length]: the loss under it, the paired improvement (loss - loss under it) and
  // the share of the gap it closes, each with a 95% interval (NaN share: no significant gap).
  std::vector<double> loss_with, closed, closed_lo, closed_hi, share, share_lo, share_hi;
  // [intervention]: the loss at the reference length under it (its cost in distribution).
  std::vector<double> reference_loss_with;
  // The symptoms beside (experiments/replay/attention_symptoms.h): the last query's attention
  // entropy (nats), the ln of the keys it sees, and its largest logit; at the reference length,
  // [length] for the run's own model, [intervention, length] under each intervention.
  double reference_entropy = 0, reference_logit_max = 0;
  std::vector<double> entropy, log_keys, logit_max, entropy_with, logit_max_with;
};

// One intervention at one length: x the per-sequence losses at n, y the same sequences' under the
// intervention, in the reference length's (independent sequences). The gap (x - in), the paired
// improvement (x - y) and the share, each with its 95% interval; share NaN when the gap's interval
// does not lie above 0.
struct GapShare {
  double gap = 0, gap_lo = 0, gap_hi = 0, closed = 0, closed_lo = 0, closed_hi = 0;
  double share = std::numeric_limits<double>::quiet_NaN(), share_lo = share, share_hi = share;
};
GapShare ShareOfGap(const std::vector<double>& x, const std::vector<double>& y,
                    const std::vector<double>& in);

// The distance clamp's overrides at a length of `tokens` tokens, L the longest training sequence:
// RoPE's (rotary) ReRoPE rule at L - 1, or the Lambda mask with every key global that any other
// relative encoding reads (the two agree on RoPE).
std::vector<std::string> DistanceClampOverrides(bool rotary, int tokens, int L);

// Every intervention's name, in the order a diagnosis runs them.
const std::vector<std::string>& DiagnosisInterventions();

// lengths empty: the run's evaluation lengths beyond N. only: the interventions run (names of
// DiagnosisInterventions(); empty: all). progress, when given, hears each intervention as it
// starts.
Diagnosis DiagnoseRun(const std::string& run_file, const std::vector<int>& lengths,
                      const std::function<void(const std::string&)>& progress = nullptr,
                      const std::vector<std::string>& only = {});

// Writes /diagnosis (replacing an earlier one) and returns the report table.
std::string WriteDiagnosis(const Diagnosis& d, const h5::Group& root);

}  // namespace lexp
