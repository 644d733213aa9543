// The synthetic tasks (hsm/tasks.h): each checked against an independent reading of its paper's
// definition, the splits' disjoint seeds, and every bad setting refused with its range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "hsm/tasks.h"
#include "tasks/task_util.h"

using namespace hsm;

namespace {

std::string refusal(const std::string& spec) {
  try {
    parse_task(spec);
  } catch (const TaskError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Tasks, RegistryHoldsEveryTaskAndSpecsRoundTrip) {
  const auto names = task_names();
  ASSERT_GE(names.size(), 6u);
  for (const char* want : {"mqar", "recall_at", "in_context_recall", "fuzzy_recall", "noisy_recall", "selective_copy",
                           "compress", "memorize", "parity", "permutation", "regbench"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const std::string& n : names) {
    const auto t = make_task(n);
    EXPECT_EQ(t->name(), n);
    EXPECT_EQ(parse_task(t->spec())->spec(), t->spec());
    EXPECT_FALSE(t->source().empty());
  }
  EXPECT_EQ(parse_task("mqar:pairs=4,context=32")->spec(), "mqar:vocab=256,pairs=4,context=32,train=100000,seed=1");
}

// Shape and the target convention of every task: targets[t] is the token to predict at t; off
// the answers it is the next input token.
TEST(Tasks, ExamplesAreWindowsWithTargetsAndAnswerMasks) {
  for (const std::string& n : task_names()) {
    const auto t = make_task(n);
    for (int64_t i = 0; i < 50; ++i) {
      const TaskExample ex = t->example(TaskSplit::kTrain, i);
      const auto T = static_cast<size_t>(t->context());
      ASSERT_EQ(ex.tokens.size(), T) << n;
      ASSERT_EQ(ex.targets.size(), T) << n;
      ASSERT_EQ(ex.mask.size(), T) << n;
      int answers = 0;
      for (size_t p = 0; p < T; ++p) {
        ASSERT_GE(ex.tokens[p], 0) << n;
        ASSERT_LT(ex.tokens[p], t->vocab_size()) << n;
        ASSERT_LT(ex.targets[p], t->vocab_size()) << n;
        answers += ex.mask[p];
        if (!ex.mask[p]) EXPECT_EQ(ex.targets[p], p + 1 < T ? ex.tokens[p + 1] : 0) << n << " at " << p;
      }
      EXPECT_GT(answers, 0) << n << " example " << i;
      const TaskExample again = t->example(TaskSplit::kTrain, i);
      EXPECT_EQ(again.tokens, ex.tokens) << n << ": not deterministic";
      EXPECT_EQ(again.mask, ex.mask) << n;
    }
  }
}

// Zoology's MQAR read independently: the first 2·pairs tokens are key, value, key, value...
// with keys in [1, V/2) and values in [V/2, V), all distinct; each key comes back once, at an
// even offset after them, and its answer is the value that followed it.
TEST(Tasks, MqarMatchesZoologysDefinition) {
  const auto t = parse_task("mqar:vocab=256,pairs=8,context=64");
  std::map<int, int> near_queries;  // offset after the pairs -> count
  for (int64_t i = 0; i < 300; ++i) {
    const TaskExample ex = t->example(TaskSplit::kTest, i);
    std::map<int32_t, int32_t> kv;
    for (int p = 0; p < 8; ++p) {
      const int32_t k = ex.tokens[2 * p], v = ex.tokens[2 * p + 1];
      EXPECT_GE(k, 1);
      EXPECT_LT(k, 128);
      EXPECT_GE(v, 128);
      EXPECT_LT(v, 256);
      EXPECT_TRUE(kv.emplace(k, v).second) << "a key twice";
      EXPECT_EQ(ex.mask[2 * p], 0);
      EXPECT_EQ(ex.mask[2 * p + 1], 0);
    }
    std::set<int32_t> values;
    for (const auto& [k, v] : kv) values.insert(v);
    EXPECT_EQ(values.size(), 8u) << "values drawn without replacement";
    std::set<int32_t> asked;
    for (int p = 16; p < 64; ++p) {
      if (!ex.mask[p]) continue;
      EXPECT_EQ((p - 16) % 2, 0) << "queries sit at even offsets";
      ASSERT_TRUE(kv.count(ex.tokens[p])) << "a query of an unseen key";
      EXPECT_EQ(ex.targets[p], kv[ex.tokens[p]]);
      EXPECT_TRUE(asked.insert(ex.tokens[p]).second) << "a key asked twice";
      ++near_queries[(p - 16) / 2];
    }
    EXPECT_EQ(asked.size(), 8u);
  }
  // The power law (a = 0.01) puts queries close to the pairs more often than far.
  EXPECT_GT(near_queries[0], near_queries[23]);
}

TEST(Tasks, SplitsShareNoSeedAndNoExample) {
  const auto t = parse_task("mqar:vocab=64,pairs=2,context=16");  // a small space: collisions would show
  std::set<std::vector<int32_t>> train;
  for (int64_t i = 0; i < 3000; ++i) train.insert(t->example(TaskSplit::kTrain, i).tokens);
  int shared = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    shared += train.count(t->example(TaskSplit::kTest, i).tokens) > 0;
    shared += train.count(t->example(TaskSplit::kValidation, i).tokens) > 0;
  }
  EXPECT_EQ(shared, 0);
  // Same index, other split: another example (the stream differs, not only the order).
  EXPECT_NE(t->example(TaskSplit::kTrain, 5).tokens, t->example(TaskSplit::kTest, 5).tokens);
  // The data seed changes every example.
  const auto other = parse_task("mqar:vocab=64,pairs=2,context=16,seed=2");
  EXPECT_NE(t->example(TaskSplit::kTrain, 0).tokens, other->example(TaskSplit::kTrain, 0).tokens);
}

TEST(Tasks, RecallAtAsksForTheValueAtTheGivenDistance) {
  const auto t = parse_task("recall_at:vocab=32,context=40,min_distance=5,max_distance=9");
  std::set<int64_t> seen;
  for (int64_t i = 0; i < 200; ++i) {
    const TaskExample ex = t->example(TaskSplit::kTrain, i);
    const size_t q = 39;
    ASSERT_EQ(ex.mask[q], 1);
    const int64_t d = ex.difficulty;
    ASSERT_GE(d, 5);
    ASSERT_LE(d, 9);
    seen.insert(d);
    EXPECT_EQ(ex.tokens[q - d], ex.tokens[q]);
    EXPECT_EQ(ex.targets[q], ex.tokens[q - d + 1]);
    for (size_t p = 0; p < q; ++p)
      if (p != q - d) EXPECT_NE(ex.tokens[p], ex.tokens[q]) << "the key only where it is asked";
  }
  EXPECT_EQ(seen.size(), 5u);
}

// MAD's in-context recall (multi_query): every answer is the value that followed the same key
// the last time; noisy recall adds noise tokens (from the top of the vocabulary) that are never
// answers.
TEST(Tasks, InContextRecallAnswersRepeatTheKeysValue) {
  for (const char* spec : {"in_context_recall", "noisy_recall:noise=40"}) {
    const auto t = parse_task(spec);
    const int64_t noise_from = std::string(spec) == "in_context_recall" ? t->vocab_size() : 32 - 16;
    int noise_seen = 0;
    for (int64_t i = 0; i < 50; ++i) {
      const TaskExample ex = t->example(TaskSplit::kTrain, i);
      std::map<int32_t, int32_t> last;
      int answers = 0;
      for (size_t p = 0; p + 1 < ex.tokens.size(); ++p) {
        if (ex.tokens[p] >= noise_from) ++noise_seen;
        if (ex.mask[p]) {
          ++answers;
          ASSERT_TRUE(last.count(ex.tokens[p])) << spec;
          EXPECT_EQ(ex.targets[p], last[ex.tokens[p]]) << spec;
        }
        last[ex.tokens[p]] = ex.tokens[p + 1];
      }
      EXPECT_GT(answers, 3) << spec;
    }
    if (noise_from < t->vocab_size()) EXPECT_GT(noise_seen, 100);
  }
}

TEST(Tasks, SelectiveCopyAsksForTheScatteredTokensInOrder) {
  const auto t = parse_task("selective_copy:vocab=16,context=64,copy=8");
  for (int64_t i = 0; i < 50; ++i) {
    const TaskExample ex = t->example(TaskSplit::kTrain, i);
    std::vector<int32_t> kept, asked;
    size_t p = 0;
    for (; ex.tokens[p] != 15; ++p)
      if (ex.tokens[p] != 14) kept.push_back(ex.tokens[p]);
    for (; p < ex.tokens.size(); ++p)
      if (ex.mask[p]) asked.push_back(ex.targets[p]);
    EXPECT_EQ(kept.size(), 8u);
    EXPECT_EQ(asked, kept);
  }
}

TEST(Tasks, MemorizeKeepsOneMapAcrossExamplesAndSplits) {
  const auto t = parse_task("memorize:vocab=64,context=32");
  std::map<int32_t, int32_t> facts;
  for (TaskSplit s : {TaskSplit::kTrain, TaskSplit::kTest})
    for (int64_t i = 0; i < 100; ++i) {
      const TaskExample ex = t->example(s, i);
      for (size_t p = 1; p < ex.tokens.size(); p += 2) {
        ASSERT_EQ(ex.mask[p], 1);
        EXPECT_EQ(ex.tokens[p], 63) << "the insert token";
        const auto [it, added] = facts.emplace(ex.tokens[p - 1], ex.targets[p]);
        EXPECT_EQ(it->second, ex.targets[p]) << "key " << ex.tokens[p - 1] << " has two values";
      }
    }
  EXPECT_GT(facts.size(), 25u);
}

TEST(Tasks, FuzzyRecallTestKeysHaveTheLargestSize) {
  const auto t = parse_task("fuzzy_recall");
  for (int64_t i = 0; i < 20; ++i) {
    const TaskExample ex = t->example(TaskSplit::kTest, i);
    // The last run of answers is the probe's value, asked from its key's last token on: that
    // token and the two before it are the key (keys are the lower half of the vocabulary).
    size_t end = ex.tokens.size();
    while (!ex.mask[end - 1]) --end;
    size_t start = end - 1;
    while (start > 0 && ex.mask[start - 1]) --start;
    for (size_t p = start - 2; p <= start; ++p) EXPECT_LT(ex.tokens[p], 7) << "a test key of 3 tokens";
    EXPECT_GE(ex.targets[start], 7) << "then its value";
  }
}

TEST(Tasks, BadSettingsAreRefusedWithTheirRange) {
  EXPECT_NE(refusal("nosuch").find("unknown task 'nosuch'; use one of mqar"), std::string::npos);
  EXPECT_NE(refusal("mqar:colour=3").find("no setting 'colour'"), std::string::npos);
  EXPECT_NE(refusal("mqar:pairs=x").find("pairs='x' is not a whole number"), std::string::npos);
  EXPECT_NE(refusal("mqar:pairs").find("not key=value"), std::string::npos);
  EXPECT_NE(refusal("mqar:pairs=0").find("use pairs 1 to 4096"), std::string::npos);
  // More pairs than the context holds, a vocabulary too small for the pairs: never clamped.
  EXPECT_NE(refusal("mqar:pairs=40,context=64").find("pairs=40 needs context >= 4 x pairs (160); use pairs 1 to 16"),
            std::string::npos);
  EXPECT_NE(refusal("mqar:vocab=40,pairs=16,context=64").find("vocab=40"), std::string::npos);
  EXPECT_NE(refusal("mqar:vocab=70,pairs=40,context=160").find("use vocab 161 to 65536"), std::string::npos);
  EXPECT_NE(refusal("mqar:context=63").find("must be even"), std::string::npos);
  EXPECT_NE(refusal("recall_at:context=32,max_distance=40").find("use max_distance 2 to 31"), std::string::npos);
  EXPECT_NE(refusal("selective_copy:context=32,copy=16").find("use copy 1 to 15"), std::string::npos);
  EXPECT_NE(refusal("noisy_recall:vocab=20,noise_vocab=19").find("use noise_vocab 1 to 18"), std::string::npos);
  for (const char* ok : {"mqar", "mqar:pairs=16,context=64", "recall_at:max_distance=63"}) EXPECT_EQ(refusal(ok), "");
}

// Every token of every task's example has the task's own name: keys "k", values "v", the
// special tokens by what they are; every label is of one kind of token, so a key is never
// shown as a value.
TEST(Tasks, TokenLabelsNameWhatEachTokenIs) {
  const auto mqar = parse_task("mqar:vocab=64,pairs=4,context=32");
  EXPECT_EQ(mqar->token_label(12), "k12");
  EXPECT_EQ(mqar->token_label(32 + 7), "v7");
  EXPECT_EQ(mqar->token_label(64), "#64");
  const TaskExample ex = mqar->example(TaskSplit::kTest, 0);
  for (size_t t = 0; t < ex.mask.size(); ++t)
    if (ex.mask[t]) {
      EXPECT_EQ(mqar->token_label(ex.tokens[t]).front(), 'k');   // a query is a key
      EXPECT_EQ(mqar->token_label(ex.targets[t]).front(), 'v');  // its answer a value
    }
  const auto copy = parse_task("selective_copy:vocab=16,context=64,copy=4");
  EXPECT_EQ(copy->token_label(14), "_");
  EXPECT_EQ(copy->token_label(15), "copy");
  EXPECT_EQ(copy->token_label(3), "t3");
  EXPECT_EQ(parse_task("compress")->token_label(15), "zip");
  EXPECT_EQ(parse_task("fuzzy_recall")->token_label(15), "pad");
  EXPECT_EQ(parse_task("memorize")->token_label(255), "ins");
  EXPECT_EQ(parse_task("noisy_recall")->token_label(16), "n0");  // vocab 32, 16 noise tokens
  EXPECT_EQ(parse_task("noisy_recall")->token_label(8), "v0");
  for (const std::string& name : task_names()) {
    const auto task = make_task(name);
    std::set<std::string> seen;
    for (int32_t id = 0; id < task->vocab_size(); ++id)
      EXPECT_TRUE(seen.insert(task->token_label(id)).second) << name << ": two tokens labelled " << task->token_label(id);
  }
}

// A task prompt is a test example (never a training one) up to and including its last answer.
TEST(Tasks, TaskPromptIsATestExampleUpToItsLastAnswer) {
  const auto task = parse_task("mqar:vocab=64,pairs=4,context=32");
  std::set<std::vector<int32_t>> training;
  for (int64_t i = 0; i < 2000; ++i) training.insert(task->example(TaskSplit::kTrain, i).tokens);
  for (int64_t i = 0; i < 20; ++i) {
    const TaskPrompt p = task_prompt(*task, i);
    const TaskExample ex = task->example(TaskSplit::kTest, i);
    ASSERT_FALSE(p.answers.empty());
    const auto last = static_cast<size_t>(p.answers.back());
    EXPECT_EQ(p.tokens, std::vector<int32_t>(ex.tokens.begin(), ex.tokens.begin() + static_cast<long>(last) + 1));
    EXPECT_EQ(p.targets, std::vector<int32_t>(ex.targets.begin(), ex.targets.begin() + static_cast<long>(last) + 1));
    for (size_t t = 0; t <= last; ++t)
      EXPECT_EQ(std::count(p.answers.begin(), p.answers.end(), static_cast<int64_t>(t)), ex.mask[t]) << t;
    EXPECT_EQ(p.labels.size(), p.tokens.size());
    EXPECT_EQ(p.labels[0], task->token_label(p.tokens[0]));
    EXPECT_EQ(training.count(ex.tokens), 0u) << "test example " << i << " is a training example";
    EXPECT_EQ(p.task, task->spec());
    EXPECT_EQ(p.right(), 0);  // nothing predicted yet
  }
  EXPECT_THROW(task_prompt(*task, -1), TaskError);
}

// Parity read independently: the bits are the word, each answer is the sum of the bits so far
// mod 2, and a test word is four times a training one (the length-generalisation split).
TEST(Tasks, ParityAnswersAreTheRunningParityAndTestWordsAreFourTimesLonger) {
  const auto t = parse_task("parity:length=8,test_length=32,context=32");
  for (const auto split : {TaskSplit::kTrain, TaskSplit::kValidation, TaskSplit::kTest}) {
    const int64_t n = split == TaskSplit::kTest ? 32 : 8;
    int ones_seen = 0;
    for (int64_t i = 0; i < 40; ++i) {
      const TaskExample ex = t->example(split, i);
      int sum = 0;
      for (size_t p = 0; p < ex.tokens.size(); ++p) {
        if (static_cast<int64_t>(p) < n) {
          ASSERT_TRUE(ex.tokens[p] == 0 || ex.tokens[p] == 1) << "a bit at " << p;
          sum += ex.tokens[p];
          ones_seen += ex.tokens[p];
          EXPECT_EQ(ex.mask[p], 1);
          EXPECT_EQ(ex.targets[p], sum % 2) << "example " << i << " position " << p;
        } else {
          EXPECT_EQ(ex.tokens[p], 2) << "padding after the word";
          EXPECT_EQ(ex.mask[p], 0);
        }
      }
      EXPECT_EQ(ex.difficulty, n);
    }
    EXPECT_GT(ones_seen, 40 * n / 4) << "the bits are not drawn evenly";
  }
  EXPECT_EQ(t->token_label(2), "pad");
  EXPECT_THROW(parse_task("parity:test_length=100,context=64"), TaskError);
}

namespace {
// S_n (or A_n) listed independently of the task: every n-digit string of distinct digits 0..n-1
// in increasing numeric order (which is lexicographic order), kept when even if `even_only`.
std::vector<std::vector<int>> permutations_by_counting(int n, bool even_only) {
  std::vector<std::vector<int>> out;
  int limit = 1;
  for (int i = 0; i < n; ++i) limit *= n;
  for (int code = 0; code < limit; ++code) {
    std::vector<int> digits(static_cast<size_t>(n));
    int c = code;
    for (int i = n - 1; i >= 0; --i, c /= n) digits[static_cast<size_t>(i)] = c % n;
    std::vector<bool> used(static_cast<size_t>(n), false);
    bool distinct = true;
    for (int d : digits) distinct = distinct && !used[static_cast<size_t>(d)], used[static_cast<size_t>(d)] = true;
    if (!distinct) continue;
    // Parity by counting the cycles: a permutation is even when n - cycles is even.
    std::vector<bool> seen(static_cast<size_t>(n), false);
    int cycles = 0;
    for (int s = 0; s < n; ++s) {
      if (seen[static_cast<size_t>(s)]) continue;
      ++cycles;
      for (int x = s; !seen[static_cast<size_t>(x)]; x = digits[static_cast<size_t>(x)]) seen[static_cast<size_t>(x)] = true;
    }
    if (!even_only || (n - cycles) % 2 == 0) out.push_back(digits);
  }
  return out;
}
}  // namespace

// Permutation composition read independently: the answer at t is the id of x -> g_t(...g_1(x)),
// ids in lexicographic order of the one-line notation (S5: 120, A5: 60 elements).
TEST(Tasks, PermutationAnswersAreTheCompositionSoFar) {
  for (const bool even_only : {false, true}) {
    const auto t = parse_task(std::string("permutation:length=6,test_length=24,context=24,alternating=") +
                              (even_only ? "1" : "0"));
    const auto group = permutations_by_counting(5, even_only);
    ASSERT_EQ(group.size(), even_only ? 60u : 120u);
    EXPECT_EQ(t->token_label(0), "12345");
    EXPECT_EQ(t->token_label(static_cast<int32_t>(group.size()) - 1), "54321");
    EXPECT_EQ(t->token_label(static_cast<int32_t>(group.size())), "pad");
    std::vector<int> drawn(group.size(), 0);
    for (const auto split : {TaskSplit::kTrain, TaskSplit::kTest}) {
      const size_t n = split == TaskSplit::kTest ? 24 : 6;
      for (int64_t i = 0; i < 30; ++i) {
        const TaskExample ex = t->example(split, i);
        std::vector<int> state = {0, 1, 2, 3, 4};
        for (size_t p = 0; p < ex.tokens.size(); ++p) {
          if (p >= n) {
            EXPECT_EQ(ex.tokens[p], static_cast<int32_t>(group.size()));
            EXPECT_EQ(ex.mask[p], 0);
            continue;
          }
          ASSERT_GE(ex.tokens[p], 0);
          ASSERT_LT(ex.tokens[p], static_cast<int32_t>(group.size()));
          ++drawn[static_cast<size_t>(ex.tokens[p])];
          const auto& g = group[static_cast<size_t>(ex.tokens[p])];
          std::vector<int> next(5);
          for (int x = 0; x < 5; ++x) next[static_cast<size_t>(x)] = g[static_cast<size_t>(state[static_cast<size_t>(x)])];
          state = next;
          const auto id = std::find(group.begin(), group.end(), state) - group.begin();
          ASSERT_LT(static_cast<size_t>(id), group.size()) << "the product left the group";
          EXPECT_EQ(ex.targets[p], id) << "example " << i << " position " << p;
          EXPECT_EQ(ex.mask[p], 1);
        }
        EXPECT_EQ(ex.difficulty, static_cast<int64_t>(n));
      }
    }
    EXPECT_GT(std::count_if(drawn.begin(), drawn.end(), [](int c) { return c > 0; }),
              static_cast<long>(group.size() * 3 / 4))
        << "most of the group's elements are drawn";
  }
  EXPECT_THROW(parse_task("permutation:vocab=100"), TaskError) << "S5 needs 121 tokens";
  EXPECT_NO_THROW(parse_task("permutation:vocab=61,alternating=1"));
}

// Each task's chance rate (the lab's "at chance" test) is 1 / the tokens its answers are drawn
// from: counted here from the test examples themselves, every task at its defaults and at the
// lab's difficulties, and no answer token much more common than the others (a guesser's best).
TEST(Tasks, ChanceIsOneOverTheAnswerTokensSeenInTheExamples) {
  std::vector<std::string> specs = hsm::task_names();
  for (const char* s : {"mqar:vocab=128,pairs=8,context=64", "in_context_recall:vocab=16,context=64",
                        "noisy_recall:vocab=32,context=64", "selective_copy:vocab=16,context=64,copy=8",
                        "compress:vocab=16,context=33", "memorize:vocab=128,context=32", "permutation:alternating=1",
                        "fuzzy_recall:vocab=16,context=64"})
    specs.push_back(s);
  for (const std::string& spec : specs) {
    const auto task = hsm::parse_task(spec);
    if (task->name() == "regbench") continue;  // set-valued answers: RegBenchChanceIsTheMeanLegalShare
    std::map<int32_t, int64_t> seen;
    int64_t answers = 0;
    for (int64_t i = 0; i < 600; ++i) {
      const hsm::TaskExample ex = task->example(hsm::TaskSplit::kTest, i);
      for (size_t t = 0; t < ex.mask.size(); ++t)
        if (ex.mask[t]) {
          ++seen[ex.targets[t]];
          ++answers;
        }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), task->answer_tokens()) << spec;
    EXPECT_DOUBLE_EQ(task->chance(), 1.0 / static_cast<double>(seen.size())) << spec;
    int64_t most = 0;
    for (const auto& [token, count] : seen) most = std::max(most, count);
    // Uniform answers: the commonest within 20 % of answers / tokens (plus noise: the answers of
    // one window repeat a key's value, so they are not independent draws).
    const double expected = static_cast<double>(answers) * task->chance();
    EXPECT_LT(static_cast<double>(most), 1.2 * expected + 5 * std::sqrt(expected)) << spec;
  }
}

// RegBench (Akyürek et al. 2024; docs/lab.md "regbench"), read independently of regbench.cpp: the
// example's own DFA (drawn_from) is parsed here, its words walked, its legal sets recomputed.
namespace {

struct ReadDfa {
  std::vector<std::map<int32_t, int32_t>> next;  // next[q][symbol] = state
  std::vector<int32_t> alphabet;
  int32_t separator = -1, pad = -1;
};

ReadDfa read_dfa(const hsm::TaskExample& ex) {
  const auto j = nlohmann::json::parse(ex.drawn_from);
  ReadDfa d;
  d.separator = j.at("separator").get<int32_t>();
  d.pad = j.at("pad").get<int32_t>();
  d.alphabet = j.at("dfa").at("alphabet").get<std::vector<int32_t>>();
  for (const auto& out : j.at("dfa").at("edges")) {
    d.next.emplace_back();
    for (const auto& e : out) d.next.back()[e.at(0).get<int32_t>()] = e.at(1).get<int32_t>();
  }
  return d;
}

// The legal next symbols after tokens[0..t], walking from state 0 again at every separator.
std::vector<int32_t> legal_after(const ReadDfa& d, const std::vector<int32_t>& tokens, size_t t) {
  int32_t q = 0;
  for (size_t i = 0; i <= t; ++i) q = tokens[i] == d.separator ? 0 : d.next.at(static_cast<size_t>(q)).at(tokens[i]);
  std::vector<int32_t> out;
  for (const auto& [symbol, to] : d.next[static_cast<size_t>(q)]) out.push_back(symbol);
  return out;
}

}  // namespace

TEST(Tasks, RegBenchIsDeterministicWithItsSetsAndDfa) {
  const auto task = parse_task("regbench");
  for (int64_t i = 0; i < 20; ++i) {
    const TaskExample a = task->example(TaskSplit::kTest, i), b = task->example(TaskSplit::kTest, i);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.targets, b.targets);
    EXPECT_EQ(a.accepted, b.accepted);
    EXPECT_EQ(a.drawn_from, b.drawn_from);
    EXPECT_NE(a.drawn_from, task->example(TaskSplit::kValidation, i).drawn_from) << "the splits draw other DFAs";
    EXPECT_NE(a.drawn_from, task->example(TaskSplit::kTest, i + 1).drawn_from) << "each example its own DFA";
  }
  auto other = parse_task("regbench:seed=2");
  EXPECT_NE(other->example(TaskSplit::kTest, 0).drawn_from, task->example(TaskSplit::kTest, 0).drawn_from);
}

