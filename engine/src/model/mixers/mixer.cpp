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

void MixerImpl::set_zeroed_heads(const std::vector<int64_t>& heads) {
  for (int64_t h : heads)
    if (h < 0 || h >= separable_heads())
      throw std::invalid_argument("head " + std::to_string(h) + " cannot be knocked out: this " +
                                  mixer_info(kind).id + " layer has " +
                                  (separable_heads() > 0 ? "heads 0.." + std::to_string(separable_heads() - 1)
                                                         : std::string("no heads apart (knock the layer out whole)")));
  zeroed_heads_ = heads;
}

torch::Tensor MixerImpl::zero_heads(const torch::Tensor& y, int64_t dim) const {
  if (zeroed_heads_.empty()) return y;
  const auto index = torch::tensor(zeroed_heads_, torch::TensorOptions().dtype(torch::kLong).device(y.device()));
  return y.index_fill(dim, index, 0.0);
}

std::shared_ptr<MixerImpl> make_mixer(const LayerSpec& spec, int64_t layer, int64_t d, double dropout,
                                      int64_t context) {
  const MixerKind kind = mixer_info(spec.mixer).kind;
  const auto shifts = layer_shifts(kind, layer, spec.heads);
  const int64_t h = spec.heads;
  // The one place a mixer's module is chosen; everything else about it is its registry entry
  // (arch/mixer_kind.cpp). No default: the compiler names a kind without a module.
  switch (kind) {
    case MixerKind::Attention:
      return std::make_shared<AttentionImpl>(kind, d, h, dropout);
    case MixerKind::ShiftAB:
      return std::make_shared<ShiftABImpl>(kind, d, shifts[0]);
    case MixerKind::ShiftABVector:
      return std::make_shared<ShiftABVectorImpl>(kind, d, shifts[0]);
    case MixerKind::ShiftABMatrix:
      return std::make_shared<ShiftABMatrixImpl>(kind, d, shifts[0]);
    case MixerKind::ShiftGate1:
      return std::make_shared<ShiftGate1Impl>(kind, d, shifts[0]);
    case MixerKind::ShiftGate2:
      return std::make_shared<ShiftGate2Impl>(kind, d, h, shifts[0]);
    case MixerKind::ShiftFusion:
      return std::make_shared<ShiftFusionImpl>(kind, d, h, shifts[0]);
    case MixerKind::ShiftABMultihead:
    case MixerKind::ShiftABMultiheadExt:
      return std::make_shared<ShiftABMultiheadImpl>(kind, d, shifts);
    case MixerKind::GatedMlp:
      return std::make_shared<GatedMlpImpl>(kind, d);
    case MixerKind::Taylor:
      return std::make_shared<LinearAttentionImpl>(kind, LinearAttentionImpl::Form::kTaylor, d, h);
    case MixerKind::NonApprox:
      return std::make_shared<LinearAttentionImpl>(kind, LinearAttentionImpl::Form::kNonApprox, d, h);
    case MixerKind::RndEmbQK:
    case MixerKind::FixedSeqQK:
    case MixerKind::StaticEmbQK:
      return std::make_shared<QkSourceAttentionImpl>(kind, d, h, dropout);
    case MixerKind::ExtractorSHE:
      return std::make_shared<SheImpl>(kind, d, context);
    case MixerKind::ExtractorHE:
      return std::make_shared<HeImpl>(kind, d, context);
    case MixerKind::ExtractorWE:
      return std::make_shared<WeImpl>(kind, d, context);
    case MixerKind::ExtractorME:
      return std::make_shared<MeImpl>(kind, d, context);
  }
  throw std::logic_error("make_mixer: unhandled mixer " + spec.mixer);
}

}  // namespace hsm
