#include "hsm/cost.h"

#include <algorithm>
#include <stdexcept>

#include "hsm/mixer_kind.h"
#include "hsm/params.h"

namespace hsm {

int64_t mixer_macs_per_token(const std::string& mixer, int64_t d, int64_t heads, int64_t T) {
  if (d <= 0 || heads <= 0 || T <= 0)
    throw std::invalid_argument("mixer cost: d_model, heads and context must be positive (got d " +
                                std::to_string(d) + ", heads " + std::to_string(heads) + ", context " +
                                std::to_string(T) + ")");
  switch (mixer_info(mixer).kind) {
    case MixerKind::Attention:
      return 4 * d * d + 2 * T * d;
    case MixerKind::ShiftAB:
    case MixerKind::ShiftABVector:
    case MixerKind::ShiftABMultihead:
    case MixerKind::ShiftABMultiheadExt:
      return 2 * d;
    case MixerKind::ShiftABMatrix:
      return 3 * d * d;
    case MixerKind::ShiftGate1:
      return 2 * d * d + 2 * d;
    case MixerKind::ShiftGate2:
      return 2 * d * d / heads + 2 * d;
    case MixerKind::ShiftFusion:
      return 3 * d * d / heads;
    case MixerKind::GatedMlp:
      return 3 * d * gated_mlp_width(d);
    case MixerKind::Taylor:
      return 4 * d * d + 2 * heads * taylor_feature_dim(d / heads) * (d / heads + 1);
    case MixerKind::NonApprox:
      return 4 * d * d + 3 * d;
    case MixerKind::RndEmbQK:
    case MixerKind::FixedSeqQK:
      return 2 * d * d + 2 * T * d;
    case MixerKind::StaticEmbQK:
      return 4 * d * d + 2 * T * d;
    // EX Tables 5–6 (inference, a new token at sequence length T): the multiplication rows,
    // i.e. the summand at t = T of Tables 3–4. The extraction reads all T earlier inputs.
    case MixerKind::ExtractorSHE:
      return T * d * d + 2 * d * d + d;  // Σ x_j W_k, adjustment x W_adj ⊙, output W_out
    case MixerKind::ExtractorHE:
      return T * d + 3 * d * d + d;  // x W_in_ext, Σ x_j ⊙ w_k, adjustment, output
    case MixerKind::ExtractorWE:
      return T * d + 2 * d * d + d;
    case MixerKind::ExtractorME:
      return T * d;
  }
  return 0;
}

int64_t mixer_cache_floats(const std::string& mixer, int64_t d, int64_t heads, int64_t layer, int64_t T, int64_t B) {
  mixer_macs_per_token(mixer, d, heads, T);  // validates the sizes and the id
  const int64_t hd = d / heads;
  const MixerKind kind = mixer_info(mixer).kind;
  switch (kind) {
    case MixerKind::Attention:
    case MixerKind::StaticEmbQK:
      return 2 * B * T * d;
    case MixerKind::RndEmbQK:
    case MixerKind::FixedSeqQK:
      return B * T * d + 2 * T * d;
    case MixerKind::Taylor:
      return B * heads * taylor_feature_dim(hd) * (hd + 1);
    case MixerKind::NonApprox:
      return B * heads * (hd + 2);
    case MixerKind::GatedMlp:
      return 0;
    default: {
      int64_t ring = 0;
      for (int64_t s : layer_shifts(kind, layer, heads)) ring = std::max(ring, s);
      return B * ring * d;
    }
  }
}

int64_t ffn_macs_per_token(int64_t d, int64_t ffn) { return 2 * d * ffn; }

int64_t model_macs_per_token(const ModelConfig& c, int64_t T) {
  validate(c);
  int64_t total = c.d_model * c.vocab_size;
  for (const LayerSpec& l : c.layers)
    total += mixer_macs_per_token(l.mixer, c.d_model, l.heads, T) + ffn_macs_per_token(c.d_model, l.ffn);
  return total;
}

}  // namespace hsm