// The reference's draws: 4..12 states, 4..18 symbols, 1..3 edges per state on distinct symbols
// to distinct other states; 10..19 words of 1..49 symbols each walked from state 0.
TEST(Tasks, RegBenchWordsAreAcceptedByTheirDfa) {
  const auto task = parse_task("regbench:context=1024");  // long enough for every word of most examples
  std::set<size_t> state_counts, alphabet_sizes, edge_counts, word_counts;
  int64_t whole = 0;
  for (int64_t i = 0; i < 300; ++i) {
    const TaskExample ex = task->example(TaskSplit::kTrain, i);
    const ReadDfa d = read_dfa(ex);
    ASSERT_EQ(d.separator, 18);
    ASSERT_EQ(d.pad, 19);
    state_counts.insert(d.next.size());
    alphabet_sizes.insert(d.alphabet.size());
    const std::set<int32_t> alphabet(d.alphabet.begin(), d.alphabet.end());
    for (size_t q = 0; q < d.next.size(); ++q) {
      edge_counts.insert(d.next[q].size());
      std::set<int32_t> to;
      for (const auto& [symbol, next] : d.next[q]) {
        EXPECT_TRUE(alphabet.count(symbol)) << "an edge on a symbol outside the alphabet";
        EXPECT_NE(next, static_cast<int32_t>(q)) << "a self-loop";
        ASSERT_LT(next, static_cast<int32_t>(d.next.size()));
        to.insert(next);
      }
      EXPECT_EQ(to.size(), d.next[q].size()) << "two edges of a state to one state";
    }
    // Walk every word from state 0: each symbol must have an edge (every state accepts).
    size_t words = 1, length = 0, end = ex.tokens.size();
    while (end > 0 && ex.tokens[end - 1] == d.pad) --end;
    int32_t q = 0;
    for (size_t t = 0; t < end; ++t) {
      if (ex.tokens[t] == d.separator) {
        EXPECT_GE(length, 1u) << "an empty word at " << t;
        EXPECT_LE(length, 49u);
        ++words;
        length = 0;
        q = 0;
        continue;
      }
      const auto& out = d.next[static_cast<size_t>(q)];
      const auto e = out.find(ex.tokens[t]);
      ASSERT_NE(e, out.end()) << "example " << i << ": symbol " << ex.tokens[t] << " at " << t << " leaves state " << q
                              << " by no edge";
      q = e->second;
      ++length;
    }
    if (end < ex.tokens.size()) {  // not cut by the window: every word is there
      ++whole;
      word_counts.insert(words);
      EXPECT_LE(length, 49u);
    }
    for (size_t t = end; t < ex.tokens.size(); ++t) EXPECT_EQ(ex.tokens[t], d.pad);
  }
  EXPECT_EQ(*state_counts.begin(), 4u);
  EXPECT_EQ(*state_counts.rbegin(), 12u);
  EXPECT_EQ(*alphabet_sizes.begin(), 4u);
  EXPECT_EQ(*alphabet_sizes.rbegin(), 18u);
  EXPECT_EQ(edge_counts, (std::set<size_t>{1, 2, 3}));
  ASSERT_GT(whole, 100);
  EXPECT_GE(*word_counts.begin(), 10u);
  EXPECT_LE(*word_counts.rbegin(), 19u);
}

