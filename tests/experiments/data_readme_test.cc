// data/README.md is the schema of a run file, checked both ways against real files: every dataset
// a run writes is documented at its path, every dataset the document lists is written by one of
// the runs below, and every dataset carries `axes` with one name per dimension.
//
// How the document is read: in the "Run file" section, a `###` heading whose first code span
// starts with "/" sets the group; tables whose header's first cell is "dataset" list datasets in
// their first cell, as code spans (`name`, `a`, `b`, or a relative `length_<n>/name`), with
// "(+ `_sd`)" adding each name's `_sd` companion. Rows starting with "attribute" are attributes.
// In a file, groups named length_<digits> stand for `length_<n>`, the groups of
// /analysis/entropy_variants for `<variant>`, and capture sites in /probe/length_<n> for `<site>`.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/replay/diagnosis.h"
#include "experiments/replay/prompt_compression.h"
#include "experiments/training/sweep.h"
#include "nn/io/hdf5.h"
#include "tests/testing/tiny_runs.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

std::string ReadDocument() {
  std::ifstream f(std::string(LEXP_SOURCE_DIR) + "/data/README.md");
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

std::vector<std::string> CodeSpans(const std::string& text) {
  std::vector<std::string> out;
  const std::regex span("`([^`]+)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), span); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1]);
  return out;
}

std::string Trim(const std::string& s) {
  const auto a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Paths of the datasets the "Run file" section documents, with the groups they sit in.
std::set<std::string> DocumentedRunFileDatasets(const std::string& doc) {
  std::set<std::string> paths;
  std::istringstream in(doc.substr(doc.find("## Run file")));
  std::string line, group;
  bool first = true, in_table = false, dataset_table = false;
  while (std::getline(in, line)) {
    if (!first && line.rfind("## ", 0) == 0) break;  // the next top-level section
    first = false;
    if (line.rfind("### ", 0) == 0) {
      group.clear();
      const auto spans = CodeSpans(line);
      if (!spans.empty() && spans[0][0] == '/') group = spans[0];
      in_table = false;
      continue;
    }
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    const std::string cell = Trim(line.substr(1, line.find('|', 1) - 1));
    if (!in_table) {  // the header row
      in_table = true;
      dataset_table = cell == "dataset" && !group.empty();
      continue;
    }
    if (!dataset_table || cell.rfind("---", 0) == 0 || cell.rfind("attribute", 0) == 0) continue;
    std::vector<std::string> names;
    for (const std::string& s : CodeSpans(cell)) {
      if (s == "_sd") {
        const size_t n = names.size();
        for (size_t i = 0; i < n; ++i) names.push_back(names[i] + "_sd");
      } else {
        names.push_back(s);
      }
    }
    for (const std::string& n : names) paths.insert(n[0] == '/' ? n : group + "/" + n);
  }
  return paths;
}

// Every dataset of a file as a documented path, after checking its `axes` against its rank.
void CollectDatasets(const h5::Group& g, const std::string& path, const std::string& file,
                     std::set<std::string>* paths) {
  static const std::regex length_group("length_[0-9]+");
  for (const auto& c : g.Children()) {
    if (g.IsGroup(c)) {
      std::string name = std::regex_match(c, length_group) ? "length_<n>" : c;
      if (path == "/analysis/entropy_variants") name = "<variant>";
      CollectDatasets(g.OpenGroup(c), path + "/" + name, file, paths);
      continue;
    }
    const std::vector<uint64_t> dims = g.Dims(c);
    if (!dims.empty()) {
      ASSERT_TRUE(g.ChildHasAttr(c, "axes")) << file << ": " << path << "/" << c << " has no axes";
      const std::string axes = g.ChildAttrString(c, "axes");
      const size_t named = std::count(axes.begin(), axes.end(), ',') + 1;
      EXPECT_EQ(named, dims.size()) << file << ": " << path << "/" << c << " axes '" << axes << "'";
    }
    if (path == "/model" || path == "/encoding") continue;  // documented as families below
    // Capture sites (probe.capture) are named layer<l>.<part> or final.ln.
    const bool site = path == "/probe/length_<n>" && c.find('.') != std::string::npos;
    paths->insert(path + "/" + (site ? "<site>" : c));
  }
}

std::set<std::string> WrittenDatasets(const std::string& file) {
  std::set<std::string> paths;
  h5::Reader r(file);
  CollectDatasets(r.root(), "", file, &paths);
  return paths;
}

TEST(DataReadme, RunFilesAndTheDocumentListTheSameDatasets) {
  const std::set<std::string> documented = DocumentedRunFileDatasets(ReadDocument());
  ASSERT_GT(documented.size(), 100u) << "the document's tables were not found";

  // nope and rope on copy (greedy decoding, every analysis, rope's rotary analysis, the JS
  // divergence against nope, a capture site), and a passkey run for the depth axis.
  const fs::path dir = testing::FreshTempDir("data_readme");
  SweepOptions so;
  so.out_dir = (dir / "copy").string();
  so.figures = false;
  RunRecipe(testing::TinyCopyRecipe(
                {"model.encodings=nope,rope", "train.steps=20", "probe.capture=layer0.attn.q"}),
            so);
  so.out_dir = (dir / "passkey").string();
  RunRecipe(testing::TinyCopyRecipe({"task.name=passkey", "task.vocab=0", "train.steps=10",
                                     "train.eval_every=5", "eval.lengths=2,8", "eval.depths=0,100",
                                     "probe.lengths=4", "train.score_input=1"}),
            so);
  {  // lexp compress, the run its own compressor
    const std::string run = (dir / "passkey" / "t5.h5").string();
    const PromptCompression pc = MeasurePromptCompression(run, run, {0, 0.5}, {});
    h5::Writer w(run, h5::Writer::Mode::kUpdate);
    WritePromptCompression(pc, w.root().CreateGroup("analysis"));
    w.Commit();
  }
  {  // lexp diagnose on the copy rope run (lengths 1..5 trained, 9 beyond)
    const std::string run = (dir / "copy" / "rope.h5").string();
    const Diagnosis d = DiagnoseRun(run, {});
    h5::Writer w(run, h5::Writer::Mode::kUpdate);
    WriteDiagnosis(d, w.root());
    w.Commit();
  }
  std::set<std::string> written;
  for (const fs::path& f : {dir / "copy" / "rope.h5", dir / "copy" / "nope.h5", dir / "passkey"}) {
    const fs::path file = f.extension() == ".h5" ? f : f / "t5.h5";
    for (const auto& p : WrittenDatasets(file.string())) written.insert(p);
  }
  for (const auto& p : written)
    EXPECT_TRUE(documented.count(p)) << p << " is not in data/README.md";
  for (const auto& p : documented)
    EXPECT_TRUE(written.count(p)) << p << " is documented, not written";

  // /model: every parameter with its shape; the fused projection is [in, out] = [C, 3C].
  h5::Reader r((dir / "copy" / "rope.h5").string());
  const h5::Group m = r.root().OpenGroup("model");
  EXPECT_EQ(m.Dims("layer0.attn.qkv.w"), (std::vector<uint64_t>{16, 48}));
  EXPECT_EQ(m.ChildAttrString("layer0.attn.qkv.w", "axes"), "in,out");
  EXPECT_EQ(m.Dims("tok_emb").size(), 2u);
  EXPECT_EQ(r.root().AttrString("format"), "lexp-run/3");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lexp
