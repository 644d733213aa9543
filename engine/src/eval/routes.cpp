#include "eval/routes.h"

#include <cmath>

#include "model/mixers/attention.h"
#include "model/sites.h"

namespace hsm {
namespace {

// The mixer's term from each position j to each position i, as norms [T, T] (rows i, columns j)
// and where a term exists at all (mask [T, T], bool). x = LN1(h) [1, T, d], y = the mixer's output.
struct MixerTerms {
  torch::Tensor norms, present;
  std::string made_from;
};

MixerTerms mixer_terms(MixerImpl& mixer, const torch::Tensor& x, const torch::Tensor& map, const torch::Tensor& y) {
  const int64_t T = x.size(1), d = x.size(2);
  const auto causal = torch::ones({T, T}, torch::kBool).tril();
  auto* attn = dynamic_cast<QkSourceMixerImpl*>(&mixer) ? nullptr : dynamic_cast<AttentionImpl*>(&mixer);
  if (attn) {
    // Exact: y_i = Σ_j Σ_h A^h_ij W_O^h v^h_j + c (c, the output bias, is no position's term);
    // A: the map (the softmax weights).
    const auto terms = attn->position_terms(x, map);  // [T, T, d]
    return {terms.norm(2, -1), causal, "attention: A_ij W_O v_j"};
  }
  const auto mm = map.to(torch::kFloat).abs();  // [H, T, T]
  const int64_t H = mm.size(0);
  const auto present = (mm.sum(0) > 0).logical_and(causal);
  const MatrixKind kind = matrix_kind(mixer.kind);
  if (kind != MatrixKind::kAttention && d % H == 0) {
    // A block's RMS gain g^h_ij (linear: the exact map's gain; Jacobian: ‖∂y_i/∂x_j‖_F / √hd)
    // times the norm of what it multiplies, x_j's channels of head h.
    const int64_t hd = d / H;
    const auto g = kind == MatrixKind::kJacobian ? mm / std::sqrt(static_cast<double>(hd)) : mm;  // [H, T, T]
    const auto xn = x[0].to(torch::kFloat).view({T, H, hd}).norm(2, -1).t();                     // [H, T]
    const auto norms = (g.pow(2) * xn.pow(2).unsqueeze(1)).sum(0).sqrt();                      // [T, T]
    return {norms * present, present,
            kind == MatrixKind::kLinear ? "linear: |gain_ij| ||x_j||" : "jacobian: ||dy_i/dx_j||_F/sqrt(d) ||x_j||"};
  }
  // Any other attention-like mixer: the head-averaged weights share out ||y_i||.
  auto rows = mm.mean(0);
  rows = rows / rows.sum(-1, true).clamp_min(1e-30);
  const auto yn = y[0].to(torch::kFloat).norm(2, -1).unsqueeze(1);  // [T, 1]
  return {rows * yn * present, present, "weights: mean_h A_ij ||y_i||"};
}

// One block's sites as the observers kept them; `mixer` set where its map was kept (not knocked out).
struct BlockSites {
  torch::Tensor residual, input, map, mixer_out, ffn;
  MixerImpl* mixer = nullptr;
};

std::vector<double> to_vector(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

void information_flow(GptImpl& model, const torch::Tensor& idx, int64_t at, Routes& routes) {
  torch::NoGradGuard no_grad;
  const int64_t L = static_cast<int64_t>(model.blocks.size()), T = idx.size(1);
  routes.layers = L;
  routes.positions = T;
  routes.answer_position = at;
  routes.mixer_terms.clear();
  routes.edges.clear();
  std::vector<BlockSites> sites(static_cast<size_t>(L));
  auto keep = [&sites](torch::Tensor BlockSites::*field) {
    return [&sites, field](const SiteEvent& e) {
      sites[static_cast<size_t>(e.layer)].*field = e.value;
      return torch::Tensor();
    };
  };
  Observers observers;
  observers.at(Site::kResidual, keep(&BlockSites::residual))
      .at(Site::kMixerMap,
          [&](const SiteEvent& e) {
            BlockSites& b = sites[static_cast<size_t>(e.layer)];
            if (model.blocks[static_cast<size_t>(e.layer)]->mixer_knocked_out) return torch::Tensor();
            b.map = e.value;
            b.input = *e.input;
            b.mixer = e.mixer;
            return torch::Tensor();
          })
      .at(Site::kMixer, keep(&BlockSites::mixer_out))
      .at(Site::kFfn, keep(&BlockSites::ffn));
  model.hidden(idx, observers);
  for (int64_t l = 0; l < L; ++l) {
    const auto ul = static_cast<size_t>(l);
    if (model.skipped(ul)) {  // the node passes on unchanged
      routes.mixer_terms.push_back("skipped");
      for (int64_t i = 0; i <= at; ++i) routes.edges.push_back({l, i, i, 1.0, RouteKind::kResidual});
      continue;
    }
    const BlockSites& b = sites[ul];
    torch::Tensor mix, present;
    if (!b.mixer) {
      routes.mixer_terms.push_back("knocked out");
    } else {
      MixerTerms terms = mixer_terms(*b.mixer, b.input, b.map, b.mixer_out);
      mix = terms.norms.to(torch::kCPU, torch::kDouble).contiguous();
      present = terms.present.to(torch::kCPU).contiguous();
      routes.mixer_terms.push_back(terms.made_from);
    }
    const auto rn = to_vector(b.residual[0].norm(2, -1)), fn = to_vector(b.ffn[0].norm(2, -1));
    for (int64_t i = 0; i <= at; ++i) {
      const auto ui = static_cast<size_t>(i);
      double total = rn[ui] + fn[ui];
      const double* m = mix.defined() ? mix.data_ptr<double>() + i * T : nullptr;
      const bool* p = present.defined() ? present.data_ptr<bool>() + i * T : nullptr;
      if (m)
        for (int64_t j = 0; j <= i; ++j)
          if (p[j]) total += m[j];
      const double scale = total > 0 ? 1.0 / total : 0.0;
      routes.edges.push_back({l, i, i, rn[ui] * scale, RouteKind::kResidual});
      if (m)
        for (int64_t j = 0; j <= i; ++j)
          if (p[j]) routes.edges.push_back({l, j, i, m[j] * scale, RouteKind::kMixer});
      routes.edges.push_back({l, i, i, fn[ui] * scale, RouteKind::kFfn});
    }
  }
}

}  // namespace hsm