// A hand-built DFA over a (0), b (1), c (2); separator 3, pad 4:
//   0 -a-> 1, 0 -b-> 2;  1 -c-> 0;  2 -a-> 1, 2 -c-> 2 (a self-loop is allowed here).
// Stream "a c b | b c a c |" cut to 9, then padding.
TEST(Tasks, RegBenchLegalSetsOnAHandBuiltDfa) {
  const tasks::DfaEdges edges = {{{0, 1}, {1, 2}}, {{2, 0}}, {{0, 1}, {2, 2}}};
  const std::vector<int32_t> seq = {0, 2, 1, 3, 1, 2, 0, 2, 3};
  TaskExample ex;
  ex.tokens.assign(12, -1);
  ex.targets.assign(12, -1);
  ex.mask.assign(12, 9);
  tasks::dfa_answers(edges, 3, 4, seq, ex);
  EXPECT_EQ(ex.tokens, (std::vector<int32_t>{0, 2, 1, 3, 1, 2, 0, 2, 3, 4, 4, 4}));
  // After: a -> state 1 {c}; c -> 0 {a,b}; b -> 2, next is '|': not scored; '|' -> 0 {a,b};
  // b -> 2 {a,c}; c -> 2 {a,c}; a -> 1 {c}; c -> 0, next '|': not scored; '|' last: nothing next.
  EXPECT_EQ(ex.mask, (std::vector<uint8_t>{1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0}));
  const std::vector<std::vector<int32_t>> want = {{2}, {0, 1}, {}, {0, 1}, {0, 2}, {0, 2}, {2}, {}, {}, {}, {}, {}};
  EXPECT_EQ(ex.accepted, want);
  for (size_t t = 0; t < 12; ++t)
    if (ex.mask[t]) EXPECT_EQ(ex.targets[t], seq[t + 1]) << t;
  // A symbol the DFA does not allow is refused, not scored.
  TaskExample bad = ex;
  EXPECT_THROW(tasks::dfa_answers(edges, 3, 4, {0, 0}, bad), TaskError);
}

