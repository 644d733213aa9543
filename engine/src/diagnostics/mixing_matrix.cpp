#include "diagnostics/mixing_matrix.h"

#include <stdexcept>

#include "model/mixers/attention.h"
#include "model/mixers/linear_attention.h"

namespace hsm {
namespace {

std::vector<float> to_floats(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// [L, L] with `diag` on the diagonal and `sub` on the s-th sub-diagonal (absent when s >= L).
torch::Tensor band(const torch::Tensor& diag, const torch::Tensor& sub, int64_t s) {
  const int64_t L = diag.size(0);
  auto m = torch::diag(diag);
  if (s < L) m = m + torch::diag(sub.narrow(0, s, L - s), -s);
  return m;
}

// RMS gain of a linear map given as a weight matrix or a diagonal: ‖M‖_F / √(columns).
double rms_gain(const torch::Tensor& m, int64_t columns) {
  return m.detach().norm().item<double>() / std::sqrt(static_cast<double>(columns));
}

// Stacks per-head bands of constant diagonal values a_h and sub-diagonal values b_h.
torch::Tensor constant_bands(const ShiftMixerImpl& mixer, const std::vector<double>& a, const std::vector<double>& b,
                             int64_t L) {
  std::vector<torch::Tensor> heads;
  for (size_t h = 0; h < a.size(); ++h)
    heads.push_back(band(torch::full({L}, a[h]), torch::full({L}, b[h]), head_shift(mixer, static_cast<int64_t>(h))));
  return torch::stack(heads);
}

}  // namespace

int64_t diagnostic_heads(const ShiftMixerImpl& mixer) {
  if (mixer.shifts.size() > 1) return static_cast<int64_t>(mixer.shifts.size());
  if (auto* g = dynamic_cast<const ShiftGate2Impl*>(&mixer)) return g->heads;
  if (auto* f = dynamic_cast<const ShiftFusionImpl*>(&mixer)) return f->heads;
  return 1;
}

int64_t head_shift(const ShiftMixerImpl& mixer, int64_t head) {
  return mixer.shifts.size() > 1 ? mixer.shifts.at(static_cast<size_t>(head)) : mixer.shifts.at(0);
}

torch::Tensor linear_maps(const ShiftMixerImpl& mixer, int64_t L) {
  torch::NoGradGuard no_grad;
  const int64_t d = mixer.d_model;
  if (auto* m = dynamic_cast<const ShiftABImpl*>(&mixer))  // block a·I: a
    return constant_bands(mixer, {m->a.item<double>()}, {m->b.item<double>()}, L);
  if (auto* m = dynamic_cast<const ShiftABVectorImpl*>(&mixer))  // block diag(a): RMS of a
    return constant_bands(mixer, {rms_gain(m->a, d)}, {rms_gain(m->b, d)}, L);
  if (auto* m = dynamic_cast<const ShiftABMatrixImpl*>(&mixer)) {
    // y_i = W (A x_i + B x_{i-s} + bias) + c: blocks W·A on the diagonal, W·B below.
    const auto& W = m->proj->weight;
    return constant_bands(mixer, {rms_gain(torch::matmul(W, m->A->weight), d)},
                          {rms_gain(torch::matmul(W, m->B->weight), d)}, L);
  }
  if (auto* m = dynamic_cast<const ShiftABMultiheadImpl*>(&mixer)) {  // head j: a_j·I, b_j·I
    auto a = m->a.to(torch::kCPU, torch::kDouble).contiguous(), b = m->b.to(torch::kCPU, torch::kDouble).contiguous();
    return constant_bands(mixer, std::vector<double>(a.data_ptr<double>(), a.data_ptr<double>() + a.numel()),
                          std::vector<double>(b.data_ptr<double>(), b.data_ptr<double>() + b.numel()), L);
  }
  throw std::invalid_argument(std::string("linear_maps: mixer ") + mixer_info(mixer.kind).id + " is not linear in x");
}

torch::Tensor jacobian_norms(ShiftMixerImpl& mixer, const torch::Tensor& x) {
  torch::AutoGradMode grad_mode(true);
  const int64_t L = x.size(1), d = x.size(2), H = diagnostic_heads(mixer), hd = d / H;
  auto x0 = x.detach().squeeze(0);                  // [L, d]
  auto xs0 = mixer.shifted(x.detach()).squeeze(0);  // [L, d]: x_{i-s} per head's channels
  // Batch element c of a chunk differentiates output channel c0 + c at every position at
  // once (a shift mixer is position-wise), giving ∂y[i, c]/∂x[i, :] and ∂y[i, c]/∂xs[i, :].
  // Chunks keep the [n, L, d] copies near 4M values.
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(d, (int64_t{1} << 22) / std::max<int64_t>(1, L * d)));
  std::vector<torch::Tensor> sq_x, sq_s;  // per chunk: [n, L, H], squares summed over each head's input channels
  for (int64_t c0 = 0; c0 < d; c0 += chunk) {
    const int64_t n = std::min(chunk, d - c0);
    auto X = x0.unsqueeze(0).expand({n, L, d}).clone().requires_grad_(true);
    auto Xs = xs0.unsqueeze(0).expand({n, L, d}).clone().requires_grad_(true);
    auto Y = mixer.mix(X, Xs);                            // [n, L, d]
    auto pick = torch::eye(n, x.options()).unsqueeze(1);  // [n, 1, n]
    auto out = (Y.narrow(2, c0, n) * pick).sum();
    auto g = torch::autograd::grad({out}, {X, Xs});  // 2 × [n, L, d]
    sq_x.push_back(g[0].pow(2).reshape({n, L, H, hd}).sum(-1));
    sq_s.push_back(g[1].pow(2).reshape({n, L, H, hd}).sum(-1));
  }
  auto gx = torch::cat(sq_x), gs = torch::cat(sq_s);  // [d, L, H]: output channel, position, input head
  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < H; ++h) {
    auto own = [&](const torch::Tensor& g) { return g.narrow(0, h * hd, hd).select(2, h).sum(0).sqrt(); };  // [L]
    heads.push_back(band(own(gx), own(gs), head_shift(mixer, h)));
  }
  return torch::stack(heads).detach();  // [H, L, L]
}

