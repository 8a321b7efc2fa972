// Task registry: recipe name -> task.
#include <string>

#include "experiments/tasks/arithmetic.h"
#include "experiments/tasks/associative_recall.h"
#include "experiments/tasks/chomsky.h"
#include "experiments/tasks/kazemnejad.h"
#include "experiments/tasks/lookback_lm.h"
#include "experiments/tasks/markov_lm.h"
#include "experiments/tasks/text_lm.h"
#include "experiments/tasks/counting.h"
#include "experiments/tasks/flip_flop.h"
#include "experiments/tasks/mqar.h"
#include "experiments/tasks/selective_copy.h"
#include "experiments/tasks/passkey.h"
#include "experiments/tasks/passkey_lm.h"
#include "experiments/tasks/ruler.h"
#include "experiments/tasks/scratchpad.h"
#include "experiments/tasks/string_tasks.h"
#include "experiments/tasks/task.h"
#include "nn/check.h"

namespace lexp {

const char* DecodingName(Decoding d) {
  return d == Decoding::kGreedy ? "greedy" : "teacher_forced";
}

const std::vector<TaskInfo>& ListTasks() {
  static const std::vector<TaskInfo> kList = {
      {"copy", "copy n random tokens from a pool of `vocab` (default 100)",
       "Kazemnejad et al. 2023 (cmc)"},
      {"reverse_string", "reverse n random bits", "Deletang et al. 2023"},
      {"duplicate_string", "write n random bits twice", "Deletang et al. 2023"},
      {"parity_check", "parity of n random bits (one output)", "Deletang et al. 2023"},
      {"associative_recall", "n key-value pairs, then each key queried; vocab default 128",
       "Arora et al. 2023 (Zoology MQAR, simplified)"},
      {"mqar",
       "n key-value pairs, then keys queried at power-law gaps in random filler; vocab "
       "default 256",
       "Arora et al. 2023 (Zoology multiquery_ar)"},
      {"counting",
       "a program of n statements over 3 variables (set, pass, increment), then print v: its "
       "value, the increments since it was set",
       "Golovneva et al. 2024 (CoPE's counting task, token form)"},
      {"flip_flop",
       "n write/read/ignore instructions with a bit each, p(ignore) = 0.8; each read's bit is the "
       "last written one, only those scored",
       "Liu et al. 2023 (FFL(0.8), training distribution)"},
      {"flip_flop_sparse", "flip_flop with p(ignore) = 0.98: long gaps between writes and reads",
       "Liu et al. 2023 (FFL(0.98), sparse test)"},
      {"flip_flop_dense", "flip_flop with p(ignore) = 0.1", "Liu et al. 2023 (FFL(0.1), dense test)"},
      {"selective_copy",
       "task.copy_tokens (default 8) tokens of `vocab` (default 16) at random places among n "
       "symbols, blanks elsewhere, copied in order; longer inputs are sparser",
       "Gu & Dao 2023 (Mamba) / Golovneva et al. 2024 (CoPE)"},
      {"markov_lm",
       "language modelling: a hidden one of 4 sparse Markov chains over `vocab` (default "
       "32) symbols, known entropy rate",
       "lexp (synthetic source with long-range structure)"},
      {"text_lm",
       "language modelling of natural text, character by character (96 symbols): Debian's "
       "fortune files (task.corpus = fortunes, every tenth record held out), the King James "
       "Bible by book (kjv) or the Python standard library by file (python; whole documents "
       "held out)",
       "lexp (real text for the language-modelling claims: ALiBi, LM-Infinite, StreamingLLM)"},
      {"lookback_lm",
       "language modelling: each token repeats the one 24 back with probability 0.8, else "
       "uniform over `vocab` (default 32); known entropy rate",
       "lexp (long-range source for the RoPE base-scaling law)"},
      {"passkey", "5-digit key hidden at a depth in n filler tokens, asked for at the end",
       "Mohtashami & Jaggi 2023 (token form)"},
      {"passkey_lm",
       "passkey as language modelling: the key hidden at a depth in n tokens of markov_lm's "
       "text (`vocab` symbols, default 32), asked for at the end; every token trained on, the "
       "answer graded",
       "LongLoRA's protocol (Chen et al. 2023): fine-tuned on text, evaluated by passkey"},
      {"passkey_lm_no_query",
       "passkey_lm without the question: the key hidden in the text, nothing asks for it (every "
       "token trained on and graded); fine-tune on it, evaluate on passkey_lm",
       "lexp (LongLoRA's text holds facts it never asks for)"},
      {"passkey_lm_text",
       "passkey_lm's sequences with only the haystack's text graded: the model's language "
       "modelling beside its retrieval (lexp eval --set task.name=passkey_lm_text)",
       "lexp (RULER's effective context against perplexity, Hsieh et al. 2024)"},
      {"niah_single_noise",
       "RULER needle in a haystack: \"NEEDLE key 4 digits\" at a depth in n random filler tokens, "
       "the value asked for by its key",
       "Hsieh et al. 2024 (RULER niah_single, token form)"},
      {"niah_single_repeat", "niah_single_noise in a haystack of one repeated token",
       "Hsieh et al. 2024 (RULER niah_single, repeated haystack, token form)"},
      {"niah_multikey", "4 needles of distinct keys in noise, one asked for (3 distractors)",
       "Hsieh et al. 2024 (RULER niah_multikey_1, token form)"},
      {"niah_multivalue", "4 needles of one key, all 4 values asked for in order of appearance",
       "Hsieh et al. 2024 (RULER niah_multivalue, token form)"},
      {"niah_multiquery", "4 needles of distinct keys, all asked for in a random order",
       "Hsieh et al. 2024 (RULER niah_multiquery, token form)"},
      {"variable_tracking",
       "a chain of 4 assignments from a value and a distractor chain in noise; the chain's 5 "
       "variables asked for by its value",
       "Hsieh et al. 2024 (RULER vt, token form, with a distractor chain)"},
      {"common_words",
       "n uncommon words and 4 common ones (2 + n/8 times each) shuffled; the 4 common words, "
       "sorted",
       "Hsieh et al. 2024 (RULER cwe, token form)"},
      {"frequent_words", "words of Zipf counts (alpha 2, C = 18 + n) shuffled; the 3 most frequent",
       "Hsieh et al. 2024 (RULER fwe, token form)"},
      {"even_pairs", "(number of unequal neighbours) mod 2 of n bits", "Deletang et al. 2023 (R)"},
      {"modular_arithmetic", "value mod 5 of d op d op ... (n, or n-1 when even)",
       "Deletang et al. 2023 (R)"},
      {"cycle_navigation", "final position on a 5-cycle after n moves left/stay/right",
       "Deletang et al. 2023 (R)"},
      {"stack_manipulation", "final stack after pushes/pops, top first, then end (n+1 outputs)",
       "Deletang et al. 2023 (DCF)"},
      {"modular_arithmetic_brackets", "value mod 5 of a bracketed expression of n symbols",
       "Deletang et al. 2023 (DCF)"},
      {"solve_equation", "the digit x hidden in 'expression = value' (n symbols)",
       "Deletang et al. 2023 (DCF)"},
      {"missing_duplicate_string", "the bit hidden in ww (n symbols)", "Deletang et al. 2023 (CS)"},
      {"odds_first", "bits at odd indices, then at even indices", "Deletang et al. 2023 (CS)"},
      {"binary_addition", "a + b little-endian, then end (n+1 outputs)",
       "Deletang et al. 2023 (CS)"},
      {"binary_multiplication", "a * b little-endian, then end (n outputs; n + 1 for n <= 2)",
       "Deletang et al. 2023 (CS)"},
      {"compute_sqrt", "floor(sqrt x) of an n-bit x, big-endian (ceil(n/2) outputs)",
       "Deletang et al. 2023 (CS)"},
      {"bucket_sort", "n symbols of 0..4 sorted", "Deletang et al. 2023 (CS)"},
      {"copy_rsc", "one token repeated n times, copied", "Kazemnejad et al. 2023 (rsc)"},
      {"copy_rsc2x", "one token repeated n times, written twice", "Kazemnejad et al. 2023 (rsc2x)"},
      {"copy_rdc", "token A n times -> token B n times", "Kazemnejad et al. 2023 (rdc)"},
      {"copy_cmc2x", "n random tokens -> src NEXT src", "Kazemnejad et al. 2023 (cmc2x)"},
      {"reverse_mc", "n random tokens reversed", "Kazemnejad et al. 2023 (mc)"},
      {"reverse_mc2x", "n random tokens -> rev NEXT rev", "Kazemnejad et al. 2023 (mc2x)"},
      {"reverse_mcrv", "n random tokens -> rev NEXT src", "Kazemnejad et al. 2023 (mcrv)"},
      {"addition", "a + b on n digits, sum on n + 1 digits (most significant first)",
       "Kazemnejad et al. 2023 (token form)"},
      {"summation", "v1 + ... + vn, answer mod 10", "Kazemnejad et al. 2023 (token form)"},
      {"addition_reversed",
       "a + b, numbers least significant digit first; n = the longer operand's digits, the other "
       "1..n; sum on n + 1 digits",
       "McLeish et al. 2024 (Abacus) format; index hints (task.index_hints) as Zhou et al. 2024"},
      {"multiplication_reversed",
       "a x b, a of n digits and b of 1..3, least significant digit first; product on n + |b| "
       "digits",
       "McLeish et al. 2024 (Abacus) format; index hints (task.index_hints) as Zhou et al. 2024"},
      {"parity", "n bits; answer 1 when the number of ones is even", "Kazemnejad et al. 2023"},
      {"sort", "n tokens of a pool of `vocab` (default 50) sorted",
       "Kazemnejad et al. 2023 (sngd)"},
      {"lego", "chain of n sign clauses, the sign of a queried variable",
       "Kazemnejad et al. 2023 / Zhang et al. 2022 (token form)"},
  };
  return kList;
}

std::unique_ptr<Task> CreateTask(const std::string& name, const TaskOptions& o) {
  LEXP_INPUT_CHECK(o.corpus.empty() || name == "text_lm",
                   "task.corpus = \"" + o.corpus + "\" chooses text_lm's text; task '" + name +
                       "' reads none (leave task.corpus empty)");
  LEXP_INPUT_CHECK(o.index_hints == 0 || name == "addition_reversed" ||
                       name == "multiplication_reversed",
                   "task.index_hints = " + std::to_string(o.index_hints) +
                       " writes hints before the digits of addition_reversed and "
                       "multiplication_reversed; task '" + name + "' has none (leave it at 0)");
  LEXP_INPUT_CHECK(!o.zero_pad || name == "addition_reversed" || name == "multiplication_reversed",
                   "task.padding = \"zeros\" pads the operands of addition_reversed and "
                   "multiplication_reversed; task '" + name + "' has none (leave it \"none\")");
  LEXP_INPUT_CHECK(o.copy_tokens == 0 || name == "selective_copy",
                   "task.copy_tokens = " + std::to_string(o.copy_tokens) +
                       " sets how many tokens selective_copy hides among blanks; task '" + name +
                       "' has none (leave it at 0)");
  LEXP_INPUT_CHECK(o.needles == 0 || name == "niah_multikey" || name == "niah_multivalue" ||
                       name == "niah_multiquery",
                   "task.needles = " + std::to_string(o.needles) +
                       " sets the needles of niah_multikey, niah_multivalue and niah_multiquery; "
                       "task '" + name + "' has none to set (leave it at 0)");
  LEXP_INPUT_CHECK(o.hops == 0 || name == "variable_tracking",
                   "task.hops = " + std::to_string(o.hops) +
                       " sets variable_tracking's chain length; task '" + name +
                       "' has none (leave it at 0)");
  if (!o.scratchpad.empty()) {
    TaskOptions plain = o;
    plain.scratchpad.clear();
    return WithScratchpad(CreateTask(name, plain), o.scratchpad);
  }
  if (name == "copy") return std::make_unique<CopyTask>(o.vocab);
  if (name == "reverse_string") return std::make_unique<ReverseStringTask>();
  if (name == "duplicate_string") return std::make_unique<DuplicateStringTask>();
  if (name == "parity_check") return std::make_unique<ParityCheckTask>();
  if (name == "associative_recall") return std::make_unique<AssociativeRecallTask>(o.vocab);
  if (name == "mqar") return std::make_unique<MultiQueryRecallTask>(o.vocab);
  if (name == "counting") return std::make_unique<CountingTask>();
  if (name == "flip_flop") return std::make_unique<FlipFlopTask>(name, 0.8);
  if (name == "flip_flop_sparse") return std::make_unique<FlipFlopTask>(name, 0.98);
  if (name == "flip_flop_dense") return std::make_unique<FlipFlopTask>(name, 0.1);
  if (name == "selective_copy") return std::make_unique<SelectiveCopyTask>(o.vocab, o.copy_tokens);
  if (name == "markov_lm") return std::make_unique<MarkovLmTask>(o.vocab);
  if (name == "lookback_lm") return std::make_unique<LookbackLmTask>(o.vocab);
  if (name == "text_lm") {
    LEXP_INPUT_CHECK(o.vocab == 0, "task 'text_lm' has a fixed alphabet (96 characters); leave "
                                   "task.vocab at 0");
    return std::make_unique<TextLmTask>(o.corpus);
  }
  if (name == "niah_single_noise" || name == "niah_single_repeat" || name == "niah_multikey" ||
      name == "niah_multivalue" || name == "niah_multiquery" || name == "variable_tracking" ||
      name == "common_words" || name == "frequent_words") {
    LEXP_INPUT_CHECK(o.vocab == 0, "task '" + name + "' has a fixed alphabet; leave task.vocab at 0");
    using K = NeedleTask::Kind;
    if (name == "niah_single_noise") return std::make_unique<NeedleTask>(name, K::kSingle, false);
    if (name == "niah_single_repeat") return std::make_unique<NeedleTask>(name, K::kSingle, true);
    if (name == "niah_multikey")
      return std::make_unique<NeedleTask>(name, K::kMultiKey, false, o.needles);
    if (name == "niah_multivalue")
      return std::make_unique<NeedleTask>(name, K::kMultiValue, false, o.needles);
    if (name == "niah_multiquery")
      return std::make_unique<NeedleTask>(name, K::kMultiQuery, false, o.needles);
    if (name == "variable_tracking") return std::make_unique<VariableTrackingTask>(o.hops);
    return std::make_unique<WordCountTask>(name == "frequent_words");
  }
  using Grading = PasskeyLmTask::Grading;
  if (name == "passkey_lm") return std::make_unique<PasskeyLmTask>(o.vocab, Grading::kAnswer);
  if (name == "passkey_lm_no_query")
    return std::make_unique<PasskeyLmTask>(o.vocab, Grading::kNoQuery);
  if (name == "passkey_lm_text") return std::make_unique<PasskeyLmTask>(o.vocab, Grading::kText);
  if (name == "passkey") {
    LEXP_INPUT_CHECK(o.vocab == 0, "task 'passkey' has a fixed alphabet; leave task.vocab at 0");
    return std::make_unique<PasskeyTask>();
  }
  if (auto t = kazemnejad::Create(name, o)) return t;
  if (auto t = arithmetic::Create(name, o)) return t;
  if (auto t = chomsky::Create(name)) {
    LEXP_INPUT_CHECK(o.vocab == 0,
                     "task '" + name + "' has a fixed alphabet; leave task.vocab at 0");
    return t;
  }
  std::string known;
  for (const auto& t : ListTasks()) known += (known.empty() ? "" : ", ") + t.name;
  FailInput("unknown task '" + name + "'; known tasks: " + known);
}

}  // namespace lexp
