// Per-token scores' grouping and comparison (issue 40, hsm/token_scores.h), on hand-made scores:
// distances back to a token's previous occurrence, their buckets, frequency buckets, documents,
// and two runs compared (tokenizers and windows checked).
#include <gtest/gtest.h>

#include <stdexcept>

#include "hsm/token_scores.h"

using namespace hsm;

TEST(TokenStats, DistanceBackToThePreviousOccurrence) {
  // window:   7 5 7 7 9 5 1  (T = 6 predicted tokens: 5 7 7 9 5 1)
  const std::vector<int32_t> d = previous_occurrence_distances({7, 5, 7, 7, 9, 5, 1});
  // 5: never before; 7: at 0, two back; 7: the current input; 9: never; 5: at 1, four back; 1: never.
  EXPECT_EQ(d, (std::vector<int32_t>{0, 2, 1, 0, 4, 0}));
  EXPECT_TRUE(previous_occurrence_distances({3}).empty());
}

TEST(TokenStats, DistanceAndFrequencyBuckets) {
  EXPECT_EQ(distance_bucket_labels(8), (std::vector<std::string>{"1", "2-3", "4-7", "8", "never"}));
  EXPECT_EQ(distance_bucket_labels(128).size(), 9u);  // 1, 2-3, …, 64-127, 128, never
  EXPECT_EQ(distance_bucket_labels(128)[6], "64-127");
  EXPECT_EQ(distance_bucket(1, 8), 0);
  EXPECT_EQ(distance_bucket(2, 8), 1);
  EXPECT_EQ(distance_bucket(3, 8), 1);
  EXPECT_EQ(distance_bucket(4, 8), 2);
  EXPECT_EQ(distance_bucket(7, 8), 2);
  EXPECT_EQ(distance_bucket(8, 8), 3);
  EXPECT_EQ(distance_bucket(0, 8), 4);  // never seen
  EXPECT_EQ(frequency_bucket(0), 0);
  EXPECT_EQ(frequency_bucket(1), 1);
  EXPECT_EQ(frequency_bucket(9), 1);
  EXPECT_EQ(frequency_bucket(10), 2);
  EXPECT_EQ(frequency_bucket(12345), 5);
  EXPECT_EQ(frequency_bucket_label(0), "0");
  EXPECT_EQ(frequency_bucket_label(3), "100-999");
}

namespace {

// Two windows of T = 4 from a hand-made token list; losses given.
TokenScores scores(const std::string& run, const std::string& hash, const std::vector<double>& losses) {
  TokenScores s;
  s.run = run;
  s.tokenizer_hash = hash;
  s.vocab_size = 50;
  s.context = 4;
  const std::vector<std::vector<int32_t>> windows = {{1, 2, 1, 2, 3}, {3, 4, 4, 0, 5}};
  size_t i = 0;
  for (size_t w = 0; w < windows.size(); ++w) {
    const auto d = previous_occurrence_distances(windows[w]);
    for (int32_t t = 0; t < 4; ++t, ++i) {
      TokenScore k;
      k.window = static_cast<int64_t>(w);
      k.position = t;
      k.input = windows[w][static_cast<size_t>(t)];
      k.target = windows[w][static_cast<size_t>(t) + 1];
      k.loss = losses[i];
      k.distance = d[static_cast<size_t>(t)];
      k.document = w == 0 ? 0 : (t < 3 ? 0 : 1);  // token 0 ends document 0 at window 1, position 2
      k.train_count = k.target * 10;
      s.tokens.push_back(k);
    }
  }
  return s;
}

}  // namespace

