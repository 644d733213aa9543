#pragma once
// The token mixers a layer can use (SPEC §3.1) and the facts about each one that the
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
  // EX (Extractors): causal position-weighted sums over the last l = context inputs (EX §5).
  ExtractorSHE,  // "she": Σ_j x_j W_{i-j+1} (l matrices), adjustment, output (eq. 23–25)
  ExtractorHE,   // "he": x W_in, per-channel weights w_k, adjustment, output (eq. 27, 28, 24, 25)
  ExtractorWE,   // "we": per-channel weights w_k on x, adjustment, output (eq. 26, 24, 25)
  ExtractorME,   // "me": scalar weights w_k on x, nothing else (eq. 29)
};

struct MixerInfo {
  MixerKind kind;
  const char* id;           // the name used in configs and on the command line
  const char* title;        // the paper's name
  int64_t default_heads;    // heads in the paper's configuration
  int64_t paper_ffn;        // FFN width the paper pairs with this mixer (HSM Table 1)
  bool multi_head;          // takes a head count other than 1
};

// Every mixer, in the order of HSM Table 1.
const std::vector<MixerInfo>& all_mixers();
// Looks a mixer up by id; throws std::invalid_argument listing the known ids.
const MixerInfo& mixer_info(const std::string& id);
const MixerInfo& mixer_info(MixerKind kind);
bool is_mixer_id(const std::string& id);

// True for every HSM-family mixer (not attention, not the extractors).
bool is_shift_mixer(MixerKind kind);
// True for the Extractors (she, he, we, me): every layer reads the last `context` inputs.
bool is_extractor(MixerKind kind);

// The shift(s) a layer at stack position `layer` (0-based) uses: one per head for the
// multihead variants, a single entry 2^layer for the other HSM mixers, empty for attention
// and the extractors (they read every earlier position, as attention does).
std::vector<int64_t> layer_shifts(MixerKind kind, int64_t layer, int64_t heads);

}  // namespace hsm