torch::Tensor extractor_matrix(ExtractorImpl& mixer, const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  const int64_t L = x.size(1);
  if (L > mixer.context)
    throw std::invalid_argument("extractor_matrix: " + std::to_string(L) + " positions exceed the context " +
                                std::to_string(mixer.context));
  auto pos = torch::arange(L, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
  auto lag = (pos.unsqueeze(1) - pos.unsqueeze(0));  // [L, L]: i − k
  auto below = (lag >= 0).to(x.dtype());
  if (auto* me = dynamic_cast<MeImpl*>(&mixer)) return me->toeplitz(L).unsqueeze(0);
  auto x0 = x.squeeze(0);                                        // [L, d]
  auto E = mixer.lag_maps(L).to(x.dtype());                      // [L, d, d]: E_k at k − 1, rows = input channels
  auto Wo = mixer.out->weight.t().to(x.dtype());                 // [d, d]: W_out, (c, o)
  auto Wa = mixer.adj->weight.t().to(x.dtype());                 // W_adj
  auto a = torch::matmul(x0, Wa);                                // [L, d]
  auto e = mixer.extract(mixer.extraction_input(x)).squeeze(0);  // [L, d]
  // k < i: ‖W_outᵀ diag(a_i) E_lagᵀ‖²_F = a_iᵀ ((W_out W_outᵀ) ∘ (E_lagᵀ E_lag)) a_i
  auto G = torch::matmul(Wo, Wo.t());                               // [d, d]
  auto K = G.unsqueeze(0) * torch::matmul(E.transpose(1, 2), E);    // [L, d, d]
  auto Q = torch::einsum("ic,lcb,ib->il", {a, K, a}).clamp_min(0);  // [L (output i), L (lag)]
  auto M = Q.gather(1, lag.clamp_min(0)).sqrt() * below;            // [L, L]
  // k = i: both terms, explicitly: ‖(E_1 diag(a_i) + W_adj diag(e_i)) W_out‖_F
  auto own = torch::matmul(E[0].unsqueeze(0) * a.unsqueeze(1) + Wa.unsqueeze(0) * e.unsqueeze(1), Wo);  // [L, d, d]
  M = M * (1 - torch::eye(L, x.options())) + torch::diag(own.pow(2).sum({1, 2}).sqrt());
  return M.unsqueeze(0);
}

LayerDiagnostics diagnose_layer(MixerImpl& mixer, const LayerSpec& spec, int layer, const torch::Tensor& x,
                                const torch::Tensor& qk) {
  LayerDiagnostics out;
  out.layer = layer;
  out.mixer = spec.mixer;
  out.kind = matrix_kind(mixer.kind);
  const int64_t L = x.size(1);
  torch::Tensor matrices;  // [H, L, L]
  std::vector<int64_t> shifts;
  if (auto* attn = dynamic_cast<AttentionImpl*>(&mixer)) {
    torch::NoGradGuard no_grad;
    matrices = attn->attention_weights(x).squeeze(0);
    shifts.assign(static_cast<size_t>(matrices.size(0)), -1);
  } else if (auto* lin = dynamic_cast<LinearAttentionImpl*>(&mixer)) {
    torch::NoGradGuard no_grad;
    matrices = lin->attention_weights(x).squeeze(0);
    shifts.assign(static_cast<size_t>(matrices.size(0)), -1);
  } else if (auto* qkm = dynamic_cast<QkSourceMixerImpl*>(&mixer)) {
    torch::NoGradGuard no_grad;
    matrices = qkm->attention_weights_qk(qk.defined() ? qk : x).select(0, 0);
    shifts.assign(static_cast<size_t>(matrices.size(0)), -1);
  } else if (mixer.kind == MixerKind::GatedMlp) {
    matrices = torch::eye(L).unsqueeze(0);  // [1, L, L]: each output reads its own input only
    shifts.assign(1, 0);
  } else if (auto* ex = dynamic_cast<ExtractorImpl*>(&mixer)) {
    matrices = extractor_matrix(*ex, x);
    shifts.assign(1, -1);  // one head reading every earlier position
  } else {
    auto& shift = dynamic_cast<ShiftMixerImpl&>(mixer);
    matrices = out.kind == MatrixKind::kLinear ? linear_maps(shift, L) : jacobian_norms(shift, x);
    for (int64_t h = 0; h < matrices.size(0); ++h) shifts.push_back(head_shift(shift, h));
  }
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
    h = block->forward(h, qk);
  }
  normalise_across_layers(layers);
  return layers;
}

