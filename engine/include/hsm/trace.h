#pragma once
// Causal tracing (issue 51; docs/diagnostics.md, "Causal tracing"): which layer at which position
// carries what makes a model's answer right. What is asked and given (TraceRequest, TraceMap,
// Trace) and what an effect means: hsm/trace_maps.h. The work itself: eval/causal_trace.h, which
// the trainer's recorder of traces during training (issue 67) runs too.
//
// Every mixer kind is traced the same way: the sites are the block's, not the mixer's. DA's
// *_qk layers keep the corrupted run's QK stream (it is not a site). Plain C++ (no LibTorch).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsm/progress.h"
#include "hsm/routes.h"
#include "hsm/trace_maps.h"

namespace hsm {

class Model;

// The call object for causal tracing of a shared Model (as Prober is for probing). Reads the
// model only; any thread.
class Tracer {
 public:
  explicit Tracer(std::shared_ptr<const Model> model);
  // Traces `request`. progress(f) gets the fraction done; a set cancel flag stops it with
  // hsm::Cancelled. Throws std::invalid_argument naming the problem: prompts of different
  // lengths or none, an id outside the vocabulary, an answer position outside the prompt, a
  // corruption that does not change the answer's log-probability (nothing to trace).
  Trace trace(const TraceRequest& request, const std::function<void(double)>& progress = {},
              const CancelFlag* cancel = nullptr) const;
  // A text prompt and its corrupted copy, tokenised as the Probe view does (no <|endoftext|> in
  // front); they must come to the same number of tokens. Throws for a task run.
  TraceRequest text_request(const std::string& clean, const std::string& corrupt) const;
  // A task run's test example `index` (hsm/tasks.h task_prompt) and its corruption, made
  // automatically: the answer is the example's last answer, and the token it depends on is
  // replaced — the earlier occurrence of the token at the answer position (MQAR's and
  // recall_at's stored key) when there is one, else that token itself — by a token of the
  // vocabulary absent from the prompt. Throws for a corpus run.
  TraceRequest task_request(int64_t index) const;
  // Information flow routes (hsm/routes.h) of `tokens` into the prediction at answer_position
  // (-1: the last): one forward pass, every edge unpruned (prune_routes picks the routes). Throws
  // std::invalid_argument as trace() does for empty or too long prompts, bad ids and positions.
  Routes routes(const std::vector<int32_t>& tokens, int64_t answer_position = -1) const;

 private:
  std::shared_ptr<const Model> model_;
};

}  // namespace hsm
