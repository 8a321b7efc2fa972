#include "experiments/reproduce/preregistration.h"

#include <fmt/core.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "experiments/reproduce/verdict_file.h"
#include "nn/check.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

std::string Quoted(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string Short(const std::string& commit) { return commit.substr(0, 12); }

// Whether `ancestor` is `descendant` or one of its ancestors.
bool IsAncestor(const std::string& repo, const std::string& ancestor,
                const std::string& descendant) {
  return Git(repo, {"merge-base", "--is-ancestor", ancestor, descendant}).ok;
}

}  // namespace

#ifndef LEXP_SOURCE_DIR
#define LEXP_SOURCE_DIR "."
#endif
std::string SourceTree() { return LEXP_SOURCE_DIR; }

GitResult Git(const std::string& repo, const std::vector<std::string>& args) {
  std::string cmd = fmt::format("git -C {}", Quoted(repo));
  for (const auto& a : args) cmd += fmt::format(" {}", Quoted(a));
  cmd += " 2>/dev/null";
  GitResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  for (size_t got; (got = fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, got);
  const int status = pclose(pipe);
  r.ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == '\r')) r.out.pop_back();
  return r;
}

ClaimHistory HistoryOf(const Claim& claim, const std::string& repo,
                       const std::string& verdict_root, const std::string& budget) {
  ClaimHistory h;
  h.claim_file = claim.file;
  const GitResult c = Git(repo, {"log", "-1", "--format=%H", "--", h.claim_file});
  if (c.ok) h.criterion_commit = c.out;
  const std::string verdict =
      (fs::path(verdict_root) / budget / (claim.id + "_" + claim.name) / "verdict.h5").string();
  if (fs::exists(fs::path(repo) / verdict)) {
    h.verdict_file = verdict;
    h.verdict_commit = ReadVerdictFile((fs::path(repo) / verdict).string()).commit;
    const GitResult v = Git(repo, {"log", "-1", "--format=%H", "--", verdict});
    if (v.ok) h.verdict_added = v.out;
  }
  return h;
}

std::vector<std::string> PreregistrationProblems(const ClaimHistory& h, const std::string& repo) {
  std::vector<std::string> problems;
  if (h.criterion_commit.empty()) {
    problems.push_back(h.claim_file + " is not committed: its criterion has no commit");
    return problems;
  }
  const GitResult touched =
      Git(repo, {"show", "--name-only", "--format=", h.criterion_commit});
  std::stringstream files(touched.out);
  for (std::string f; std::getline(files, f);)
    if (f.rfind("data/reproductions/", 0) == 0 || f == "REPRODUCTIONS.md")
      problems.push_back("the criterion's commit " + Short(h.criterion_commit) +
                         " also changes " + f + ": a criterion lands in a commit of its own");
  if (h.verdict_file.empty()) return problems;
  const std::string& v = h.verdict_commit;
  const std::string dirty = "-dirty";
  if (v.empty() || v == "unknown") {
    problems.push_back(h.verdict_file + " does not record the commit that judged it");
  } else if (v.size() > dirty.size() && v.compare(v.size() - dirty.size(), dirty.size(), dirty) == 0) {
    problems.push_back(h.verdict_file + " was judged by a build with uncommitted changes (" + v +
                       ")");
  } else if (!IsAncestor(repo, h.criterion_commit, v)) {
    problems.push_back(h.verdict_file + " was judged by " + v + ", a build before (or beside) " +
                       "its criterion's commit " + Short(h.criterion_commit) +
                       ": judge the claim again");
  }
  if (!h.verdict_added.empty() && (h.verdict_added == h.criterion_commit ||
                                   !IsAncestor(repo, h.criterion_commit, h.verdict_added)))
    problems.push_back(h.verdict_file + " was committed in " + Short(h.verdict_added) +
                       ", not after its criterion's commit " + Short(h.criterion_commit));
  return problems;
}

}  // namespace lexp
