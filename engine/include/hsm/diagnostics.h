#pragma once
// Diagnostics (docs/diagnostics.md, DA §4.4 and footnote 3): per layer and head, the attention or
// effective mixing matrix of a prompt and the indicators computed from it; the learned
// mixer weights for the Weights view; the end-to-end offset weights of an (a,b) stack
// (HSM §3). Plain C++: the pure functions here live in hsm_core (no LibTorch); the
// matrices themselves come from Prober::diagnose (hsm/prober.h). docs/diagnostics.md has
// the formulas and the matrix choices.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/mixer_kind.h"

namespace hsm {

// Which matrix a layer shows (the UI says which, docs/diagnostics.md): MatrixKind (hsm/mixer_kind.h).
const char* matrix_kind_name(MatrixKind k);  // "attention", "linear", "jacobian"
// The kind of matrix a mixer's layer gets: its registry entry's (MixerInfo::matrix).
MatrixKind matrix_kind(MixerKind mixer);

struct Indicators {    // DA §4.4, docs/diagnostics.md §2
  double entropy = 0;  // H = -sum a ln a over all entries of the L×L matrix (0 ln 0 = 0)
  double conc = 0;     // Frobenius norm
  double headdiv = 0;  // per layer only: mean over causal (i,k<=i) of std across heads of A_j[i,k]; 0 per head
  double sink = 0;     // (1/L) sum_i A[i,0]
  std::array<double, 4> locfoc{};  // LocFoc_N = 1/(L-N) sum_{i>=N} A[i,i-N], N = 0..3 (0 when L <= N)
};

// One head's indicators; matrix is row-major L×L, rows = queries. headdiv is 0.
// Throws std::invalid_argument when matrix.size() != L·L or L < 1.
Indicators head_indicators(const std::vector<float>& matrix, int64_t L);
// DA's HEADDIV: 2/(L(L+1)) · Σ_{k<=i} std_j(A_j[i,k]), the std across heads being the
// population one (divide by n_h; the paper does not say, and numpy's default is this).
// 0 for fewer than two heads.
double head_diversity(const std::vector<std::vector<float>>& head_matrices, int64_t L);
// Mean over heads of the per-head values, plus head_diversity.
Indicators layer_indicators(const std::vector<std::vector<float>>& head_matrices, int64_t L);

// In place: each row of a row-major L×L matrix becomes |M| / Σ|M| (rows summing to 0 stay 0).
void normalise_rows(std::vector<float>& matrix, int64_t L);

struct HeadDiagnostics {
  int head = 0;
  int64_t shift = -1;         // -1: not a shift head (attention)
  std::vector<float> matrix;  // L×L row-major, rows = queries
  Indicators indicators;
  // Knocked out (a what-if copy, hsm/knock_out.h): the head's output is replaced by zero, so
  // nothing of it reaches the residual stream. The matrix and indicators are still what the head
  // would mix, so an edit can be read against the trained model.
  bool knocked_out = false;
};

struct LayerDiagnostics {
  int layer = 0;
  std::string mixer;  // mixer id ("attn", "hsm_ab", ...)
  MatrixKind kind = MatrixKind::kAttention;
  std::vector<HeadDiagnostics> heads;
  Indicators indicators;  // raw, per layer
  Indicators normalised;  // entropy, conc, headdiv min-max normalised across the model's layers
                          // (0..1; 0 when all equal); other fields copied raw
  // The whole mixer knocked out (as HeadDiagnostics::knocked_out; every head is marked too).
  // Later layers are diagnosed on the stream without it.
  bool knocked_out = false;
};

struct Diagnosis {
  std::vector<int32_t> token_ids;
  std::vector<std::string> tokens;  // the pieces of token_ids
  int64_t length = 0;               // L
  std::vector<LayerDiagnostics> layers;
};

// Fills every layer's `normalised` from the `indicators` of all layers (DA footnote 3).
void normalise_across_layers(std::vector<LayerDiagnostics>& layers);

// End-to-end weight of every offset k in [0, 2^n) for an hsm_ab stack with per-layer a_l, b_l
// (HSM §3): prod over layers of b_l where bit l of k is set, (1 + a_l) where it is not.
// Throws std::invalid_argument when a and b differ in length or n > 20 (a million offsets).
std::vector<double> offset_weights(const std::vector<double>& a, const std::vector<double>& b);

// Learned mixer weights of one layer, for the Weights view.
struct MixerWeights {
  int layer = 0;
  std::string mixer;
  std::vector<int64_t> shifts;  // one per head (or one for single-shift layers); empty for attention
  // hsm_ab: one value each; hsm_ab_vec: d values; hsm_ab_mh(_ext): one per head; empty otherwise
  std::vector<float> a, b;
  // Extractors (EX §5): the weight of lag k = 1..l at index k−1 (ME: w_k; WE, HE: mean |w_k|
  // over channels; SHE: the RMS entry of W_k); empty otherwise.
  std::vector<float> lag_weights;
  bool has_weights() const { return !a.empty(); }
};

// offset_weights of a model whose layers are all hsm_ab (empty otherwise).
std::vector<double> offset_weights(const std::vector<MixerWeights>& layers);

}  // namespace hsm
