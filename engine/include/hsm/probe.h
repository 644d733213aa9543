#pragma once
// Probing a trained model (issue 22, docs/diagnostics.md "Probe"):
//   the logit lens (nostalgebraist 2020): what the residual stream after the embedding and
//     after each block would predict through the final LayerNorm and the tied output layer;
//   attention rollout (Abnar & Zuidema 2020): Â_l = ½A_l + ½I, R_l = Â_l · R_{l−1}, R_{−1} = I,
//     A_l the layer's row-normalised mixing matrix as `hsm diagnose` reports it, mean over heads;
//   importance by ablation (Michel et al. 2019): the validation loss with each layer's mixer
//     output, and each separable head, zeroed (hsm/knock_out.h).
// Plain C++: the rollout is a pure function here (hsm_core); Prober::probe and
// Evaluator::ablate compute the rest.
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/diagnostics.h"
#include "hsm/knock_out.h"

namespace hsm {

struct LensToken {
  int32_t id = 0;
  std::string piece;
  float prob = 0;
};

// One residual stream through the final LayerNorm and the tied output layer.
struct LensLayer {
  int layer = -1;  // -1: after the embedding; l: after block l
  std::vector<std::vector<LensToken>> top;  // per position: the k most probable next tokens
  // Per position: KL(p_final ‖ p_layer) in nats, p_final the model's own next-token
  // distribution (so 0 for the last layer).
  std::vector<double> kl_to_final;
  // Per position: the rank of the token that actually comes next (1 = this layer's top
  // prediction); -1 at the last position, which has no next token.
  std::vector<int64_t> target_rank;
};

struct RolloutLayer {
  int layer = 0;
  std::vector<float> matrix;  // R_l, L×L row-major, rows = outputs, columns = inputs
};

struct Probe {
  std::vector<int32_t> token_ids;
  std::vector<std::string> tokens;
  int64_t length = 0;  // L
  std::vector<LensLayer> lens;        // L+1 entries: after the embedding, then after each block
  std::vector<RolloutLayer> rollout;  // one per layer
  std::vector<MatrixKind> matrix_kinds;  // per layer: the kind of A_l (the UI says which)
};

// R_l for every layer from its heads' matrices as diagnose reports them (rows normalised; mean
// over heads), in double precision. Throws std::invalid_argument for a malformed diagnosis.
std::vector<RolloutLayer> attention_rollout(const std::vector<LayerDiagnostics>& layers, int64_t L);

// What the Playground's provenance tint shows for generated tokens at `positions` (0-based in
// the probed sequence): the sum of their rows of the last layer's rollout, one weight per
// input position. Throws std::out_of_range for a position outside the sequence.
std::vector<double> rollout_provenance(const Probe& probe, const std::vector<int64_t>& positions);

// One row of `hsm ablate`: the knock-out, the loss with it and the change from the base loss.
struct Ablation {
  KnockOut knock_out;
  double loss = 0;
  double delta = 0;  // loss − base loss (> 0: the model needed what was knocked out)
};

struct AblationReport {
  double base_loss = 0;     // nothing knocked out: Evaluator::evaluate's loss on the same windows
  double base_accuracy = 0;
  int64_t tokens = 0;       // predicted tokens per evaluation
  std::string split;
  std::string windows;  // layout and count of the windows scored (EvalResult's)
  int64_t window_count = 0;
  // Every layer, then every separable head of it (MixerImpl::separable_heads), ranked by
  // delta, largest first.
  std::vector<Ablation> ablations;
  double seconds = 0;
};

}  // namespace hsm
