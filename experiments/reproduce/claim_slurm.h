// `lexp reproduce ID --slurm`: a claim at a budget as SLURM jobs. Each stage that trains (and each
// stage of each other step count of its trend) becomes a job array of its own, as `lexp slurm`
// writes one for a sweep (<claim dir>/[steps<N>/]runs/<stage>/slurm/{sweep,collect}.sbatch, one
// task per model), every array submitted after the previous stage's collect has ended well
// (a fine-tuning starts from its pre-training's files); a last job runs
// `lexp reproduce ID --collect` (stages that evaluate, then the verdict, the figures and the
// table). <claim dir>/slurm/submit.sh submits them in that order.
#pragma once

#include <string>

#include "experiments/reproduce/claim.h"
#include "experiments/reproduce/gallery.h"
#include "experiments/training/slurm.h"

namespace lexp {

// Writes every script; with slurm.submit runs submit.sh. `claim_ref` names the claim on the
// collect job's command line (an id, or a claim file's path).
void WriteClaimSlurm(const Claim& claim, const std::string& claim_ref,
                     const ReproduceOptions& opt, const SlurmOptions& slurm);

}  // namespace lexp