MixerWeights mixer_weights(const MixerImpl& mixer, const LayerSpec& spec, int layer) {
  MixerWeights w;
  w.layer = layer;
  w.mixer = spec.mixer;
  if (auto* shift = dynamic_cast<const ShiftMixerImpl*>(&mixer)) w.shifts = shift->shifts;
  auto set = [&](const torch::Tensor& a, const torch::Tensor& b) {
    w.a = to_floats(a);
    w.b = to_floats(b);
  };
  if (auto* m = dynamic_cast<const ShiftABImpl*>(&mixer)) set(m->a, m->b);
  if (auto* m = dynamic_cast<const ShiftABVectorImpl*>(&mixer)) set(m->a, m->b);
  if (auto* m = dynamic_cast<const ShiftABMultiheadImpl*>(&mixer)) set(m->a, m->b);
  // The extractors' weight per lag k = 1..l (EX §5's "reverse order"), one number per lag so
  // the layers compare: ME its scalar w_k, WE/HE the mean |w_k| over channels, SHE the RMS
  // entry of W_k (‖W_k‖_F / d).
  torch::NoGradGuard no_grad;
  if (auto* m = dynamic_cast<const MeImpl*>(&mixer)) w.lag_weights = to_floats(m->w_ext);
  if (auto* m = dynamic_cast<const WeImpl*>(&mixer)) w.lag_weights = to_floats(m->w_ext.abs().mean(1));
  if (auto* m = dynamic_cast<const SheImpl*>(&mixer))
    w.lag_weights = to_floats(m->w_ext.pow(2).mean({1, 2}).sqrt());
  return w;
}

std::vector<MixerWeights> mixer_weights(Gpt& model) {
  std::vector<MixerWeights> out;
  for (size_t l = 0; l < model->blocks.size(); ++l)
    out.push_back(mixer_weights(*model->blocks[l]->mixer, model->config.layers[l], static_cast<int>(l)));
  return out;
}

}  // namespace hsm
