#include "hsm/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace hsm {

Sampler::Sampler(const SampleSettings& s, int top_alternatives)
    : settings_(s), top_alternatives_(top_alternatives), seed_(s.seed) {
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature) || s.temperature > 100)
    throw std::invalid_argument("temperature must be 0 to 100 (0 = greedy), got " + std::to_string(s.temperature));
  if (!(s.top_p > 0 && s.top_p <= 1))
    throw std::invalid_argument("top-p must be in (0, 1], got " + std::to_string(s.top_p));
  if (s.top_k < 0) throw std::invalid_argument("top-k must be >= 0, got " + std::to_string(s.top_k));
  if (s.max_new_tokens < 1 || s.max_new_tokens > kMaxNewTokens)
    throw std::invalid_argument("max tokens must be 1 to " + std::to_string(kMaxNewTokens) + ", got " +
                                std::to_string(s.max_new_tokens) + " (generate a longer text in parts)");
  if (s.end_at_sentence_after < 0)
    throw std::invalid_argument("end at a sentence after must be >= 0 tokens (0 = off), got " +
                                std::to_string(s.end_at_sentence_after));
  if (seed_ == 0) seed_ = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}() ^ 1;
  rng_.seed(seed_);
}

SampledToken Sampler::sample(const float* logits, size_t n) {
  if (n == 0) throw std::invalid_argument("no logits to sample from");
  // Finite weights can still overflow in the computation (an embedding of 3e38): sampling
  // from NaN scores would print tokens that mean nothing (issue 34).
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(logits[i]))
      throw std::runtime_error("the model's next-token scores are not finite (token id " + std::to_string(i) +
                               " scores " + std::to_string(logits[i]) +
                               "): its weights overflow in computation; generate from an earlier checkpoint or "
                               "without the edit");
  // Tempered softmax; temperature 0 reports the plain (T = 1) probabilities and picks greedily.
  const double T = settings_.temperature > 0 ? settings_.temperature : 1.0;
  const float max_logit = *std::max_element(logits, logits + n);
  probs_.resize(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += probs_[i] = static_cast<float>(std::exp((logits[i] - max_logit) / T));
  for (auto& p : probs_) p = static_cast<float>(p / sum);

  // Candidates, most likely first (ties: lower id first, the order a stable sort gives). Only
  // the prefix that is needed gets sorted: the alternatives, top-k, and for top-p a prefix
  // doubled until its mass reaches p. A full sort of 5k entries cost ~0.1 ms a token, a tenth
  // of a fast decoding step.
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  const auto before = [&](int32_t a, int32_t b) { return probs_[a] > probs_[b] || (probs_[a] == probs_[b] && a < b); };
  size_t sorted = 0;
  auto sort_prefix = [&](size_t m) {  // order_[0..m) are the m most likely, in order
    m = std::min(m, n);
    if (m <= sorted) return;
    std::partial_sort(order_.begin() + static_cast<long>(sorted), order_.begin() + static_cast<long>(m), order_.end(),
                      before);
    sorted = m;
  };
  sort_prefix(static_cast<size_t>(std::max(1, top_alternatives_)));

  SampledToken out;
  for (int i = 0; i < top_alternatives_ && i < static_cast<int>(n); ++i)
    out.top.push_back({order_[i], probs_[order_[i]]});

  if (settings_.temperature == 0) {
    out.id = order_[0];
    out.prob = probs_[out.id];
    return out;
  }
  size_t keep = n;
  if (settings_.top_k > 0) keep = std::min(keep, static_cast<size_t>(settings_.top_k));
  if (settings_.top_p < 1.0) {
    // Nucleus: the smallest prefix of the sorted distribution whose mass reaches top_p.
    double mass = 0;
    size_t i = 0;
    sort_prefix(64);
    while (i < keep) {
      if (i == sorted) sort_prefix(2 * sorted);
      mass += probs_[order_[i++]];
      if (mass >= settings_.top_p) break;
    }
    keep = std::max<size_t>(1, i);
  }
  sort_prefix(keep);
  double kept_mass = 0;
  for (size_t i = 0; i < keep; ++i) kept_mass += probs_[order_[i]];
  // 53 random bits -> [0, 1): the same stream of choices on every platform for a seed.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * kept_mass;
  double acc = 0;
  out.id = order_[keep - 1];
  for (size_t i = 0; i < keep; ++i) {
    acc += probs_[order_[i]];
    if (u < acc) {
      out.id = order_[i];
      break;
    }
  }
  out.prob = probs_[out.id];
  return out;
}

}  // namespace hsm
