// Aggregates and comparisons of per-token scores (hsm/token_scores.h). Plain C++ (hsm_core): the
// scores come from Evaluator::score_tokens; what is done with them needs no LibTorch.
#include "hsm/token_scores.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace hsm {

std::vector<int32_t> previous_occurrence_distances(const std::vector<int32_t>& window) {
  std::vector<int32_t> out;
  if (window.size() < 2) return out;
  std::map<int32_t, int64_t> last;  // token -> its latest index among the inputs so far
  for (size_t t = 0; t + 1 < window.size(); ++t) {
    last[window[t]] = static_cast<int64_t>(t);
    const auto seen = last.find(window[t + 1]);
    out.push_back(seen == last.end() ? 0 : static_cast<int32_t>(static_cast<int64_t>(t) + 1 - seen->second));
  }
  return out;
}

int distance_bucket(int32_t distance, int64_t context) {
  if (distance <= 0) return static_cast<int>(distance_bucket_labels(context).size()) - 1;
  int b = 0;
  while ((int64_t{2} << b) <= distance) ++b;  // 2^b <= distance < 2^(b+1)
  return b;
}

std::vector<std::string> distance_bucket_labels(int64_t context) {
  // A target's previous occurrence is at most `context` tokens back (the window's first input).
  std::vector<std::string> labels;
  for (int64_t lo = 1; lo <= context; lo *= 2) {
    const int64_t hi = std::min(2 * lo - 1, context);
    labels.push_back(lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi));
  }
  labels.push_back("never");
  return labels;
}

int frequency_bucket(int64_t train_count) {
  int b = 0;
  for (int64_t c = train_count; c > 0; c /= 10) ++b;
  return b;  // 0: never; 1: 1-9; 2: 10-99; …
}

std::string frequency_bucket_label(int bucket) {
  if (bucket == 0) return "0";
  int64_t lo = 1;
  for (int b = 1; b < bucket; ++b) lo *= 10;
  return std::to_string(lo) + "-" + std::to_string(lo * 10 - 1);
}

namespace {

struct Sum {
  int64_t n = 0;
  double loss = 0;
  void add(double l) {
    ++n;
    loss += l;
  }
  double mean() const { return n > 0 ? loss / static_cast<double>(n) : 0; }
};

std::vector<LossBin> bins(const std::vector<Sum>& sums, const std::vector<std::string>& labels) {
  std::vector<LossBin> out;
  for (size_t i = 0; i < sums.size(); ++i) out.push_back({labels[i], sums[i].n, sums[i].mean()});
  return out;
}

}  // namespace

TokenAggregates aggregate(const TokenScores& s) {
  const int64_t T = s.context;
  const std::vector<std::string> distance_labels = distance_bucket_labels(T);
  std::vector<Sum> position(static_cast<size_t>(T)), distance(distance_labels.size()), frequency;
  std::map<int64_t, Sum> document;
  for (const TokenScore& t : s.tokens) {
    position.at(static_cast<size_t>(t.position)).add(t.loss);
    distance[static_cast<size_t>(distance_bucket(t.distance, T))].add(t.loss);
    const auto f = static_cast<size_t>(frequency_bucket(t.train_count));
    if (frequency.size() <= f) frequency.resize(f + 1);
    frequency[f].add(t.loss);
    document[t.document].add(t.loss);
  }
  TokenAggregates a;
  std::vector<std::string> labels;
  for (int64_t p = 0; p < T; ++p) labels.push_back(std::to_string(p));
  a.by_position = bins(position, labels);
  a.by_distance = bins(distance, distance_labels);
  labels.clear();
  for (size_t f = 0; f < frequency.size(); ++f) labels.push_back(frequency_bucket_label(static_cast<int>(f)));
  a.by_frequency = bins(frequency, labels);
  for (const auto& [d, sum] : document) a.by_document.push_back({std::to_string(d), sum.n, sum.mean()});
  return a;
}

void require_same_tokenizer(const std::string& run_a, const std::string& hash_a, int64_t vocab_a,
                            const std::string& run_b, const std::string& hash_b, int64_t vocab_b) {
  if (hash_a == hash_b && vocab_a == vocab_b) return;
  auto name = [](const std::string& run, const std::string& hash, int64_t vocab) {
    return run + "/tokenizer.model (" + hash + ", vocabulary " + std::to_string(vocab) + ")";
  };
  throw std::invalid_argument("compare: the runs use different tokenizers, " + name(run_a, hash_a, vocab_a) + " and " +
                              name(run_b, hash_b, vocab_b) +
                              ": their tokens are not the same units; compare runs trained with one tokenizer");
}

Comparison compare(const TokenScores& a, const TokenScores& b, size_t top) {
  require_same_tokenizer(a.run, a.tokenizer_hash, a.vocab_size, b.run, b.tokenizer_hash, b.vocab_size);
  bool same = a.tokens.size() == b.tokens.size() && a.context == b.context;
  for (size_t i = 0; same && i < a.tokens.size(); ++i)
    same = a.tokens[i].target == b.tokens[i].target && a.tokens[i].input == b.tokens[i].input;
  if (!same)
    throw std::invalid_argument("compare: " + a.run + " and " + b.run +
                                " were scored on different windows; score both on the same data, split, "
                                "window layout and number of windows");
  Comparison c;
  c.a = aggregate(a);
  c.b = aggregate(b);
  std::map<int64_t, DocumentDifference> documents;
  std::vector<TokenDifference> tokens;
  double total = 0;
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    const TokenScore &ta = a.tokens[i], &tb = b.tokens[i];
    const double d = tb.loss - ta.loss;
    c.difference.push_back(d);
    total += d;
    DocumentDifference& doc = documents[ta.document];
    doc.document = ta.document;
    ++doc.tokens;
    doc.loss_a += ta.loss;
    doc.loss_b += tb.loss;
    tokens.push_back({i, ta.window, ta.position, ta.target, ta.loss, tb.loss, d});
  }
  if (!a.tokens.empty()) c.mean_difference = total / static_cast<double>(a.tokens.size());
  for (auto& [id, doc] : documents) {
    doc.loss_a /= static_cast<double>(doc.tokens);
    doc.loss_b /= static_cast<double>(doc.tokens);
    doc.difference = doc.loss_b - doc.loss_a;
    c.documents.push_back(doc);
  }
  std::stable_sort(
      c.documents.begin(), c.documents.end(),
      [](const DocumentDifference& x, const DocumentDifference& y) { return x.difference < y.difference; });
  // Ties keep the tokens' order (stable): the same lists on every machine.
  std::stable_sort(tokens.begin(), tokens.end(),
                   [](const TokenDifference& x, const TokenDifference& y) { return x.difference < y.difference; });
  for (size_t i = 0; i < std::min(top, tokens.size()) && tokens[i].difference < 0; ++i) c.b_better.push_back(tokens[i]);
  for (size_t i = 0; i < std::min(top, tokens.size()) && tokens[tokens.size() - 1 - i].difference > 0; ++i)
    c.a_better.push_back(tokens[tokens.size() - 1 - i]);
  return c;
}

}  // namespace hsm
