#include "eval/logit_lens.h"

#include <algorithm>

#include "model/sites.h"

namespace hsm {

std::vector<LensLayer> logit_lens(Gpt& model, const torch::Tensor& idx, int64_t top_k,
                                  const std::function<std::string(int32_t)>& piece,
                                  const std::vector<int32_t>& targets) {
  c10::InferenceMode inference;
  const int64_t L = idx.size(1), V = model->config.vocab_size;
  const int64_t k = std::clamp<int64_t>(top_k, 1, V);
  // The one forward: the residual stream entering each block and the final norm's output.
  std::vector<torch::Tensor> streams(model->blocks.size());
  torch::Tensor final_z;
  Observers observers;
  observers
      .at(Site::kResidual,
          [&](const SiteEvent& e) {
            streams[static_cast<size_t>(e.layer)] = e.value;
            return torch::Tensor();
          })
      .at(Site::kFinal, [&](const SiteEvent& e) {
        final_z = e.value;
        return torch::Tensor();
      });
  model->hidden(idx, observers);
  // Stream s's logits as the model's output layer reads it (GptImpl::unembed); the last, the model's own: [L, V].
  auto logits_of = [&](size_t s) {
    const auto logits = s < streams.size() ? model->unembed(streams[s]) : model->output(final_z);
    return logits[0].to(torch::kCPU, torch::kDouble);
  };
  const auto final_logp = torch::log_softmax(logits_of(streams.size()), -1);  // [L, V]
  const auto next = idx[0].to(torch::kCPU);
  if (!targets.empty() && static_cast<int64_t>(targets.size()) != L)
    throw std::invalid_argument("logit lens: " + std::to_string(targets.size()) + " targets for " + std::to_string(L) +
                                " positions");
  std::vector<LensLayer> out;
  for (size_t s = 0; s <= streams.size(); ++s) {
    const auto logits = logits_of(s);
    const auto logp = torch::log_softmax(logits, -1);
    const auto kl = (final_logp.exp() * (final_logp - logp)).sum(-1).contiguous();  // KL(p_final ‖ p_s) [L]
    const auto [top_p, top_id] = torch::topk(logp.exp(), k, -1);                    // [L, k]
    LensLayer layer;
    layer.layer = static_cast<int>(s) - 1;
    const auto* kl_data = kl.data_ptr<double>();
    layer.kl_to_final.assign(kl_data, kl_data + L);
    const auto p_acc = top_p.accessor<double, 2>();
    const auto id_acc = top_id.accessor<int64_t, 2>();
    for (int64_t t = 0; t < L; ++t) {
      std::vector<LensToken> top;
      for (int64_t j = 0; j < k; ++j) {
        const auto id = static_cast<int32_t>(id_acc[t][j]);
        top.push_back({id, piece(id), static_cast<float>(p_acc[t][j])});
      }
      layer.top.push_back(std::move(top));
      if (!targets.empty() || t + 1 < L) {  // 1 + the tokens this layer puts strictly above the target
        const auto row = logits[t];
        const int64_t target = targets.empty() ? next[t + 1].item<int64_t>() : targets[static_cast<size_t>(t)];
        layer.target_rank.push_back(1 + (row > row[target]).sum().item<int64_t>());
      } else {
        layer.target_rank.push_back(-1);
      }
    }
    out.push_back(std::move(layer));
  }
  return out;
}

}  // namespace hsm
