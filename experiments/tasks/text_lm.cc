#include "experiments/tasks/text_lm.h"

#include <algorithm>
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

struct Corpus {
  std::shared_ptr<const std::vector<int>> train, held_out;
};

// Reads the directory's record files once per process (every CreateTask of a run shares them).
Corpus LoadCorpus(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, Corpus> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(dir); it != cache.end()) return it->second;
  const std::string missing =
      "task 'text_lm' reads natural text from '" + dir +
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
    std::ifstream in(f, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string line, current;
    auto finish = [&] {
      if (current.find_first_not_of(" \n") == std::string::npos) {
        current.clear();
        return;
      }
      std::vector<int>& out = (++record % 10 == 0) ? held : train;
      for (const char c : current) out.push_back(TextLmTask::Symbol(static_cast<unsigned char>(c)));
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
  Corpus c{std::make_shared<const std::vector<int>>(std::move(train)),
           std::make_shared<const std::vector<int>>(std::move(held))};
  cache[dir] = c;
  return c;
}

}  // namespace

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

TextLmTask::TextLmTask(bool held_out) : held_out_(held_out) {
  const Corpus c = LoadCorpus(CorpusDirectory());
  stream_ = held_out ? c.held_out : c.train;
}

int TextLmTask::MaxLength() const { return static_cast<int>(stream_->size()); }

Example TextLmTask::Sample(int n, Rng& rng) const {
  LEXP_CHECK(n >= 1 && n <= MaxLength(), "text_lm: length outside the stream");
  const int64_t start = rng.UniformInt(0, static_cast<int64_t>(stream_->size()) - n);
  Example e;
  e.output.assign(stream_->begin() + start, stream_->begin() + start + n);
  e.output_scored.assign(n, 1);
  return e;
}

std::unique_ptr<Task> TextLmTask::HeldOut() const {
  return held_out_ ? nullptr : std::make_unique<TextLmTask>(true);
}

}  // namespace lexp