TEST(TokenStats, AggregatesByPositionDistanceFrequencyAndDocument) {
  const TokenScores s = scores("a", "h", {1, 2, 3, 4, 5, 6, 7, 8});
  const TokenAggregates a = aggregate(s);
  ASSERT_EQ(a.by_position.size(), 4u);
  EXPECT_DOUBLE_EQ(a.by_position[0].mean_loss, 3.0);  // 1 and 5
  EXPECT_DOUBLE_EQ(a.by_position[3].mean_loss, 6.0);  // 4 and 8
  EXPECT_EQ(a.by_position[3].tokens, 2);
  // Distances: window 0 {0, 2, 2, 0}, window 1 {0, 1, 0, 0}.
  ASSERT_EQ(a.by_distance.size(), 4u);  // 1, 2-3, 4, never
  EXPECT_EQ(a.by_distance[0].tokens, 1);
  EXPECT_DOUBLE_EQ(a.by_distance[0].mean_loss, 6.0);
  EXPECT_EQ(a.by_distance[1].tokens, 2);
  EXPECT_DOUBLE_EQ(a.by_distance[1].mean_loss, 2.5);
  EXPECT_EQ(a.by_distance[2].tokens, 0);
  EXPECT_EQ(a.by_distance[3].label, "never");
  EXPECT_EQ(a.by_distance[3].tokens, 5);
  // Train counts = target × 10: target 0 → "0"; targets 1..5 → "10-99".
  ASSERT_EQ(a.by_frequency.size(), 3u);
  EXPECT_EQ(a.by_frequency[0].tokens, 1);
  EXPECT_DOUBLE_EQ(a.by_frequency[0].mean_loss, 7.0);
  EXPECT_EQ(a.by_frequency[1].tokens, 0);
  EXPECT_EQ(a.by_frequency[2].tokens, 7);
  ASSERT_EQ(a.by_document.size(), 2u);
  EXPECT_DOUBLE_EQ(a.by_document[0].mean_loss, 4.0);  // 1..7
  EXPECT_DOUBLE_EQ(a.by_document[1].mean_loss, 8.0);
}

TEST(TokenStats, CompareRanksDocumentsAndTokensBothWays) {
  const TokenScores a = scores("a", "h", {1, 2, 3, 4, 5, 6, 7, 8});
  const TokenScores b = scores("b", "h", {1, 1, 3, 4.5, 5, 6, 7, 5});
  const Comparison c = compare(a, b, 2);
  ASSERT_EQ(c.difference.size(), 8u);
  EXPECT_DOUBLE_EQ(c.difference[1], -1.0);
  EXPECT_DOUBLE_EQ(c.mean_difference, (-1.0 + 0.5 - 3.0) / 8.0);
  ASSERT_EQ(c.documents.size(), 2u);
  EXPECT_EQ(c.documents[0].document, 1);  // B's gain of 3 on its one token
  EXPECT_DOUBLE_EQ(c.documents[0].difference, -3.0);
  EXPECT_NEAR(c.documents[1].difference, -0.5 / 7.0, 1e-12);
  ASSERT_EQ(c.b_better.size(), 2u);
  EXPECT_EQ(c.b_better[0].index, 7u);
  EXPECT_EQ(c.b_better[1].index, 1u);
  ASSERT_EQ(c.a_better.size(), 1u);  // only one token where A does better
  EXPECT_EQ(c.a_better[0].index, 3u);
  EXPECT_DOUBLE_EQ(c.a_better[0].difference, 0.5);
}

TEST(TokenStats, CompareRefusesOtherTokenizersNamingBothAndOtherWindows) {
  const TokenScores a = scores("runs/a", "aaaa1111", {1, 2, 3, 4, 5, 6, 7, 8});
  const TokenScores b = scores("runs/b", "bbbb2222", {1, 2, 3, 4, 5, 6, 7, 8});
  try {
    compare(a, b);
    FAIL() << "compared across tokenizers";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("runs/a/tokenizer.model (aaaa1111"), std::string::npos) << m;
    EXPECT_NE(m.find("runs/b/tokenizer.model (bbbb2222"), std::string::npos) << m;
  }
  TokenScores shifted = scores("runs/c", "aaaa1111", {1, 2, 3, 4, 5, 6, 7, 8});
  shifted.tokens[5].target = 9;
  EXPECT_THROW(compare(a, shifted), std::invalid_argument);
  shifted.tokens.pop_back();
  EXPECT_THROW(compare(a, shifted), std::invalid_argument);
  EXPECT_NO_THROW(compare(a, a));
}
