// Prober (hsm/prober.h): diagnosis, logit lens and rollout of one prompt, read off a shared
// model (docs/diagnostics.md).
#include "hsm/prober.h"

#include "diagnostics/diagnose.h"
#include "diagnostics/logit_lens.h"
#include "diagnostics/mixing_matrix.h"
#include "inference/model_impl.h"

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

Diagnosis Prober::diagnose(const std::string& prompt, int64_t max_tokens) const {
  const Model::Impl& m = model_->impl();
  // The trainer's diagnostics.jsonl records go the same way (diagnostics/diagnose.h).
  return diagnose_tokens(m.gpt, *m.tokenizer,
                         prompt_token_ids(*m.tokenizer, prompt, m.config.context, max_tokens, "diagnose"), m.device);
}

Probe Prober::probe(const std::string& prompt, int64_t top_k, int64_t max_tokens) const {
  const Model::Impl& m = model_->impl();
  return probe_tokens(prompt_token_ids(*m.tokenizer, prompt, m.config.context, max_tokens, "probe"), top_k);
}

Probe Prober::probe_tokens(std::vector<int32_t> token_ids, int64_t top_k) const {
  const Model::Impl& m = model_->impl();
  if (token_ids.empty()) throw std::invalid_argument("probe: no tokens to look at");
  const auto context = static_cast<size_t>(m.config.context);
  if (token_ids.size() > context) token_ids.erase(token_ids.begin(), token_ids.end() - static_cast<long>(context));
  for (int32_t id : token_ids)
    if (id < 0 || id >= m.config.vocab_size)
      throw std::invalid_argument("probe: token id " + std::to_string(id) + " is outside the vocabulary of " +
                                  std::to_string(m.config.vocab_size));
  Probe p;
  p.token_ids = std::move(token_ids);
  for (int32_t id : p.token_ids) p.tokens.push_back(m.tokenizer->piece(id));
  p.length = static_cast<int64_t>(p.token_ids.size());
  auto idx = torch::tensor(std::vector<int64_t>(p.token_ids.begin(), p.token_ids.end()), torch::kLong).view({1, -1});
  idx = idx.to(m.device);
  const std::vector<LayerDiagnostics> layers = diagnose_model(m.gpt, idx);
  for (const LayerDiagnostics& l : layers) p.matrix_kinds.push_back(l.kind);
  p.rollout = attention_rollout(layers, p.length);
  p.lens = logit_lens(m.gpt, idx, top_k, [&](int32_t id) { return m.tokenizer->piece(id); });
  return p;
}

}  // namespace hsm
