// data/README.md documents every dataset a run file holds: a real run (rope, with every analysis)
// is walked and each dataset's name must appear in the document as `name`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "experiments/sweep.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

void CollectDatasets(const h5::Group& g, const std::string& path, std::set<std::string>* names,
                     std::set<std::string>* where) {
  for (const auto& c : g.Children()) {
    if (g.IsGroup(c)) {
      CollectDatasets(g.OpenGroup(c), path + "/" + c, names, where);
      continue;
    }
    if (path == "/model") continue;     // parameters, documented as a family (<module>.<tensor>)
    if (path == "/encoding") continue;  // one per encoding value, documented per encoding
    if (names->insert(c).second) where->insert(path + "/" + c);
  }
}

TEST(DataReadme, EveryDatasetOfARunFileIsDocumented) {
  const fs::path dir = testing::FreshTempDir("data_readme");
  RecipeConfig c = testing::TinyCopyRecipe({"model.encodings=nope,rope", "train.steps=20"});
  SweepOptions so;
  so.out_dir = dir.string();
  so.figures = false;
  RunRecipe(c, so);
  std::ifstream f(std::string(LEXP_SOURCE_DIR) + "/data/README.md");
  std::stringstream text;
  text << f.rdbuf();
  const std::string doc = text.str();
  std::set<std::string> names, where;
  h5::Reader r((dir / "rope.h5").string());
  CollectDatasets(r.root(), "", &names, &where);
  EXPECT_GT(names.size(), 40u);
  // Documented as `name`, as the tail of a documented path (`length_<n>/name`, `/probe/name`), or
  // as the `_sd` companion of a documented X ("X (+ `_sd`)").
  auto documented = [&](const std::string& name) {
    if (doc.find("`" + name + "`") != std::string::npos) return true;
    if (doc.find("/" + name + "`") != std::string::npos) return true;
    const auto sd = name.rfind("_sd");
    if (sd != std::string::npos && sd + 3 == name.size()) {
      const std::string base = name.substr(0, sd);
      for (size_t at = doc.find(base); at != std::string::npos; at = doc.find(base, at + 1)) {
        const size_t line_end = doc.find('\n', at);
        if (doc.substr(at, line_end - at).find("(+ `_sd`)") != std::string::npos) return true;
      }
    }
    return false;
  };
  for (const auto& p : where)
    EXPECT_TRUE(documented(p.substr(p.rfind('/') + 1))) << p << " is not in data/README.md";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
