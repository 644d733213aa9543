#include "eval/mixing_matrix.h"

namespace hsm {
namespace {

std::vector<float> to_floats(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

LayerDiagnostics diagnose_layer(MixerImpl& mixer, const LayerSpec& spec, int layer, const torch::Tensor& x,
                                const torch::Tensor& qk) {
  LayerDiagnostics out;
  out.layer = layer;
  out.mixer = spec.mixer;
  out.kind = matrix_kind(mixer.kind);
  const int64_t L = x.size(1);
  // The mixer computes its own matrices (MixerImpl::mixing_matrices), of the kind its registry
  // entry names; here they become rows, indicators and the layer's summary.
  const auto [matrices, shifts] = mixer.mixing_matrices(x, qk);  // [H, L, L], [H]
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

std::vector<LayerDiagnostics> diagnose_model(Gpt& model, const torch::Tensor& idx) {
  torch::NoGradGuard no_grad;
  std::vector<LayerDiagnostics> layers;
  auto h = model->embed(idx);  // [1, L, d]
  const auto streams = model->qk_streams(h, h.size(1));  // DA *_qk layers' Q, K sources
  for (size_t l = 0; l < model->blocks.size(); ++l) {
    auto& block = model->blocks[l];
    const auto& qk = streams[l];
    layers.push_back(diagnose_layer(*block->mixer, model->config.layers[l], static_cast<int>(l), block->ln1->forward(h),
                                    qk.defined() ? block->ln1->forward(qk) : qk));
    h = block->forward(h, qk);  // honours the knock-outs: later layers see the stream without them
  }
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
