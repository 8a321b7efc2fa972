#include "experiments/tasks/text_lm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "nn/check.h"

namespace lexp {
namespace {

namespace fs = std::filesystem;

using Documents = std::vector<std::vector<int>>;

struct Corpus {
  std::shared_ptr<const Documents> train, held_out;
};

std::vector<int> Symbols(const std::string& text) {
  std::vector<int> out;
  out.reserve(text.size());
  for (const char c : text) out.push_back(TextLmTask::Symbol(static_cast<unsigned char>(c)));
  return out;
}

std::string ReadFile(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// fortunes: records between "%" lines, every tenth held out, each part one stream.
Corpus LoadFortunes(const std::string& dir) {
  const std::string missing =
      "task 'text_lm' (task.corpus = \"fortunes\") reads natural text from '" + dir +
      "', the fortune files of Debian's package 'fortunes' (apt-get install fortunes), or from "
      "the directory in the environment variable LEXP_TEXT_CORPUS";
  std::error_code ec;
  LEXP_INPUT_CHECK(fs::is_directory(dir, ec), missing + ": no such directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension().string();
    // The package's indexes (.dat) and UTF-8 copies (.u8) beside the records; no subdirectories.
    if (e.is_regular_file() && ext != ".dat" && ext != ".u8") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<int> train, held;
  long record = 0;
  for (const auto& f : files) {
    std::stringstream text(ReadFile(f));
    std::string line, current;
    auto finish = [&] {
      if (current.find_first_not_of(" \n") == std::string::npos) {
        current.clear();
        return;
      }
      std::vector<int>& out = (++record % 10 == 0) ? held : train;
      for (const int s : Symbols(current)) out.push_back(s);
      out.push_back(TextLmTask::Symbol('\n'));
      current.clear();
    };
    while (std::getline(text, line)) {
      if (line == "%") {
        finish();
        continue;
      }
      current += line + "\n";
    }
    finish();
  }
  LEXP_INPUT_CHECK(held.size() >= 4096 && train.size() >= 4096,
                   missing + ": it holds too little text (" + std::to_string(train.size()) +
                       " training and " + std::to_string(held.size()) +
                       " held-out characters; at least 4096 of each)");
  return {std::make_shared<const Documents>(Documents{std::move(train)}),
          std::make_shared<const Documents>(Documents{std::move(held)})};
}

// Documents split into the two parts: every tenth (the 10th, 20th, ...) held out.
Corpus SplitDocuments(std::vector<std::string> texts, const std::string& what) {
  Documents train, held;
  for (size_t i = 0; i < texts.size(); ++i)
    ((i + 1) % 10 == 0 ? held : train).push_back(Symbols(texts[i]));
  LEXP_INPUT_CHECK(train.size() >= 9 && held.size() >= 1,
                   what + ": too few documents (" + std::to_string(texts.size()) + ")");
  return {std::make_shared<const Documents>(std::move(train)),
          std::make_shared<const Documents>(std::move(held))};
}

// kjv: the `bible` program's text of the whole book, one document per book (a book starts at the
// heading of its chapter 1: a line "<Book> 1" not indented).
Corpus LoadKjv() {
  const std::string missing =
      "task 'text_lm' with task.corpus = \"kjv\" reads the King James Bible through the program "
      "'bible' of Debian's package 'bible-kjv' (apt-get install bible-kjv)";
  FILE* pipe = popen("bible 'Genesis 1:1-Revelation 22:21' 2>/dev/null", "r");
  LEXP_INPUT_CHECK(pipe != nullptr, missing);
  std::string text;
  char buf[65536];
  for (size_t got; (got = fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, got);
  const int status = pclose(pipe);
  LEXP_INPUT_CHECK(status == 0 && text.size() > 4000000,
                   missing + " (it printed " + std::to_string(text.size()) + " characters)");
  std::vector<std::string> books;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const bool chapter_one = !line.empty() && line[0] != ' ' && line.size() > 2 &&
                             line.compare(line.size() - 2, 2, " 1") == 0;
    if (chapter_one || books.empty()) books.emplace_back();
    books.back() += line + "\n";
  }
  LEXP_INPUT_CHECK(books.size() == 66 || books.size() == 67,
                   missing + ": its text splits into " + std::to_string(books.size()) +
                       " books, not 66");
  if (books.size() == 67) books.erase(books.begin());  // the blank line before Genesis
  return SplitDocuments(std::move(books), missing);
}

// python: the standard library's .py files of the newest /usr/lib/python3.X with os.py, sorted by
// path; tests and installed packages left out.
Corpus LoadPython() {
  std::string dir;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("python3.", 0) != 0 || !fs::exists(e.path() / "os.py")) continue;
    auto minor = [](const std::string& n) { return std::atoi(n.c_str() + 8); };
    if (dir.empty() || minor(name) > minor(fs::path(dir).filename().string()))
      dir = e.path().string();
  }
  const std::string missing =
      "task 'text_lm' with task.corpus = \"python\" reads the Python standard library's sources "
      "in /usr/lib/python3.X of Debian's package 'libpython3.11-stdlib' (apt-get install "
      "python3)";
  LEXP_INPUT_CHECK(!dir.empty(), missing + ": no /usr/lib/python3.X/os.py");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() &&
        (name == "test" || name == "tests" || name == "idle_test" || name == "__pycache__" ||
         name == "site-packages" || name == "dist-packages")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".py") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> texts;
  for (const auto& f : files) {
    std::string t = ReadFile(f);
    if (!t.empty()) texts.push_back(std::move(t));
  }
  return SplitDocuments(std::move(texts), missing + " in " + dir);
}

// Each corpus is read once per process (every CreateTask of a run shares it).
Corpus LoadCorpus(const std::string& corpus) {
  static std::mutex mu;
  static std::map<std::string, Corpus> cache;
  const std::string key = corpus == "fortunes" ? "fortunes:" + TextLmTask::CorpusDirectory() : corpus;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Corpus c = corpus == "kjv"      ? LoadKjv()
             : corpus == "python" ? LoadPython()
                                  : LoadFortunes(TextLmTask::CorpusDirectory());
  cache[key] = c;
  return c;
}

}  // namespace

