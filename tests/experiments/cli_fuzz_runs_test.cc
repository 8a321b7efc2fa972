// The `lexp` binary as runs end: what finished runs say, linked directories never written through,
// every documented exit code (0, 1, 2, 3), dumps, figures in every format, and runs killed at many
// points while they write, after which no file looks complete that is not and --resume finishes
// the run into the files an uninterrupted run writes.
#include <gtest/gtest.h>

#include "tests/experiments/cli_fuzz_fixture.h"

namespace lexp {
namespace {

using namespace cli_fuzz_testing;

// What a run that finishes must still say (exit 0): an evaluation whose loss is not finite at a
// length (xPos with scale_base = 1 overflows at n = 128) warns and records the lengths in the
// file; LoRA adapters trained on a random model (no train.init_from) are noted.
TEST_F(CliFuzz, RunsThatFinishSayWhatTheirNumbersCannotMean) {
  const Result nan =
      Lexp(root_, {"run", "tiny.toml", "--out", "nan_eval", "--no-figures", "--set",
                   "model.encodings=xpos", "--set", "encoding_options.xpos.scale_base=1", "--set",
                   "eval.lengths=2,4,128", "--set", "probe.lengths=4"});
  EXPECT_EQ(nan.code, 0) << nan.err;
  EXPECT_NE(nan.err.find("the evaluation loss is not finite at n = 128"), std::string::npos)
      << nan.err;
  {
    h5::Reader r((root_ / "nan_eval" / "xpos.h5").string());
    EXPECT_EQ(r.root().OpenGroup("eval").AttrString("nonfinite_lengths"), "128");
  }
  const Result lora = Lexp(root_, {"run", "tiny.toml", "--out", "lora_random", "--no-figures",
                                   "--set", "train.lora_rank=2"});
  EXPECT_EQ(lora.code, 0) << lora.err;
  EXPECT_NE(lora.err.find("train.lora_rank = 2 with no train.init_from trains adapters on a "
                          "frozen random model"),
            std::string::npos)
      << lora.err;
}

// A subdirectory lexp writes inside --out that is a symbolic link (figures/, plan/, slurm/, a task
// sweep's task folder, a figure selection's folder) is refused naming it, and nothing is written
// to where it points.
TEST_F(CliFuzz, LinkedSubdirectoriesAreNeverWrittenThrough) {
  struct Case {
    std::string what, link;  // link: the subdirectory of out made a link
    std::vector<std::string> args;
  };
  const std::vector<Case> cases = {
      {"plan/ of a run", "plan", {"run", "tiny.toml", "--out", "out", "--no-figures"}},
      {"figures/ of a run", "figures", {"run", "tiny.toml", "--out", "out"}},
      {"figures/ redrawn", "figures", {"figures", "GOOD"}},
      {"a selection's figures/", "figures", {"figures", "GOOD", "--runs", "rope"}},
      {"slurm/ of a sweep", "slurm", {"slurm", "tiny.toml", "--out", "out"}},
      {"a task's folder",
       "copy",
       {"run", "tiny.toml", "--out", "out", "--no-figures", "--set",
        "task.names=copy,reverse_string"}},
  };
  for (const auto& c : cases) {
    const fs::path cwd = testing::FreshTempDir("cli_link");
    std::ofstream(cwd / "tiny.toml") << kTinyRecipe;
    fs::path out = cwd / "out";
    std::vector<std::string> args = c.args;
    for (auto& a : args)
      if (a == "GOOD") {
        fs::copy(good_.parent_path(), cwd / "good", fs::copy_options::recursive);
        fs::remove_all(cwd / "good" / "figures");
        out = cwd / "good";
        a = out.string();
      }
    fs::create_directories(out);
    fs::create_directories(cwd / "target");
    fs::create_directory_symlink(cwd / "target", out / c.link);
    const Result r = Lexp(cwd, args);
    EXPECT_EQ(r.code, 2) << c.what << "\n" << r.err;
    EXPECT_NE(r.err.find("is a symbolic link"), std::string::npos) << c.what << ": " << r.err;
    EXPECT_TRUE(fs::is_empty(cwd / "target")) << c.what << ": written through the link";
    fs::remove_all(cwd);
  }
}

// Models trained at once on threads of their own leave no HDF5 state behind: the library closes
// at exit without "HDF5: infinite loop closing library" (an ended thread's error records).
TEST_F(CliFuzz, APackedSweepExitsWithoutHdf5Complaints) {
  const Result r = Lexp(root_, {"run", "tiny.toml", "--out", "packed", "--no-figures", "--jobs",
                                "2", "--set", "model.encodings=nope,sinusoidal,alibi,rope"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("HDF5"), std::string::npos) << r.err;
}

TEST_F(CliFuzz, EveryDocumentedExitCode) {
  EXPECT_EQ(Lexp(root_, {"list", "encodings"}).code, 0);
  // 1: a model of the sweep diverged; its file says so, with the history up to the step.
  const Result diverged =
      Lexp(root_, {"run", "tiny.toml", "--out", "diverged", "--no-figures", "--set", "train.lr=10",
                   "--set", "train.weight_decay=10", "--set", "train.warmup_steps=1", "--set",
                   "model.encodings=rope,alibi"});
  EXPECT_EQ(diverged.code, 1) << diverged.err;
  {
    h5::Reader r((root_ / "diverged" / "rope.h5").string());
    EXPECT_EQ(r.root().OpenGroup("status").AttrString("state"), "diverged");
    const auto steps = r.root().OpenGroup("status").AttrInt("steps_completed");
    EXPECT_GT(steps, 0);
    EXPECT_EQ(static_cast<int64_t>(r.root().OpenGroup("train").ReadDoubles("loss").size()), steps);
  }
  EXPECT_TRUE(fs::exists(root_ / "diverged" / "alibi.h5")) << "the sweep went on";
  // 2: bad input, without a source location.
  const Result bad = Lexp(root_, {"run", "tiny.toml", "--set", "train.steps=-1"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_FALSE(std::regex_search(bad.err, kSourceLocation)) << bad.err;
  // 3: an internal error, with its location.
  const Result internal = Lexp(root_, {"internal-error-for-tests"});
  EXPECT_EQ(internal.code, 3);
  EXPECT_TRUE(std::regex_search(internal.err, kSourceLocation)) << internal.err;
  EXPECT_NE(internal.err.find("internal error"), std::string::npos);
}

// gnuplot's own messages stay in <figure>.log beside the script; the user sees lexp's lines. A
// one-task seed sweep's score table (1 x 2 cells) is drawn too (gnuplot's "with image" refused it).
// lexp dump prints a dataset with its shape, axes and units, and a group with its contents.
TEST_F(CliFuzz, DumpPrintsDatasetsWithTheirAxes) {
  const Result d = Lexp(root_, {"dump", good_.string(), "/eval/loss"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("/eval/loss  [3]"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("axes: length"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("units: nats per scored token"), std::string::npos) << d.out;
  const Result g = Lexp(root_, {"dump", good_.string(), "/status"});
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("@state = completed"), std::string::npos) << g.out;
}

// --print-recipe prints a recipe that reads back, and the files the run will write; an
// encoder-layout run with NoPE says that NoPE is order-blind there.
TEST_F(CliFuzz, PrintRecipeListsTheFilesAndReadsBack) {
  const Result r = Lexp(
      root_, {"run", "tiny.toml", "--out", "printed", "--print-recipe", "--set", "run.seeds=1,2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("printed/rope-seed2.h5"), std::string::npos) << r.out;
  EXPECT_NO_THROW(ParseRecipe(r.out, "printed recipe"));
  EXPECT_FALSE(fs::exists(root_ / "printed")) << "printing writes nothing";
  const Result enc = Lexp(root_, {"run", "tiny.toml", "--out", "encoder", "--no-figures", "--set",
                                  "model.layout=encoder", "--set", "model.encodings=nope"});
  EXPECT_EQ(enc.code, 0) << enc.err;
  EXPECT_NE(enc.out.find("order-blind"), std::string::npos) << enc.out;
}

// --format svg,pdf draws every figure in those formats too, from the same scripts.
TEST_F(CliFuzz, FiguresAreAlsoDrawnAsSvgAndPdf) {
  const Result r = Lexp(root_, {"run", "tiny.toml", "--out", "formats", "--format", "png,svg,pdf"});
  ASSERT_EQ(r.code, 0) << r.err;
  int pngs = 0;
  for (const auto& e : fs::directory_iterator(root_ / "formats" / "figures")) {
    if (e.path().extension() != ".png") continue;
    ++pngs;
    for (const char* ext : {".svg", ".pdf"}) {
      fs::path other = e.path();
      other.replace_extension(ext);
      EXPECT_TRUE(fs::exists(other) && fs::file_size(other) > 0) << other;
    }
  }
  EXPECT_GT(pngs, 3);
  const Result bad = Lexp(root_, {"figures", "formats", "--format", "jpg"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("png, svg or pdf"), std::string::npos) << bad.err;
}

// figures --runs draws a subset into its own folder, leaving the full set; an unknown name lists
// the runs there are.
TEST_F(CliFuzz, FiguresOfASubsetOfRuns) {
  ASSERT_EQ(Lexp(root_, {"run", "tiny.toml", "--out", "subset", "--no-figures", "--set",
                         "model.encodings=nope,alibi,rope"})
                .code,
            0);
  const Result r = Lexp(root_, {"figures", "subset", "--runs", "nope,rope"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream dat(root_ / "subset" / "figures" / "nope+rope" / "accuracy_vs_length.dat");
  std::stringstream text;
  text << dat.rdbuf();
  EXPECT_NE(text.str().find("# encoding nope"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("# encoding rope"), std::string::npos);
  EXPECT_EQ(text.str().find("# encoding alibi"), std::string::npos) << "not selected";
  EXPECT_FALSE(fs::exists(root_ / "subset" / "figures" / "accuracy_vs_length.png"));
  const Result bad = Lexp(root_, {"figures", "subset", "--runs", "ropey"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("its runs: alibi, nope, rope"), std::string::npos) << bad.err;
}

TEST_F(CliFuzz, GnuplotMessagesStayInTheFigureLogs) {
  const Result r = Lexp(root_, {"run", "tiny.toml", "--out", "gnuplot", "--set",
                                "model.encodings=nope,rope", "--set", "run.seeds=1,2"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* word : {"warning", "pclose", "undefined", "line "}) {
    EXPECT_EQ(r.out.find(word), std::string::npos) << word << " in: " << r.out;
    EXPECT_EQ(r.err.find(word), std::string::npos) << word << " in: " << r.err;
  }
  EXPECT_TRUE(fs::exists(root_ / "gnuplot" / "figures" / "score_table.png"));
  EXPECT_FALSE(fs::exists(root_ / "gnuplot" / "figures" / "score_table.log"))
      << "the 1 x 2 table draws without a gnuplot message";
  const Result again = Lexp(root_, {"figures", "gnuplot"});
  EXPECT_EQ(again.code, 0) << again.err << " (a sweep directory with plan/ beside the runs)";
}

TEST_F(CliFuzz, RefusesToReplaceFinishedRunsAndNeverFollowsALinkedTemporary) {
  const fs::path out = root_ / "twice";
  ASSERT_EQ(Lexp(root_, {"run", "tiny.toml", "--out", "twice", "--no-figures"}).code, 0);
  const auto written = fs::last_write_time(out / "rope.h5");
  const Result again = Lexp(root_, {"run", "tiny.toml", "--out", "twice", "--no-figures"});
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("already holds"), std::string::npos) << again.err;
  EXPECT_EQ(fs::last_write_time(out / "rope.h5"), written);
  // A link planted where the temporary goes: the link is replaced, its target left alone.
  std::ofstream(root_ / "precious") << "keep me";
  fs::create_symlink(root_ / "precious", out / "rope.h5.tmp");
  const Result over =
      Lexp(root_, {"run", "tiny.toml", "--out", "twice", "--no-figures", "--overwrite"});
  EXPECT_EQ(over.code, 0) << over.err;
  EXPECT_EQ(Slurp(root_ / "precious"), "keep me");
  EXPECT_FALSE(fs::exists(out / "rope.h5.tmp"));
}

// Killed (SIGKILL) at many points while it draws (D2), lexp figures leaves under a figure's own
// name (.png, .dat, .gp) only the whole file an uninterrupted draw writes; what it was writing is
// a temporary (*.tmp), and the next draw puts everything in place.
TEST_F(CliFuzz, KilledFiguresLeaveOnlyWholeFiles) {
  auto fresh = [&](const std::string& name) {
    fs::remove_all(root_ / name);
    fs::copy(good_.parent_path(), root_ / name, fs::copy_options::recursive);
    fs::remove_all(root_ / name / "figures");
    return root_ / name;
  };
  const fs::path reference = fresh("fig_reference");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Lexp(root_, {"figures", reference.string()}).code, 0);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto whole_name = [](const std::string& f) {
    return f.find(".tmp") == std::string::npos && f.find(".run.gp") == std::string::npos &&
           f.find(".log") == std::string::npos;
  };
  int checked = 0;
  for (int k = 1; k <= 10; ++k) {
    const fs::path dir = fresh("fig_killed" + std::to_string(k));
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<std::string> args = {"figures", dir.string()};
      std::vector<char*> argv = {const_cast<char*>(kLexp.c_str())};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      execv(kLexp.c_str(), argv.data());
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(full * k / 11.0));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    for (const auto& f : Files(dir / "figures")) {
      if (!whole_name(f)) continue;
      EXPECT_EQ(Slurp(dir / "figures" / f), Slurp(reference / "figures" / f))
          << "killed after " << k << "/11 of a draw: " << f << " is not whole";
      ++checked;
    }
    ASSERT_EQ(Lexp(root_, {"figures", dir.string()}).code, 0);
    for (const auto& f : Files(dir / "figures"))
      EXPECT_TRUE(whole_name(f) || f.find(".log") != std::string::npos) << f << " left behind";
  }
  EXPECT_GT(checked, 0) << "no kill landed after a figure was written";
}

// Killed (SIGKILL) at many points of a run: every .h5 left is readable or a temporary, none says
// "completed" without its evaluation and analysis, and --resume finishes into the files of an
// uninterrupted run.
TEST_F(CliFuzz, KilledAtAnyPointResumeFinishesTheFilesOfAnUninterruptedRun) {
  const std::vector<std::string> run = {
      "run",   "tiny.toml",     "--no-figures", "--set", "model.encodings=rope,alibi",
      "--set", "train.steps=60"};
  auto with_out = [&](const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = run;
    a.insert(a.end(), {"--out", out});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Lexp(root_, with_out("reference")).code, 0);
  const double full = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int killed_with_files = 0;
  for (int k = 1; k <= 12; ++k) {
    const std::string out = "killed" + std::to_string(k);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (chdir(root_.c_str()) != 0) _exit(127);
      std::vector<std::string> args = with_out(out);
      std::vector<char*> argv = {const_cast<char*>(kLexp.c_str())};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      execv(kLexp.c_str(), argv.data());
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(full * k / 13.0));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    for (const auto& f : Files(root_ / out)) {
      if (f.size() < 3 || f.substr(f.size() - 3) != ".h5") continue;
      ++killed_with_files;
      h5::Reader r((root_ / out / f).string());  // readable: files appear only when complete
      if (f.find(".ckpt.") != std::string::npos) continue;
      const std::string state = r.root().OpenGroup("status").AttrString("state");
      EXPECT_TRUE(state == "completed" || state == "analyzing") << f << ": " << state;
      if (state == "completed") {
        EXPECT_TRUE(r.root().OpenGroup("analysis").Has("geometry")) << f;
        EXPECT_TRUE(r.root().OpenGroup("analysis").Has("expectation")) << f;
      }
    }
    const Result resumed = Lexp(root_, with_out(out, {"--resume"}));
    ASSERT_EQ(resumed.code, 0) << resumed.err;
    // The run files, the sweep's job list (plan/) and the report page, whole.
    for (const auto& f : Files(root_ / out))
      EXPECT_TRUE(f == "rope.h5" || f == "alibi.h5" || f == ".lexp.lock" || f == "report.html" ||
                  (f.rfind("plan", 0) == 0 && f.find(".tmp") == std::string::npos))
          << out << " left " << f;
    for (const char* name : {"rope.h5", "alibi.h5"})
      testing::ExpectSameRunFiles((root_ / "reference" / name).string(),
                                  (root_ / out / name).string());
  }
  EXPECT_GT(killed_with_files, 0) << "no kill landed after a file was written";
}

}  // namespace
}  // namespace lexp
