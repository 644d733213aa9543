#include "hsm/mixer_kind.h"

#include <stdexcept>

namespace hsm {

const std::vector<MixerInfo>& all_mixers() {
  // FFN widths and head counts as in HSM Table 1.
  static const std::vector<MixerInfo> mixers = {
      {MixerKind::Attention, "attn", "GPT softmax attention", 8, 512, true},
      {MixerKind::ShiftAB, "hsm_ab", "HSM (a,b)", 1, 1024, false},
      {MixerKind::ShiftABVector, "hsm_ab_vec", "HSM (a,b) vector", 1, 1024, false},
      {MixerKind::ShiftABMatrix, "hsm_AB", "HSM (A,B)", 1, 640, false},
      {MixerKind::ShiftGate1, "hsm_gate1", "HSM single input gate", 1, 768, false},
      {MixerKind::ShiftGate2, "hsm_gate2", "HSM double input gate", 4, 960, true},
      {MixerKind::ShiftFusion, "hsm_fusion", "HSM fusion", 4, 960, true},
      {MixerKind::ShiftABMultihead, "hsm_ab_mh", "HSM (a,b) multihead", 8, 1024, true},
      {MixerKind::ShiftABMultiheadExt, "hsm_ab_mh_ext", "HSM (a,b) multihead-ext", 8, 1024, true},
      // EX (Extractors): EX §5, FFN 512 and one head as in EX Table 1.
      {MixerKind::ExtractorSHE, "she", "EX super high-performance Extractor", 1, 512, false},
      {MixerKind::ExtractorHE, "he", "EX higher-performance Extractor", 1, 512, false},
      {MixerKind::ExtractorWE, "we", "EX worthwhile Extractor", 1, 512, false},
      {MixerKind::ExtractorME, "me", "EX minimalist Extractor", 1, 512, false},
  };
  return mixers;
}

const MixerInfo& mixer_info(const std::string& id) {
  for (const auto& m : all_mixers())
    if (id == m.id) return m;
  std::string known;
  for (const auto& m : all_mixers()) known += std::string(known.empty() ? "" : ", ") + m.id;
  throw std::invalid_argument("unknown mixer '" + id + "' (known: " + known + ")");
}

const MixerInfo& mixer_info(MixerKind kind) {
  for (const auto& m : all_mixers())
    if (m.kind == kind) return m;
  throw std::logic_error("mixer kind without an entry in all_mixers()");
}

bool is_mixer_id(const std::string& id) {
  for (const auto& m : all_mixers())
    if (id == m.id) return true;
  return false;
}

bool is_extractor(MixerKind kind) {
  return kind == MixerKind::ExtractorSHE || kind == MixerKind::ExtractorHE || kind == MixerKind::ExtractorWE ||
         kind == MixerKind::ExtractorME;
}

bool is_shift_mixer(MixerKind kind) { return kind != MixerKind::Attention && !is_extractor(kind); }

std::vector<int64_t> layer_shifts(MixerKind kind, int64_t layer, int64_t heads) {
  switch (kind) {
    case MixerKind::Attention:
    case MixerKind::ExtractorSHE:
    case MixerKind::ExtractorHE:
    case MixerKind::ExtractorWE:
    case MixerKind::ExtractorME:
      return {};
    case MixerKind::ShiftABMultihead: {
      std::vector<int64_t> s;
      for (int64_t j = 0; j < heads; ++j) s.push_back(int64_t{1} << j);
      return s;
    }
    case MixerKind::ShiftABMultiheadExt: {
      // Rotating permutation of HSM §7: layer l, head j shifts by 2^((j + l) mod H).
      std::vector<int64_t> s;
      for (int64_t j = 0; j < heads; ++j) s.push_back(int64_t{1} << ((j + layer) % heads));
      return s;
    }
    default:
      return {int64_t{1} << layer};
  }
}

}  // namespace hsm