// The scorer's rule (TaskExample::right_answer, which TaskData::score and TaskPrompt::right use):
// any symbol the DFA allows next is right, the one drawn or another; any other token is wrong,
// the separator included. Other tasks keep exact match.
TEST(Tasks, RegBenchScoresEveryLegalSymbolAndNoOther) {
  const auto task = parse_task("regbench");
  int64_t legal_not_drawn = 0;
  for (int64_t i = 0; i < 20; ++i) {
    const TaskExample ex = task->example(TaskSplit::kTest, i);
    for (size_t t = 0; t < ex.mask.size(); ++t) {
      if (!ex.mask[t]) continue;
      const auto& set = ex.accepted[t];
      ASSERT_FALSE(set.empty());
      EXPECT_TRUE(ex.right_answer(t, ex.targets[t]));
      for (int32_t tok = 0; tok < task->vocab_size(); ++tok) {
        const bool legal = std::find(set.begin(), set.end(), tok) != set.end();
        EXPECT_EQ(ex.right_answer(t, tok), legal) << "token " << tok << " at " << t;
        legal_not_drawn += legal && tok != ex.targets[t];
      }
      EXPECT_FALSE(ex.right_answer(t, static_cast<int32_t>(task->vocab_size() - 2))) << "the separator";
    }
  }
  EXPECT_GT(legal_not_drawn, 1000) << "most states have more than one way on";
  // TaskPrompt::right counts the same way.
  TaskPrompt p = task_prompt(*task, 0);
  ASSERT_EQ(p.accepted.size(), p.answers.size());
  size_t k = 0;
  while (k < p.accepted.size() && p.accepted[k].size() < 2) ++k;
  ASSERT_LT(k, p.accepted.size());
  const int32_t drawn = p.targets[static_cast<size_t>(p.answers[k])];
  const int32_t other = p.accepted[k][0] == drawn ? p.accepted[k][1] : p.accepted[k][0];
  p.predicted.assign(p.answers.size(), static_cast<int32_t>(task->vocab_size() - 1));  // padding: wrong everywhere
  EXPECT_EQ(p.right(), 0);
  EXPECT_FALSE(p.right_at(k));
  p.predicted[k] = other;
  EXPECT_EQ(p.right(), 1) << "a legal symbol that was not drawn";
  EXPECT_TRUE(p.right_at(k)) << "the views mark each answer by the same rule";
  p.predicted[k] = static_cast<int32_t>(task->vocab_size() - 2);
  EXPECT_FALSE(p.right_at(k)) << "the separator";
  // Exact match elsewhere: an example without sets.
  const TaskExample mq = parse_task("mqar")->example(TaskSplit::kTest, 0);
  for (size_t t = 0; t < mq.mask.size(); ++t)
    if (mq.mask[t]) {
      EXPECT_TRUE(mq.right_answer(t, mq.targets[t]));
      EXPECT_FALSE(mq.right_answer(t, mq.targets[t] + 1));
    }
}

