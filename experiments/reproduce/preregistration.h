// Pre-registration that git shows (issue 32): a claim's criterion lands in a commit of its own,
// before the verdict that judges it, and the verdict was judged by a build of that commit or a
// later one, with no uncommitted change. Read from the repository's history and the verdict
// file's provenance (its git_commit), for `lexp reproduce --list` and the test that holds every
// claim to it.
#pragma once

#include <string>
#include <vector>

#include "experiments/reproduce/claim.h"

namespace lexp {

struct ClaimHistory {
  std::string claim_file;        // relative to the repository, e.g. experiments/reproductions/P2_x.toml
  std::string criterion_commit;  // full hash of the last commit changing it ("" outside git)
  std::string verdict_file;      // relative to the repository; "" when the budget has none
  std::string verdict_commit;    // the build that judged it (its provenance), "" when none
  std::string verdict_added;     // full hash of the last commit changing the verdict file
};

// The history of a built-in claim in the repository `repo`, with its verdict of `budget` under
// `verdict_root` (relative to repo, as data/reproductions).
ClaimHistory HistoryOf(const Claim& claim, const std::string& repo,
                       const std::string& verdict_root, const std::string& budget);

// What breaks pre-registration in `h` (empty when nothing does): the criterion's commit also
// changes a verdict or the gallery's table; the verdict was judged by a build with uncommitted
// changes, of an unknown commit, or of a commit before the criterion; or the verdict file was
// committed before its criterion.
std::vector<std::string> PreregistrationProblems(const ClaimHistory& h, const std::string& repo);

// The checkout lexp was built from (where its claim files and committed verdicts live).
std::string SourceTree();

// `git -C repo ARGS...` (arguments single-quoted): its output without the trailing newline, and
// whether it exited 0.
struct GitResult {
  bool ok = false;
  std::string out;
};
GitResult Git(const std::string& repo, const std::vector<std::string>& args);

}  // namespace lexp
