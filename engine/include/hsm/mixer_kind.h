#pragma once
// The token mixers a layer can use (HSM §3-§4; docs/adding-a-mixer.md) and the facts about each one that the
// rest of the engine needs without building a model: heads, shifts, linearity.
#include <cstdint>
#include <string>
#include <vector>

namespace hsm {

enum class MixerKind {
  Attention,        // "attn": causal multi-head softmax attention
  ShiftAB,          // "hsm_ab": y = a·x + b·x_shifted, scalars (HSM eq. 1)
  ShiftABVector,    // "hsm_ab_vec": y = a⊙x + b⊙x_shifted, a, b ∈ R^d (eq. 2)
  ShiftABMatrix,    // "hsm_AB": y = A x + B x_shifted + bias (eq. 3)
  ShiftGate1,       // "hsm_gate1": gate from x alone (eq. 4)
  ShiftGate2,       // "hsm_gate2": gate from x and x_shifted, per head (eq. 5)
  ShiftFusion,      // "hsm_fusion": mlp(concat(x, x_shifted)) per head (eq. 6)
  ShiftABMultihead,     // "hsm_ab_mh": head j shifts by 2^j in every layer (§4)
  ShiftABMultiheadExt,  // "hsm_ab_mh_ext": layer l, head j shifts by 2^((j+l) mod H) (§7)

