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
#include "hsm/tasks.h"

namespace hsm {

class Model;
struct DiagnosticsRecord;  // hsm/diagnostics_log.h

class Prober {
 public:
  explicit Prober(std::shared_ptr<const Model> model);
  // Attention / effective mixing matrices and indicators of every layer and head for a prompt
  // (docs/diagnostics.md; deconstructing-attention.md §4.4), computed on each mixer's real
  // input LN1(h). The prompt's tokens are used as they are (no <|endoftext|> in front), cut to
  // the first `context` tokens, or max_tokens when that is smaller and > 0. Throws
  // std::invalid_argument on an empty prompt.
  Diagnosis diagnose(const std::string& prompt, int64_t max_tokens = 0) const;
  // The same for token ids as they are (a task example: task_prompt), each shown by
  // Model::token_label. Throws std::invalid_argument for none, more than `context` or an id
  // outside the vocabulary.
  Diagnosis diagnose_tokens(const std::vector<int32_t>& token_ids) const;
  // The logit lens and attention rollout of a prompt, tokenised as diagnose() does; top_k next
  // tokens per position and layer (at least 1).
  Probe probe(const std::string& prompt, int64_t top_k = 5, int64_t max_tokens = 0) const;
  // The same for token ids as they are (say, <|endoftext|>, a prompt and what a generation
  // added: the Playground's provenance), cut to the last `context` of them. `targets`, one per
  // token when given (a task example's TaskPrompt::targets, at most context), is what the
  // lens ranks at each position instead of the next token.
  Probe probe_tokens(std::vector<int32_t> token_ids, int64_t top_k = 5, const std::vector<int32_t>& targets = {}) const;
  // A task run's test example `index` as a prompt (hsm/tasks.h task_prompt), with the model's
  // most likely token at each answer position. Throws std::invalid_argument for a run trained
  // on a corpus.
  TaskPrompt task_prompt(int64_t index) const;
  // The record training appends to RUN/diagnostics.jsonl at a validation (hsm/diagnostics_log.h):
  // the diagnosis of `probe_text`, the learned weights and the logit lens's KL per layer, marked
  // `step`; for a run trained before the records were kept (`hsm diagnose RUN --record`). Throws
  // std::invalid_argument for a task run (it reads no text) or an empty text.
  DiagnosticsRecord diagnostics_record(const std::string& probe_text, int64_t step) const;
  // Next-token logits for a token sequence (1 to context tokens), for tests and diagnostics.
  std::vector<float> logits(const std::vector<int32_t>& tokens) const;

 private:
  std::shared_ptr<const Model> model_;
};

}  // namespace hsm
