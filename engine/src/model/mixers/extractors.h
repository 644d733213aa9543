#pragma once
// The Extractors (EX §5): causal position-weighted sums over the last l inputs, l = the
// model's context. Output i reads input j ≤ i (i − j < l) through weights indexed by the
// lag k = i − j + 1, the "reverse order" of the paper. Row-vector convention as in the
// paper: x_j ∈ R^{1×d}, a map is x W.
//   SHE (eq. 23–25): e_i = Σ_j x_j W_{i−j+1};            y = ((x W_adj) ⊙ e) W_out
//   HE  (eq. 27, 28, 24, 25): u = x W_in_ext, e_i = Σ_j u_j ⊙ w_{i−j+1}; y as SHE
//   WE  (eq. 26, 24, 25): e_i = Σ_j x_j ⊙ w_{i−j+1};      y as SHE
//   ME  (eq. 29): y_i = Σ_j w_{i−j+1} x_j  (scalars; no adjustment, no output map)
// No biases: the formulas have none, and the parameter counts then equal EX Tables 3–4.
// Decoding keeps the extraction's input (x, or u for HE) of the last l positions in
// ExtractorState::ring [B, l, d], so a step costs O(l·d²) (SHE) or O(l·d) (the others).
#include "model/mixers/mixer.h"

namespace hsm {

// The extraction's input of the last l positions: [B, l, d], position p at p % l.
struct ExtractorState : MixerState {
  torch::Tensor ring;
};

struct ExtractorImpl : MixerImpl {
  // adjusted: eq. 24-25's adjustment and output maps follow the extraction (all but ME).
  ExtractorImpl(MixerKind kind, int64_t d_model, int64_t context, bool adjusted = true);
  torch::Tensor forward(const torch::Tensor& x) override;  // [B, T, d] -> [B, T, d]
  std::unique_ptr<MixerState> make_state() const override { return std::make_unique<ExtractorState>(); }
  torch::Tensor step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) override;
  torch::Tensor prefill(const torch::Tensor& x, MixerState& state, int64_t context) override;

  // The extraction's input: x, or x W_in_ext for HE. [..., d] -> [..., d]
  virtual torch::Tensor extraction_input(const torch::Tensor& x) { return x; }
  // e_i = Σ_{k=1}^{min(i+1, l)} u_{i−k+1} ∘ w_k for a whole sequence: [B, T, d] -> [B, T, d].
  virtual torch::Tensor extract(const torch::Tensor& u) = 0;
  // The same for the newest position from its K last inputs, newest first: [B, K, d] -> [B, d].
  virtual torch::Tensor extract_window(const torch::Tensor& window) = 0;
  // e_i = Σ_k x_{i−k+1} E_k written as d×d maps of x (row convention): [K, d, d], E_k at k−1.
  virtual torch::Tensor lag_maps(int64_t K) const = 0;
  // x and its extraction e -> the mixer's output (eq. 24–25; ME returns e).
  torch::Tensor finish(const torch::Tensor& x, const torch::Tensor& e);
  // One head reading every earlier position (L ≤ context), not normalised: ‖∂y_i/∂x_k‖_F from
  // the closed form ∂y_i/∂x_k = W_outᵀ diag(a_i) E_{i−k+1}ᵀ (+ W_outᵀ diag(e_i) W_adjᵀ when
  // k = i), with a = x W_adj, e the extraction and E_k the lag maps. ME: its exact map.
  MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) override;
  // One number per lag k = 1..l (EX §5's "reverse order"), so the layers compare.
  void learned_weights(MixerWeights& w) const override;
  // The weight of each lag as learned_weights shows it: [l].
  virtual torch::Tensor lag_weights() const = 0;

  int64_t d_model, context;
  torch::nn::Linear adj{nullptr}, out{nullptr};  // W_adj, W_out (absent for ME)
};

// SHE, eq. 23–25. w_ext: [l, d, d], w_ext[k−1] = W_k. Forward: dense_lag_mix (lag_mix.h),
// blocks of lags as GEMMs accumulated into the output.
struct SheImpl : ExtractorImpl {
  SheImpl(MixerKind kind, int64_t d_model, int64_t context);
  torch::Tensor extract(const torch::Tensor& u) override;
  torch::Tensor extract_window(const torch::Tensor& window) override;
  torch::Tensor lag_maps(int64_t K) const override;
  torch::Tensor lag_weights() const override;  // the RMS entry of W_k, ‖W_k‖_F / d
  torch::Tensor w_ext;  // [l, d, d]
};

// WE (eq. 26) and HE (eq. 27–28): per-channel weights w_ext [l, d], w_ext[k−1] = w_k.
// Forward: depthwise_lag_mix (lag_mix.h), a depthwise causal convolution.
struct WeImpl : ExtractorImpl {
  WeImpl(MixerKind kind, int64_t d_model, int64_t context);
  torch::Tensor extract(const torch::Tensor& u) override;
  torch::Tensor extract_window(const torch::Tensor& window) override;
  torch::Tensor lag_maps(int64_t K) const override;
  torch::Tensor lag_weights() const override;  // the mean |w_k| over channels
  torch::Tensor w_ext;  // [l, d]
};

// HE: WE on u = x W_in_ext.
struct HeImpl : WeImpl {
  HeImpl(MixerKind kind, int64_t d_model, int64_t context);
  torch::Tensor extraction_input(const torch::Tensor& x) override;
  torch::Tensor lag_maps(int64_t K) const override;  // W_in_ext diag(w_k)
  torch::nn::Linear in_ext{nullptr};
};

// ME, eq. 29: scalar weights w_ext [l]. Forward: one [T, T] Toeplitz matrix times x.
// Linear in x: its token map is that matrix (diagnostics).
struct MeImpl : ExtractorImpl {
  MeImpl(MixerKind kind, int64_t d_model, int64_t context);
  torch::Tensor extract(const torch::Tensor& u) override;
  torch::Tensor extract_window(const torch::Tensor& window) override;
  torch::Tensor lag_maps(int64_t K) const override;
  // M[i, j] = w_{i−j+1} for 0 ≤ i − j < l, else 0: [T, T].
  torch::Tensor toeplitz(int64_t T) const;
  MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) override;  // the Toeplitz map
  torch::Tensor lag_weights() const override;  // w_k itself
  torch::Tensor w_ext;  // [l]
};


}  // namespace hsm
