#pragma once
// Causal tracing of a Gpt (hsm/trace_maps.h says what it measures): what Tracer (hsm/trace.h,
// over a loaded Model) and the trainer's trace recorder (train/trace_recorder.h, over the model
// being trained) both run, so a record made during training is what `hsm trace` gives on that
// step's weights. Reads the model only (eval mode is the caller's).
#include <torch/torch.h>

#include <functional>
#include <string>

#include "hsm/progress.h"
#include "hsm/tasks.h"
#include "hsm/trace_maps.h"
#include "model/model.h"

namespace hsm {

// How a token id is shown (Model::token_label: a tokenizer's piece, a task's label).
using TokenLabel = std::function<std::string(int32_t)>;

// Traces `request` on `model` (its config's context and vocabulary bound the prompts). Throws
// std::invalid_argument naming the problem: prompts of different lengths or none, an id outside
// the vocabulary, an answer position outside the prompt, a corruption that does not change the
// answer's log-probability (unless request.allow_no_effect). A set cancel flag: hsm::Cancelled.
Trace trace_gpt(GptImpl& model, const TraceRequest& request, const TokenLabel& label,
                const std::function<void(double)>& progress = {}, const CancelFlag* cancel = nullptr);
// Information flow routes of `tokens` into the prediction at answer_position (-1: the last),
// every edge unpruned; throws as trace_gpt does for bad prompts and positions.
Routes routes_gpt(GptImpl& model, const std::vector<int32_t>& tokens, int64_t answer_position, const TokenLabel& label);
// A task's test example `index` (hsm/tasks.h task_prompt) and its corruption: the answer is the
// example's last answer; the token it depends on — the earlier occurrence of the token at the
// answer position (MQAR's stored key) when there is one, else that token — is replaced by the
// first id after it (cyclically) that the prompt does not hold.
TraceRequest task_trace_request(const Task& task, int64_t index, int64_t vocab_size);

}  // namespace hsm
