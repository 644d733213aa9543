#include "eval/diagnose.h"

#include <algorithm>
#include <numeric>

#include "eval/logit_lens.h"
#include "eval/mixing_matrix.h"

namespace hsm {

std::vector<int32_t> prompt_token_ids(const Tokenizer& tokenizer, const std::string& prompt, int64_t context,
                                      int64_t max_tokens, const char* what) {
  if (prompt.empty())
    throw std::invalid_argument(std::string(what) + ": the prompt is empty (give some text to look at)");
  std::vector<int32_t> ids = tokenizer.encode(prompt);
  int64_t limit = context;
  if (max_tokens > 0) limit = std::min(limit, max_tokens);
  if (static_cast<int64_t>(ids.size()) > limit) ids.resize(static_cast<size_t>(limit));
  return ids;
}

torch::Tensor token_tensor(const std::vector<int32_t>& ids, const torch::Device& device) {
  return torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong).view({1, -1}).to(device);
}

Diagnosis diagnose_tokens(Gpt& model, const std::function<std::string(int32_t)>& label, const std::vector<int32_t>& ids,
                          const torch::Device& device) {
  Diagnosis d;
  d.token_ids = ids;
  for (int32_t id : d.token_ids) d.tokens.push_back(label(id));
  d.length = static_cast<int64_t>(d.token_ids.size());
  d.layers = diagnose_model(model, token_tensor(d.token_ids, device));
  return d;
}

DiagnosticsRecord diagnostics_record(Gpt& model, const Tokenizer& tokenizer, const std::string& prompt, int64_t step,
                                     const torch::Device& device) {
  const std::vector<int32_t> ids = prompt_token_ids(tokenizer, prompt, model->config.context, 0, "diagnostics record");
  const Diagnosis d = diagnose_tokens(model, [&](int32_t id) { return tokenizer.piece(id); }, ids, device);
  // top_k 1: the record keeps only the KL, and the pieces cost nothing to look up.
  const std::vector<LensLayer> lens =
      logit_lens(model, token_tensor(ids, device), 1, [&](int32_t id) { return tokenizer.piece(id); });
  const std::vector<MixerWeights> weights = mixer_weights(model);
  DiagnosticsRecord r;
  r.step = step;
  r.prompt = prompt;
  for (size_t l = 0; l < d.layers.size(); ++l) {
    const LayerDiagnostics& ld = d.layers[l];
    DiagnosticsLayerRecord lr;
    lr.layer = ld.layer;
    lr.mixer = ld.mixer;
    lr.kind = ld.kind;
    lr.indicators = ld.indicators;
    for (const HeadDiagnostics& h : ld.heads) lr.heads.push_back({h.head, h.indicators});
    lr.weights = weights[l];
    const std::vector<double>& kl = lens[l + 1].kl_to_final;  // the lens after block l
    lr.lens_kl = kl.empty() ? 0.0 : std::accumulate(kl.begin(), kl.end(), 0.0) / static_cast<double>(kl.size());
    r.layers.push_back(std::move(lr));
  }
  return r;
}

}  // namespace hsm
