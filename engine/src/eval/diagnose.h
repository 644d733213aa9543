#pragma once
// One path from a prompt to its diagnosis (docs/diagnostics.md), shared by Prober::diagnose and the
// trainer's diagnostics record (RUN/diagnostics.jsonl, hsm/diagnostics_log.h), so that a
// record and `hsm diagnose` on the same weights and prompt agree bit for bit.
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "hsm/diagnostics.h"
#include "hsm/diagnostics_log.h"
#include "hsm/tokenizer.h"
#include "model/model.h"

namespace hsm {

// A prompt's tokens as diagnose and probe take them: as they are (no <|endoftext|> in front),
// cut to the first `context` tokens, or max_tokens when that is smaller and > 0. Throws
// std::invalid_argument, naming `what`, for an empty prompt.
std::vector<int32_t> prompt_token_ids(const Tokenizer& tokenizer, const std::string& prompt, int64_t context,
                                      int64_t max_tokens, const char* what);
// Token ids as a [1, L] tensor on `device`.
torch::Tensor token_tensor(const std::vector<int32_t>& ids, const torch::Device& device);
// The diagnosis of token ids (the model in eval mode, on `device`), each token shown as
// label(id): a tokenizer's piece, or a task's label (Model::token_label).
Diagnosis diagnose_tokens(Gpt& model, const std::function<std::string(int32_t)>& label, const std::vector<int32_t>& ids,
                          const torch::Device& device);
// The diagnostics.jsonl record of `prompt` at `step`: diagnose_tokens' indicators, the mixer
// weights and each layer's mean logit-lens KL to the final output (the model in eval mode).
DiagnosticsRecord diagnostics_record(Gpt& model, const Tokenizer& tokenizer, const std::string& prompt, int64_t step,
                                     const torch::Device& device);

}  // namespace hsm