  // DA (Deconstructing Attention) §3, docs/mixers.md
  GatedMlp,     // "mlp": FC_Dn(SiLU(FC_Gt(x)) ⊙ FC_Up(x)), no token mixing (eq. 4-5)
  Taylor,       // "taylor": 2nd-order Taylor linear attention (eq. 6, appx. I eq. 14-17)
  NonApprox,    // "nonapprox": softmax over j <= i of sum(SiLU(q_j) ⊙ k_j)/√hd (eq. 7-8, 18)
  RndEmbQK,     // "rnd_emb_qk": Q, K from a fixed random sequence through the blocks below (eq. 9-10)
  FixedSeqQK,   // "fixed_seq_qk": Q, K from a fixed text sequence through the blocks below (eq. 11-12)
  StaticEmbQK,  // "static_emb_qk": Q, K from the input embeddings of the tokens (eq. 13)
  // EX (Extractors): causal position-weighted sums over the last l = context inputs (EX §5).
  ExtractorSHE,  // "she": Σ_j x_j W_{i-j+1} (l matrices), adjustment, output (eq. 23–25)
  ExtractorHE,   // "he": x W_in, per-channel weights w_k, adjustment, output (eq. 27, 28, 24, 25)
  ExtractorWE,   // "we": per-channel weights w_k on x, adjustment, output (eq. 26, 24, 25)
  ExtractorME,   // "me": scalar weights w_k on x, nothing else (eq. 29)
};

// Where a layer's queries and keys come from (DA §3.4-3.5). kSelf: the layer's own input.
enum class QkSource { kSelf, kRandom, kFixedText, kEmbedding };

// The paper a mixer comes from, and so which family of behaviour it shares.
enum class MixerFamily {
  kAttention,               // standard softmax attention (GPT)
  kShift,                   // HSM Table 1: mixes x_t with x_{t−2^l}
  kDeconstructedAttention,  // DA §3: attention with a part replaced
  kExtractor,               // EX §5: causal position-weighted sums over the last `context` inputs
};

// Which matrix the Diagnostics view shows for a mixer's layer (docs/diagnostics.md):
//   kAttention: the softmax weights of an attention head (rows sum to 1);
//   kLinear:    the exact token-to-token map of a mixer that is linear in x, rows |M|/Σ|M|;
//   kJacobian:  ‖∂y_i/∂x_k‖_F of a non-linear mixer at the prompt's input, rows |M|/Σ|M|.
enum class MatrixKind { kAttention, kLinear, kJacobian };

// Which formula of the hand-written fp32 decoder (inference/fast_decoder.cpp) computes a
// mixer's step at batch 1, reading the module's weights by their parameter names (in
// brackets). kNone: the decoder does not serve the mixer, and decoding runs LibTorch's step.
enum class FastDecodeForm {
  kNone,
  kAttention,       // softmax attention with a key/value cache (qkv, proj)
  kShiftWeighted,   // y = a·x + b·xs, a and b one value, one per channel or one per head (a, b)
  kShiftMatrix,     // y = proj(A x + B xs + bias) (A, B, bias, proj)
  kShiftGate,       // g = tanh(fc2(relu(fc1(x)))), y = g·x + (1 − g)·xs (fc1, fc2)
  kShiftHeadGate,   // per head: g = tanh(W [x_h; xs_h] + c), y_h = g·x_h + (1 − g)·xs_h (weight, bias)
  kShiftHeadFusion, // per head: y_h = W2 relu(W1 [x_h; xs_h] + b1) + b2 (w1, b1, w2, b2)
};

// Everything the engine, the CLI and the studio know of a mixer without building it: one
// entry per mixer in the registry (arch/mixer_kind.cpp), so a new mixer is described in one
// place (docs/adding-a-mixer.md). Sizes: d = d_model, h = heads, T = context, B = batch.
struct MixerInfo {
  MixerKind kind;
  const char* id;        // the name used in configs and on the command line
  const char* title;     // the paper's name
  const char* equation;  // where the formula is: "HSM eq. 1", "EX eq. 23–25"
  MixerFamily family;
  int64_t default_heads;  // heads in the paper's configuration
  int64_t paper_ffn;      // FFN width the paper pairs with this mixer (HSM Table 1)
  bool multi_head;        // takes a head count other than 1
  // Output t reads every input j <= t (attention, the DA variants but mlp, the extractors);
  // false for mlp (only t itself) and the shift mixers (their shifts).
  bool reads_all_earlier;
  QkSource qk_source;
  MatrixKind matrix;
  // What the Diagnostics view adds to the matrix kind's name for this mixer ("" for nothing).
  const char* matrix_note;
  // Exact trainable parameters (tested against the LibTorch module).
  int64_t (*params)(int64_t d, int64_t h, int64_t T);
  // MACs for one new token at context T (hsm/cost.h has the table).
  int64_t (*macs_per_token)(int64_t d, int64_t h, int64_t T);
  // Floats one layer at stack position `layer` keeps between decoding steps.
  int64_t (*cache_floats)(int64_t d, int64_t h, int64_t layer, int64_t T, int64_t B);
  // The shifts of a layer at stack position `layer`: one per head (multihead shift mixers),
  // 2^layer (the other shift mixers), none (every other family).
  std::vector<int64_t> (*shifts)(int64_t layer, int64_t h);
  bool shift_per_head;  // the shifts are 2^j per head j, so at most 62 heads
  FastDecodeForm fast_decode;  // kNone (the default) until the fast decoder has the mixer's formula
  // The formula in plain text (the paper's names), for the studio's "What am I looking at?".
  const char* formula = "";
};

// Every mixer, in the order of HSM Table 1.
const std::vector<MixerInfo>& all_mixers();
// Looks a mixer up by id; throws std::invalid_argument listing the known ids.
const MixerInfo& mixer_info(const std::string& id);
const MixerInfo& mixer_info(MixerKind kind);
bool is_mixer_id(const std::string& id);

// True for every HSM-family mixer (the shift mixers of HSM Table 1; not attention, not the
// DA mixers, not the extractors).
bool is_shift_mixer(MixerKind kind);
// True for the Deconstructing Attention mixers (mlp, taylor, nonapprox, *_qk).
bool is_da_mixer(MixerKind kind);
// True for the Extractors (she, he, we, me): every layer reads the last `context` inputs.
bool is_extractor(MixerKind kind);
// True when output t of the mixer reads every input j <= t (attention, the DA variants but
// mlp, and the extractors, whose window is the whole context); false for mlp (only t itself)
// and the shift mixers (their shifts, layer_shifts()).
bool reads_all_earlier(MixerKind kind);
QkSource qk_source(MixerKind kind);

// Feature dimension of the taylor mixer's map φ per head (the one place this choice lives).
// φ(x) = [1, x, x⊗x/√2] (Arora et al. "Based") on x = q/hd^¼ resp. k/hd^¼, so
// φ(q)·φ(k) = 1 + s + s²/2 with s = q·k/√hd: the 2nd-order Taylor polynomial of exp(s),
// exactly, as DA eq. 6 asks. We keep the full second-order term, with no feature projection
// (Based projects q, k to 16 dims first): a projection would add parameters (DA matches
// attention's count strictly) and approximate the kernel a second time. x⊗x is symmetric, so
// its hd(hd+1)/2 distinct entries carry it (x_i²/√2 on the diagonal, x_i·x_j for i < j) with
// the same dot product: D = 1 + hd + hd(hd+1)/2 (hd = 32: 561; the decoding state is
// D × (hd + 1) floats per head, constant in the context).
int64_t taylor_feature_dim(int64_t head_dim);

// The shift(s) a layer at stack position `layer` (0-based) uses: one per head for the
// multihead variants, a single entry 2^layer for the other HSM mixers, empty for attention,
// the DA mixers and the extractors.
std::vector<int64_t> layer_shifts(MixerKind kind, int64_t layer, int64_t heads);

}  // namespace hsm
