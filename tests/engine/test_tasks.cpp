// The synthetic tasks (hsm/tasks.h): each checked against an independent reading of its paper's
// definition, the splits' disjoint seeds, and every bad setting refused with its range.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "hsm/tasks.h"

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
                           "compress", "memorize"})
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
