// `lexp base-law RUN_DIR`: the RoPE base-scaling law measured against its prediction (Liu et al.
// 2023). For every completed rope run of the directory (typically a key sweep over
// encoding_options.rope.base on the markov_lm source): the measured extrapolation limit (the
// longest evaluated sequence, in tokens, up to which every loss beyond the training length stays
// within `tolerance` of the loss at the longest evaluated training length; analysis/base_law.h)
// next to the predicted T_extra = 2 pi b^(d_extra/d) (bases >= 10^4; d_extra of base 10^4 at the
// run's training length), and a fit of ln(limit) on ln(base) over the bases >= 10^4 whose limit is
// not censored by the longest evaluated length, with its 95% interval, against the predicted
// exponent d_extra/d. Writes <RUN_DIR>/base_law.h5 and returns the table as text.
#pragma once

#include <string>

namespace lexp {

std::string WriteBaseLaw(const std::string& run_dir, double tolerance);

}  // namespace lexp
