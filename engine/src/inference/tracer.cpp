// Tracer (hsm/trace.h): causal tracing of a shared model, over eval/causal_trace.h (which the
// trainer's trace recorder runs too).
#include <stdexcept>

#include "eval/causal_trace.h"
#include "eval/diagnose.h"
#include "hsm/trace.h"
#include "inference/model_impl.h"

namespace hsm {

Tracer::Tracer(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

Trace Tracer::trace(const TraceRequest& r, const std::function<void(double)>& progress, const CancelFlag* cancel) const {
  const Model::Impl& m = model_->impl();
  return trace_gpt(*m.gpt, r, [&m](int32_t id) { return m.token_label(id); }, progress, cancel);
}

TraceRequest Tracer::text_request(const std::string& clean, const std::string& corrupt) const {
  const Model::Impl& m = model_->impl();
  TraceRequest r;
  r.clean = prompt_token_ids(m.text_tokenizer(), clean, m.config.context, 0, "trace");
  r.corrupt = prompt_token_ids(m.text_tokenizer(), corrupt, m.config.context, 0, "trace");
  return r;
}

TraceRequest Tracer::task_request(int64_t index) const {
  const Model::Impl& m = model_->impl();
  if (!m.task)
    throw std::invalid_argument(m.run_dir + " was trained on a corpus, not a task: give a prompt and its corruption");
  return task_trace_request(*m.task, index, m.config.vocab_size);
}

Routes Tracer::routes(const std::vector<int32_t>& tokens, int64_t answer_position) const {
  const Model::Impl& m = model_->impl();
  return routes_gpt(*m.gpt, tokens, answer_position, [&m](int32_t id) { return m.token_label(id); });
}

}  // namespace hsm