// Causal inputs: the answer at t is the next input token, never one at or before t, and the legal
// set at t follows from tokens[0..t] alone (the same set when everything after t is cut away).
TEST(Tasks, RegBenchAnswersDependOnThePastOnly) {
  const auto task = parse_task("regbench:context=128");
  for (int64_t i = 0; i < 30; ++i) {
    const TaskExample ex = task->example(TaskSplit::kValidation, i);
    const ReadDfa d = read_dfa(ex);
    for (size_t t = 0; t < ex.mask.size(); ++t) {
      if (!ex.mask[t]) continue;
      if (t + 1 < ex.tokens.size()) EXPECT_EQ(ex.targets[t], ex.tokens[t + 1]) << "example " << i << " at " << t;
      EXPECT_EQ(ex.accepted[t], legal_after(d, ex.tokens, t)) << "example " << i << " at " << t;
      // Cut after t: what is known at t gives the same set.
      std::vector<int32_t> cut(ex.tokens.begin(), ex.tokens.begin() + static_cast<long>(t) + 1);
      cut.push_back(ex.targets[t]);
      tasks::DfaEdges edges;
      for (const auto& out : d.next) {
        edges.emplace_back(out.begin(), out.end());
      }
      TaskExample c;
      c.tokens.assign(ex.tokens.size(), 0);
      c.targets.assign(ex.tokens.size(), 0);
      c.mask.assign(ex.tokens.size(), 0);
      tasks::dfa_answers(edges, d.separator, d.pad, cut, c);
      EXPECT_EQ(c.accepted[t], ex.accepted[t]);
    }
  }
}

