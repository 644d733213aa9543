#pragma once
// What a shared Model (hsm/model.h) does with one prompt: its mixing matrices and indicators
// (docs/diagnostics.md), the logit lens and attention rollout (hsm/probe.h), its next-token
// logits. Reads the model only. Plain C++.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hsm/diagnostics.h"
#include "hsm/probe.h"

namespace hsm {

class Model;

class Prober {
 public:
  explicit Prober(std::shared_ptr<const Model> model);
  // Attention / effective mixing matrices and indicators of every layer and head for a prompt
  // (docs/diagnostics.md; deconstructing-attention.md §4.4), computed on each mixer's real
  // input LN1(h). The prompt's tokens are used as they are (no <|endoftext|> in front), cut to
  // the first `context` tokens, or max_tokens when that is smaller and > 0. Throws
  // std::invalid_argument on an empty prompt.
  Diagnosis diagnose(const std::string& prompt, int64_t max_tokens = 0) const;
  // The logit lens and attention rollout of a prompt, tokenised as diagnose() does; top_k next
  // tokens per position and layer (at least 1).
  Probe probe(const std::string& prompt, int64_t top_k = 5, int64_t max_tokens = 0) const;
  // The same for token ids as they are (say, <|endoftext|>, a prompt and what a generation
  // added: the Playground's provenance), cut to the last `context` of them.
  Probe probe_tokens(std::vector<int32_t> token_ids, int64_t top_k = 5) const;
  // Next-token logits for a token sequence (1 to context tokens), for tests and diagnostics.
  std::vector<float> logits(const std::vector<int32_t>& tokens) const;

 private:
  std::shared_ptr<const Model> model_;
};

}  // namespace hsm
