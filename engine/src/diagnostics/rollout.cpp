// Attention rollout (Abnar & Zuidema 2020) from the matrices `hsm diagnose` reports, and the
// Playground's provenance tint read from it (hsm/probe.h). Torch-free.
#include <algorithm>
#include <stdexcept>

#include "hsm/probe.h"

namespace hsm {

std::vector<RolloutLayer> attention_rollout(const std::vector<LayerDiagnostics>& layers, int64_t L) {
  if (L < 1) throw std::invalid_argument("attention_rollout: the sequence is empty");
  const auto n = static_cast<size_t>(L);
  // R_{-1} = I; R_l = Â_l · R_{l-1}, Â_l = ½ mean_h(A_l,h) + ½ I (the residual path).
  std::vector<double> R(n * n, 0.0), A(n * n), next(n * n);
  for (size_t i = 0; i < n; ++i) R[i * n + i] = 1.0;
  std::vector<RolloutLayer> out;
  for (const LayerDiagnostics& layer : layers) {
    if (layer.heads.empty())
      throw std::invalid_argument("attention_rollout: layer " + std::to_string(layer.layer) + " has no head matrices");
    std::fill(A.begin(), A.end(), 0.0);
    for (const HeadDiagnostics& head : layer.heads) {
      if (head.matrix.size() != n * n)
        throw std::invalid_argument("attention_rollout: layer " + std::to_string(layer.layer) + " head " +
                                    std::to_string(head.head) + " is not " + std::to_string(L) + "×" +
                                    std::to_string(L));
      for (size_t k = 0; k < n * n; ++k) A[k] += head.matrix[k];
    }
    const double half_mean = 0.5 / static_cast<double>(layer.heads.size());
    for (double& a : A) a *= half_mean;
    for (size_t i = 0; i < n; ++i) A[i * n + i] += 0.5;
    std::fill(next.begin(), next.end(), 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < n; ++k) {
        const double a = A[i * n + k];
        if (a == 0.0) continue;  // causal mixers: everything past the diagonal
        for (size_t j = 0; j < n; ++j) next[i * n + j] += a * R[k * n + j];
      }
    R.swap(next);
    RolloutLayer r;
    r.layer = layer.layer;
    r.matrix.assign(R.begin(), R.end());
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<double> rollout_provenance(const Probe& probe, const std::vector<int64_t>& positions) {
  const int64_t L = probe.length;
  std::vector<double> weights(static_cast<size_t>(std::max<int64_t>(L, 0)), 0.0);
  if (probe.rollout.empty()) return weights;
  const std::vector<float>& R = probe.rollout.back().matrix;
  for (int64_t p : positions) {
    if (p < 0 || p >= L)
      throw std::out_of_range("provenance: position " + std::to_string(p) + " is outside the probed " +
                              std::to_string(L) + " tokens");
    for (int64_t j = 0; j < L; ++j) weights[static_cast<size_t>(j)] += R[static_cast<size_t>(p * L + j)];
  }
  return weights;
}

}  // namespace hsm
