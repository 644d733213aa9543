#pragma once
// Choosing the next token from logits (docs/architecture.md): temperature, top-k, top-p (nucleus),
// seeded. Plain C++ on a float array, so it is tested without a model.
#include <cstdint>
#include <random>
#include <vector>

namespace hsm {

// The most tokens one generation makes: each keeps its text and its alternatives (a few hundred
// bytes), so a generation is held in memory whole; longer texts are generated in parts.
inline constexpr int kMaxNewTokens = 100000;

struct SampleSettings {
  double temperature = 0.8;  // 0 = greedy (always the most likely token)
  double top_p = 0.95;       // keep the smallest set of tokens whose probability reaches p; 1 = off
  int top_k = 0;             // keep the k most likely tokens; 0 = off
  uint64_t seed = 0;         // 0 = a fresh random seed (reported back by the generator)
  int max_new_tokens = 256;  // 1..kMaxNewTokens
  bool stop_at_end = true;   // stop at <|endoftext|> (the end of a story)
  // > 0: once this many tokens are generated, stop at the next sentence end (a '.', '!' or '?',
  // with any closing quotes, followed by a token that starts a new word), so a story shown to
  // a room does not break off mid-sentence at max_new_tokens. 0 = off.
  int end_at_sentence_after = 0;
};

struct TokenProb {
  int32_t id = 0;
  float prob = 0;  // probability under the tempered distribution, before top-k/top-p
};

struct SampledToken {
  int32_t id = 0;
  float prob = 0;
  std::vector<TokenProb> top;  // the most likely alternatives, most likely first
};

class Sampler {
 public:
  explicit Sampler(const SampleSettings& settings, int top_alternatives = 5);
  // logits: n scores for the next token. Throws std::invalid_argument for bad settings.
  SampledToken sample(const float* logits, size_t n);
  uint64_t seed() const { return seed_; }

 private:
  SampleSettings settings_;
  int top_alternatives_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<float> probs_;
  std::vector<int32_t> order_;
};

}  // namespace hsm
