// Pre-registration that git shows (experiments/reproduce/preregistration.h): planted histories
// in a scratch repository (a criterion and its verdict in one commit, a verdict judged by a dirty
// build or by a build before its criterion, and the order that passes), then every claim of the
// gallery whose criterion changed after this rule landed.
#include "experiments/reproduce/preregistration.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

// The commit that brought the rule in: claims whose criterion was last changed at or before it
// were judged before git had to show the order.
constexpr const char* kRuleLanded = "20993fc1021f44eba53acc604bf0ee5edc201a5d";

class PlantedHistory : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = testing::FreshTempDir("preregistration").string();
    ASSERT_TRUE(Git(repo_, {"init", "-q"}).ok);
    ASSERT_TRUE(Git(repo_, {"config", "user.email", "t@example.org"}).ok);
    ASSERT_TRUE(Git(repo_, {"config", "user.name", "t"}).ok);
  }
  void TearDown() override { fs::remove_all(repo_); }
  // Writes each file and commits them; returns the commit.
  std::string Commit(const std::vector<std::string>& files, const std::string& text) {
    for (const auto& f : files) {
      fs::create_directories((fs::path(repo_) / f).parent_path());
      std::ofstream(fs::path(repo_) / f) << text;
      EXPECT_TRUE(Git(repo_, {"add", f}).ok);
    }
    EXPECT_TRUE(Git(repo_, {"commit", "-q", "-m", text}).ok);
    return Git(repo_, {"rev-parse", "HEAD"}).out;
  }
  ClaimHistory History(const std::string& criterion, const std::string& judged_by,
                       const std::string& verdict_added) {
    ClaimHistory h;
    h.claim_file = kClaim;
    h.criterion_commit = criterion;
    h.verdict_file = kVerdict;
    h.verdict_commit = judged_by;
    h.verdict_added = verdict_added;
    return h;
  }
  static constexpr const char* kClaim = "experiments/reproductions/Z1_planted.toml";
  static constexpr const char* kVerdict = "data/reproductions/full/Z1_planted/verdict.h5";
  std::string repo_;
};

TEST_F(PlantedHistory, CriterionFirstThenAVerdictOfACleanLaterBuildPasses) {
  const std::string criterion = Commit({kClaim}, "criterion");
  const std::string code = Commit({"nn/engine.cc"}, "code after the criterion");
  const std::string verdict = Commit({kVerdict}, "verdict");
  EXPECT_TRUE(PreregistrationProblems(History(criterion, criterion.substr(0, 12), verdict), repo_)
                  .empty());
  EXPECT_TRUE(
      PreregistrationProblems(History(criterion, code.substr(0, 12), verdict), repo_).empty());
}

TEST_F(PlantedHistory, ACriterionCommittedWithItsVerdictIsRefused) {
  const std::string both = Commit({kClaim, kVerdict}, "criterion and verdict together");
  const auto problems = PreregistrationProblems(History(both, both.substr(0, 12), both), repo_);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find(fmt::format("also changes {}", kVerdict)), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("not after its criterion's commit"), std::string::npos)
      << problems[1];
}

TEST_F(PlantedHistory, AVerdictOfADirtyOrEarlierBuildIsRefused) {
  const std::string before = Commit({"nn/engine.cc"}, "code before the criterion");
  const std::string criterion = Commit({kClaim}, "criterion");
  const std::string verdict = Commit({kVerdict}, "verdict");
  auto one = [&](const std::string& judged_by) {
    const auto p = PreregistrationProblems(History(criterion, judged_by, verdict), repo_);
    return p.size() == 1 ? p[0] : fmt::format("({} problems)", p.size());
  };
  EXPECT_NE(one(criterion.substr(0, 12) + "-dirty").find("uncommitted changes"),
            std::string::npos);
  EXPECT_NE(one(before.substr(0, 12)).find("a build before (or beside) its criterion"),
            std::string::npos);
  EXPECT_NE(one("unknown").find("does not record the commit"), std::string::npos);
  EXPECT_NE(one("").find("does not record the commit"), std::string::npos);
}

TEST_F(PlantedHistory, AnUncommittedCriterionIsRefused) {
  ClaimHistory h;
  h.claim_file = kClaim;
  const auto problems = PreregistrationProblems(h, repo_);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("is not committed"), std::string::npos);
}

// Every claim whose criterion changed after the rule landed: its commit changes no verdict, and
// its full-budget verdict (when there is one) was judged by a clean build of that commit or a later
// one and committed after it.
TEST(Gallery, EveryCriterionChangedSinceTheRuleWasCommittedBeforeItsVerdict) {
  const std::string repo = SourceTree();
  ASSERT_TRUE(Git(repo, {"cat-file", "-e", std::string(kRuleLanded) + "^{commit}"}).ok)
      << repo << " lacks the commit " << kRuleLanded
      << ": the test reads the gallery's git history (a full clone, not a shallow one)";
  int checked = 0;
  for (const auto& claim : BuiltinClaims()) {
    const ClaimHistory h = HistoryOf(claim, repo, "data/reproductions", "full");
    if (!h.criterion_commit.empty() &&
        Git(repo, {"merge-base", "--is-ancestor", h.criterion_commit, kRuleLanded}).ok)
      continue;
    ++checked;
    for (const auto& p : PreregistrationProblems(h, repo)) ADD_FAILURE() << claim.id << ": " << p;
  }
  RecordProperty("claims_checked", checked);
}

}  // namespace
}  // namespace lexp
