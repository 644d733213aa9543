#pragma once
// Compute cost of a layer per generated token, from formulas (no model is built): the
// multiply-adds (MACs) a token's mixer and FFN need when it attends over a context of T
// tokens. Attention grows with T; every HSM mixer is constant in T (docs/diagnostics.md §5: a shift buffer
// per layer). The formulas count the same weights as params.h (matrix multiplications
// only; biases, LayerNorm, softmax, GELU and the element-wise products of the gates are
// left out: O(d) each, below the matrix terms). docs/diagnostics.md §5 lists them.
#include <cstdint>
#include <string>

#include "hsm/config.h"

namespace hsm {

// MACs per token of one mixer layer over a context of `context` tokens (T ≥ 1):
//   attn:          4d²  (q, k, v, output projections) + 2·T·d  (q·kᵀ and the weighted sum of v)
//   hsm_ab, hsm_ab_mh(_ext): 2d    (a·x + b·x_shifted; per head on d/H channels each)
//   hsm_ab_vec:    2d
//   hsm_AB:        3d²  (A x, B x_shifted, output projection)
//   hsm_gate1:     2d² + 2d (the gate's two d×d layers, then g⊙x + (1−g)⊙x_shifted)
//   hsm_gate2:     2d²/H + 2d  (per head Linear(2·hd → hd), then the gated sum)
//   hsm_fusion:    3d²/H  (per head Linear(2·hd → hd) and Linear(hd → hd))
// DA mixers (recurrent / cached decoding forms, DA appx. E-I; docs/mixers.md):
//   mlp:           3·d·f  (FC_Gt, FC_Up, FC_Dn; f = gated_mlp_width(d)); no mixing
//   taylor:        4d² + 2·H·D·(hd + 1)  (projections; read φ(q)·S, φ(q)·z and update S, z;
//                  D = taylor_feature_dim(hd)); constant in T
//   nonapprox:     4d² + 3d  (projections; the score and the running sums); constant in T
//   rnd_emb_qk, fixed_seq_qk: 2d² + 2·T·d  (v and output projections: Q and K are
//                  input-independent, computed once per decode and cached) + scores and sum
//   static_emb_qk: 4d² + 2·T·d  (as attention; Q, K from the token embedding)
// EX extractors:
//   she:           T·d² + 2d² + d  (EX Tables 5–6 multiplications: Σ_j x_j W_k, x W_adj, ⊙, W_out)
//   he:            T·d + 3d² + d   (x W_in_ext, Σ_j x_j ⊙ w_k, x W_adj, ⊙, W_out)
//   we:            T·d + 2d² + d   (Σ_j x_j ⊙ w_k, x W_adj, ⊙, W_out)
//   me:            T·d             (Σ_j w_k x_j)
//   The extractors grow with T like attention (they read every earlier input).
// Throws std::invalid_argument for an unknown mixer id or non-positive sizes.
int64_t mixer_macs_per_token(const std::string& mixer, int64_t d_model, int64_t heads, int64_t context);

// Floats one layer keeps between decoding steps for `batch` sequences at context T (DA appx. H):
//   attn, static_emb_qk: 2·B·T·d (keys, values); rnd_emb_qk, fixed_seq_qk: B·T·d values plus
//   2·T·d queries and keys shared by the batch; taylor: B·H·D·(hd + 1) (Σφ(k)vᵀ, Σφ(k));
//   nonapprox: B·H·(hd + 2) (running max, Σe·v, Σe); mlp: 0; shift mixers: B·R·d, a ring of
//   the R = largest shift last inputs (layer = stack position, which sets the shift); the
//   extractors: B·T·d, their window of the last T inputs.
int64_t mixer_cache_floats(const std::string& mixer, int64_t d_model, int64_t heads, int64_t layer, int64_t context,
                           int64_t batch);

// The FFN of a layer: Linear(d, f) and Linear(f, d): 2·d·f MACs per token.
int64_t ffn_macs_per_token(int64_t d_model, int64_t ffn);

// Every layer's mixer and FFN plus the output projection onto the vocabulary (d·vocab):
// the whole model's MACs for one token at context T.
int64_t model_macs_per_token(const ModelConfig& config, int64_t context);

}  // namespace hsm
