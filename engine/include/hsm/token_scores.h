#pragma once
// Where a model loses (issue 40): every predicted token of an evaluation set scored on its own
// (Evaluator::score_tokens), the losses grouped by position, by distance back to the token's
// previous occurrence, by the token's frequency in the training split and by document, and two
// runs compared token by token on the same windows. Plain C++.
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/evaluator.h"

namespace hsm {

// One predicted token: window `window`'s input at `position` (0..T-1) and the token after it.
struct TokenScore {
  int64_t window = 0;
  int32_t position = 0;
  int32_t input = 0;
  int32_t target = 0;
  double loss = 0;   // −ln prob (nats)
  double prob = 0;   // the model's probability of the target
  int32_t rank = 0;  // 1 = the model's first choice (top-1 correct), 2 = second, …
  // How many tokens back the target last occurred in the window (the window's input tokens
  // before it, which the model sees): 1 = it is the current input; 0 = not in the window.
  int32_t distance = 0;
  int64_t document = 0;     // the target's document in the split (0-based, in split order)
  int64_t train_count = 0;  // how often the target occurs in the training split
};

struct TokenScores {
  // The evaluation that scored them (Evaluator::evaluate's result on the same windows: its loss
  // is the mean of the tokens' losses, summed in the evaluation's order).
  EvalResult result;
  std::string run;             // the model's run folder
  std::string tokenizer_hash;  // the run's tokenizer.model digest (Tokenizer::hash)
  int64_t vocab_size = 0;
  int64_t context = 0;
  std::vector<TokenScore> tokens;  // window-major: window 0's T tokens, then window 1's, …
};

// TokenScore::distance of each of a window's T predicted tokens: window holds T + 1 tokens (the
// inputs, then the last target); for position t, how far back from t + 1 the target
// window[t + 1] last occurred among window[0..t], 0 if it did not.
std::vector<int32_t> previous_occurrence_distances(const std::vector<int32_t>& window);

// Distance buckets: 0 → "1", 1 → "2-3", 2 → "4-7", …, powers of two; `distance` 0 (never seen
// in the window) is the bucket after the last one a context of `context` can reach.
int distance_bucket(int32_t distance, int64_t context);
std::vector<std::string> distance_bucket_labels(int64_t context);
// Training-split frequency buckets: "0", "1-9", "10-99", … (decades).
int frequency_bucket(int64_t train_count);
std::string frequency_bucket_label(int bucket);

struct LossBin {
  std::string label;
  int64_t tokens = 0;
  double mean_loss = 0;  // 0 for an empty bin
};
struct TokenAggregates {
  std::vector<LossBin> by_position;   // 0..T-1
  std::vector<LossBin> by_distance;   // distance_bucket_labels(T)
  std::vector<LossBin> by_frequency;  // up to the largest bucket present
  std::vector<LossBin> by_document;   // every document with a predicted token, in split order
};
TokenAggregates aggregate(const TokenScores& scores);

// Refuses (std::invalid_argument) two runs whose tokenizers differ, naming both.
void require_same_tokenizer(const std::string& run_a, const std::string& hash_a, int64_t vocab_a,
                            const std::string& run_b, const std::string& hash_b, int64_t vocab_b);

struct DocumentDifference {
  int64_t document = 0;
  int64_t tokens = 0;
  double loss_a = 0, loss_b = 0;  // mean losses
  double difference = 0;          // loss_b − loss_a: below 0 where B does better
};
struct TokenDifference {
  size_t index = 0;  // into the scores' tokens
  int64_t window = 0;
  int32_t position = 0;
  int32_t target = 0;
  double loss_a = 0, loss_b = 0, difference = 0;  // difference = loss_b − loss_a
};
struct Comparison {
  TokenAggregates a, b;
  std::vector<double> difference;             // per token, loss_b − loss_a
  std::vector<DocumentDifference> documents;  // by mean difference, B's best (most negative) first
  std::vector<TokenDifference> b_better;      // the `top` most negative differences, largest gain first
  std::vector<TokenDifference> a_better;      // the `top` most positive, largest first
  double mean_difference = 0;
};
// The same windows scored by two runs: refuses other tokenizers (require_same_tokenizer) and
// other windows (another target anywhere) with std::invalid_argument.
Comparison compare(const TokenScores& a, const TokenScores& b, size_t top = 20);

}  // namespace hsm