const std::vector<std::string>& TextLmTask::Corpora() {
  static const std::vector<std::string> corpora = {"fortunes", "kjv", "python"};
  return corpora;
}

std::string TextLmTask::CorpusDirectory() {
  const char* env = std::getenv("LEXP_TEXT_CORPUS");
  return env && *env ? std::string(env) : std::string("/usr/share/games/fortunes");
}

int TextLmTask::Symbol(unsigned char c) {
  if (c == '\n') return kVocab - 1;
  if (c == '\t') c = ' ';
  if (c < 32 || c > 126) c = '?';
  return c - 32;
}

char TextLmTask::Character(int symbol) {
  return symbol == kVocab - 1 ? '\n' : static_cast<char>(symbol + 32);
}

TextLmTask::TextLmTask(const std::string& corpus, bool held_out)
    : corpus_(corpus.empty() ? "fortunes" : corpus), held_out_(held_out) {
  std::string names;
  for (const auto& c : Corpora()) names += (names.empty() ? "" : ", ") + c;
  LEXP_INPUT_CHECK(std::find(Corpora().begin(), Corpora().end(), corpus_) != Corpora().end(),
                   "task.corpus = \"" + corpus_ + "\"; allowed: " + names);
  const Corpus c = LoadCorpus(corpus_);
  documents_ = held_out ? c.held_out : c.train;
}

int TextLmTask::MaxLength() const {
  size_t longest = 0;
  for (const auto& d : *documents_) longest = std::max(longest, d.size());
  return static_cast<int>(longest);
}

Example TextLmTask::Sample(int n, Rng& rng) const {
  LEXP_CHECK(n >= 1 && n <= MaxLength(), "text_lm: length outside every document");
  // A start uniform over every position of every document where n characters fit.
  int64_t starts = 0;
  for (const auto& d : *documents_)
    if (static_cast<int64_t>(d.size()) >= n) starts += static_cast<int64_t>(d.size()) - n + 1;
  int64_t k = rng.UniformInt(0, starts - 1);
  for (const auto& d : *documents_) {
    const int64_t here = static_cast<int64_t>(d.size()) >= n ? static_cast<int64_t>(d.size()) - n + 1 : 0;
    if (k >= here) {
      k -= here;
      continue;
    }
    Example e;
    e.output.assign(d.begin() + k, d.begin() + k + n);
    e.output_scored.assign(n, 1);
    return e;
  }
  LEXP_CHECK(false, "text_lm: sampling ran past the documents");
  return {};
}

std::unique_ptr<Task> TextLmTask::HeldOut() const {
  return held_out_ ? nullptr : std::make_unique<TextLmTask>(corpus_, true);
}

}  // namespace lexp
