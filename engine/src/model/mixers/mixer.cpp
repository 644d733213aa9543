#include "model/mixers/mixer.h"

#include "model/mixers/attention.h"
#include "model/mixers/gated_mlp.h"
#include "model/mixers/linear_attention.h"
#include "model/mixers/qk_source_attention.h"
#include "model/mixers/extractors.h"
#include "model/mixers/shift.h"

namespace hsm {

void init_linear(torch::nn::Linear& linear, double std) {
  torch::NoGradGuard no_grad;
  linear->weight.normal_(0.0, std);
  if (linear->bias.defined()) linear->bias.zero_();
}

std::shared_ptr<MixerImpl> make_mixer(const LayerSpec& spec, int64_t layer, int64_t d, double dropout,
                                      int64_t context) {
  const MixerKind kind = mixer_info(spec.mixer).kind;
  const auto shifts = layer_shifts(kind, layer, spec.heads);
  switch (kind) {
    case MixerKind::Attention:
      return std::make_shared<AttentionImpl>(d, spec.heads, dropout);
    case MixerKind::ShiftAB:
      return std::make_shared<ShiftABImpl>(d, shifts[0]);
    case MixerKind::ShiftABVector:
      return std::make_shared<ShiftABVectorImpl>(d, shifts[0]);
    case MixerKind::ShiftABMatrix:
      return std::make_shared<ShiftABMatrixImpl>(d, shifts[0]);
    case MixerKind::ShiftGate1:
      return std::make_shared<ShiftGate1Impl>(d, shifts[0]);
    case MixerKind::ShiftGate2:
      return std::make_shared<ShiftGate2Impl>(d, spec.heads, shifts[0]);
    case MixerKind::ShiftFusion:
      return std::make_shared<ShiftFusionImpl>(d, spec.heads, shifts[0]);
    case MixerKind::ShiftABMultihead:
    case MixerKind::ShiftABMultiheadExt:
      return std::make_shared<ShiftABMultiheadImpl>(kind, d, shifts);
    case MixerKind::GatedMlp:
      return std::make_shared<GatedMlpImpl>(d);
    case MixerKind::Taylor:
    case MixerKind::NonApprox:
      return std::make_shared<LinearAttentionImpl>(kind, d, spec.heads);
    case MixerKind::RndEmbQK:
    case MixerKind::FixedSeqQK:
    case MixerKind::StaticEmbQK:
      return std::make_shared<QkSourceAttentionImpl>(kind, d, spec.heads, dropout);
    case MixerKind::ExtractorSHE:
    case MixerKind::ExtractorHE:
    case MixerKind::ExtractorWE:
    case MixerKind::ExtractorME:
      return make_extractor(kind, d, context);
  }
  throw std::logic_error("make_mixer: unhandled mixer " + spec.mixer);
}

}  // namespace hsm