// Chance for set-valued answers: a uniform guess over the symbols is right with probability
// |legal| / symbols; the task's chance is its mean over the answers of test examples 0..999.
TEST(Tasks, RegBenchChanceIsTheMeanLegalShare) {
  const auto task = parse_task("regbench");
  EXPECT_EQ(task->answer_tokens(), 18);
  double sum = 0;
  int64_t answers = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const TaskExample ex = task->example(TaskSplit::kTest, i);
    const ReadDfa d = read_dfa(ex);
    for (size_t t = 0; t < ex.mask.size(); ++t)
      if (ex.mask[t]) {
        sum += static_cast<double>(legal_after(d, ex.tokens, t).size()) / 18.0;
        ++answers;
      }
  }
  EXPECT_NEAR(task->chance(), sum / static_cast<double>(answers), 1e-12);
  EXPECT_GT(task->chance(), 1.0 / 18) << "more than one symbol is often legal";
  EXPECT_LT(task->chance(), 3.0 / 18);
}

TEST(Tasks, RegBenchRefusesSettingsThatDoNotGoTogether) {
  EXPECT_NE(refusal("regbench:min_states=9,max_states=8").find("use min_states 2 to 8"), std::string::npos);
  EXPECT_NE(refusal("regbench:min_words=20").find("use min_words 1 to 19"), std::string::npos);
  EXPECT_NE(refusal("regbench:vocab=7,min_alphabet=6").find("use vocab 8 to 65536"), std::string::npos);
  EXPECT_NE(refusal("regbench:min_states=3").find("use max_edges 1 to 2"), std::string::npos);
  EXPECT_EQ(refusal("regbench:vocab=7,min_states=2,max_edges=1,context=16"), "");
}
