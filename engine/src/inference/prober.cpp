// Prober (hsm/prober.h): diagnosis, logit lens and rollout of one prompt, read off a shared
// model (docs/diagnostics.md).
#include "hsm/prober.h"

#include "eval/diagnose.h"
#include "eval/logit_lens.h"
#include "eval/mixing_matrix.h"
#include "inference/model_impl.h"
#include "hsm/diagnostics_log.h"

namespace hsm {

Prober::Prober(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

std::vector<float> Prober::logits(const std::vector<int32_t>& tokens) const {
  const Model::Impl& m = model_->impl();
  if (tokens.empty() || static_cast<int64_t>(tokens.size()) > m.config.context)
    throw std::invalid_argument("logits() takes 1 to context tokens");
  c10::InferenceMode inference;  // lighter than NoGradGuard: no version counters or views tracked
  auto idx = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong).view({1, -1});
  auto l = m.gpt->forward(idx.to(m.device)).select(1, -1).squeeze(0).to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
}

namespace {

// Refuses ids the model cannot read, naming the call.
void check_ids(const Model::Impl& m, const std::vector<int32_t>& ids, const char* what) {
  if (ids.empty()) throw std::invalid_argument(std::string(what) + ": no tokens to look at");
  for (int32_t id : ids)
    if (id < 0 || id >= m.config.vocab_size)
      throw std::invalid_argument(std::string(what) + ": token id " + std::to_string(id) +
                                  " is outside the vocabulary of " + std::to_string(m.config.vocab_size));
}

}  // namespace

Diagnosis Prober::diagnose(const std::string& prompt, int64_t max_tokens) const {
  const Model::Impl& m = model_->impl();
  // The trainer's diagnostics.jsonl records go the same way (eval/diagnose.h).
  return diagnose_tokens(prompt_token_ids(m.text_tokenizer(), prompt, m.config.context, max_tokens, "diagnose"));
}

DiagnosticsRecord Prober::diagnostics_record(const std::string& probe_text, int64_t step) const {
  if (model_->task()) throw std::invalid_argument("a task run reads no text: it records no diagnostics over time");
  const Model::Impl& m = model_->impl();
  // The trainer's own writer (train/diagnostics_recorder.cpp): one record format for both.
  return hsm::diagnostics_record(m.gpt, m.text_tokenizer(), probe_text, step, m.device);
}

Diagnosis Prober::diagnose_tokens(const std::vector<int32_t>& token_ids) const {
  const Model::Impl& m = model_->impl();
  check_ids(m, token_ids, "diagnose");
  if (static_cast<int64_t>(token_ids.size()) > m.config.context)
    throw std::invalid_argument("diagnose: " + std::to_string(token_ids.size()) + " tokens; the model reads at most " +
                                std::to_string(m.config.context));
  return hsm::diagnose_tokens(m.gpt, [&](int32_t id) { return m.token_label(id); }, token_ids, m.device);
}

Probe Prober::probe(const std::string& prompt, int64_t top_k, int64_t max_tokens) const {
  const Model::Impl& m = model_->impl();
  return probe_tokens(prompt_token_ids(m.text_tokenizer(), prompt, m.config.context, max_tokens, "probe"), top_k);
}

Probe Prober::probe_tokens(std::vector<int32_t> token_ids, int64_t top_k, const std::vector<int32_t>& targets) const {
  const Model::Impl& m = model_->impl();
  check_ids(m, token_ids, "probe");
  const auto context = static_cast<size_t>(m.config.context);
  if (!targets.empty() && (targets.size() != token_ids.size() || token_ids.size() > context))
    throw std::invalid_argument("probe: " + std::to_string(targets.size()) + " targets for " +
                                std::to_string(token_ids.size()) + " tokens (give one per token, at most " +
                                std::to_string(context) + ")");
  if (token_ids.size() > context) token_ids.erase(token_ids.begin(), token_ids.end() - static_cast<long>(context));
  Probe p;
  p.token_ids = std::move(token_ids);
  for (int32_t id : p.token_ids) p.tokens.push_back(m.token_label(id));
  p.length = static_cast<int64_t>(p.token_ids.size());
  auto idx = torch::tensor(std::vector<int64_t>(p.token_ids.begin(), p.token_ids.end()), torch::kLong).view({1, -1});
  idx = idx.to(m.device);
  const std::vector<LayerDiagnostics> layers = diagnose_model(m.gpt, idx);
  for (const LayerDiagnostics& l : layers) p.matrix_kinds.push_back(l.kind);
  p.rollout = attention_rollout(layers, p.length);
  p.lens = logit_lens(m.gpt, idx, top_k, [&](int32_t id) { return m.token_label(id); }, targets);
  return p;
}

TaskPrompt Prober::task_prompt(int64_t index) const {
  const Model::Impl& m = model_->impl();
  if (!m.task)
    throw std::invalid_argument(m.run_dir + " was trained on a corpus, not a task: give it a text prompt");
  TaskPrompt p = hsm::task_prompt(*m.task, index);
  // One forward of the prompt: the model is causal, so each answer position's logits are those
  // of the prompt cut there (tests/engine/test_task_probe.cpp checks it against logits()).
  c10::InferenceMode inference;
  const auto logits = m.gpt->forward(token_tensor(p.tokens, m.device))[0].to(torch::kCPU);  // [L, V]
  const auto best = logits.argmax(-1);
  for (int64_t t : p.answers) {
    p.predicted.push_back(static_cast<int32_t>(best[t].item<int64_t>()));
    p.predicted_labels.push_back(m.task->token_label(p.predicted.back()));
  }
  return p;
}

}  // namespace hsm
