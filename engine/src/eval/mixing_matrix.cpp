#include "eval/mixing_matrix.h"

#include "model/sites.h"

namespace hsm {
namespace {

std::vector<float> to_floats(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// One layer's diagnostics from its mixer's map (MixerImpl::mixing_matrices): matrices [H, L, L].
LayerDiagnostics diagnose_map(const MixerImpl& mixer, const LayerSpec& spec, int layer, const torch::Tensor& matrices,
                              const std::vector<int64_t>& shifts) {
  LayerDiagnostics out;
  out.layer = layer;
  out.mixer = spec.mixer;
  out.kind = matrix_kind(mixer.kind);
  const int64_t L = matrices.size(1);
  std::vector<std::vector<float>> all;
  for (int64_t h = 0; h < matrices.size(0); ++h) {
    HeadDiagnostics head;
    head.head = static_cast<int>(h);
    head.shift = shifts[static_cast<size_t>(h)];
    head.matrix = to_floats(matrices[h]);
    if (out.kind != MatrixKind::kAttention) normalise_rows(head.matrix, L);
    head.indicators = head_indicators(head.matrix, L);
    all.push_back(head.matrix);
    out.heads.push_back(std::move(head));
  }
  out.indicators = layer_indicators(all, L);
  return out;
}

}  // namespace

LayerDiagnostics diagnose_layer(MixerImpl& mixer, const LayerSpec& spec, int layer, const torch::Tensor& x,
                                const torch::Tensor& qk) {
  // The mixer computes its own matrices, of the kind its registry entry names; here they become
  // rows, indicators and the layer's summary.
  const auto [matrices, shifts] = mixer.mixing_matrices(x, qk);  // [H, L, L], [H]
  return diagnose_map(mixer, spec, layer, matrices, shifts);
}

std::vector<LayerDiagnostics> diagnose_model(Gpt& model, const torch::Tensor& idx) {
  torch::NoGradGuard no_grad;
  // Each layer's map as the one forward meets it (Site::kMixerMap): later layers see the stream
  // with the knock-outs, as the model runs.
  std::vector<LayerDiagnostics> layers(model->blocks.size());
  Observers observers;
  observers.at(Site::kMixerMap, [&](const SiteEvent& e) {
    const auto l = static_cast<size_t>(e.layer);
    layers[l] = diagnose_map(*e.mixer, model->config.layers[l], static_cast<int>(l), e.value, *e.shifts);
    return torch::Tensor();
  });
  model->hidden(idx, observers);
  for (const KnockOut& k : model->knock_outs()) {
    LayerDiagnostics& ld = layers[static_cast<size_t>(k.layer)];  // checked by set_knock_outs
    ld.knocked_out = ld.knocked_out || k.head < 0;
    for (HeadDiagnostics& hd : ld.heads) hd.knocked_out = hd.knocked_out || k.head < 0 || hd.head == k.head;
  }
  normalise_across_layers(layers);
  return layers;
}

MixerWeights mixer_weights(const MixerImpl& mixer, const LayerSpec& spec, int layer) {
  MixerWeights w;
  w.layer = layer;
  w.mixer = spec.mixer;
  mixer.learned_weights(w);
  return w;
}

std::vector<MixerWeights> mixer_weights(Gpt& model) {
  std::vector<MixerWeights> out;
  for (size_t l = 0; l < model->blocks.size(); ++l)
    out.push_back(mixer_weights(*model->blocks[l]->mixer, model->config.layers[l], static_cast<int>(l)));
  return out;
}

}  // namespace hsm
