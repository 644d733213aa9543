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
      // DA (Deconstructing Attention): 8 heads like attn, the paper's FFN 512 (docs/mixers.md)
      {MixerKind::GatedMlp, "mlp", "DA gated MLP (no token mixing)", 1, 512, false},
      {MixerKind::Taylor, "taylor", "DA approximate (2nd-order Taylor)", 8, 512, true},
      {MixerKind::NonApprox, "nonapprox", "DA non-approximate", 8, 512, true},
      {MixerKind::RndEmbQK, "rnd_emb_qk", "DA RndEmbQK", 8, 512, true},
      {MixerKind::FixedSeqQK, "fixed_seq_qk", "DA FixedSeqQK", 8, 512, true},
      {MixerKind::StaticEmbQK, "static_emb_qk", "DA StaticEmbQK", 8, 512, true},
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

bool is_da_mixer(MixerKind kind) {
  switch (kind) {
    case MixerKind::GatedMlp:
    case MixerKind::Taylor:
    case MixerKind::NonApprox:
    case MixerKind::RndEmbQK:
    case MixerKind::FixedSeqQK:
    case MixerKind::StaticEmbQK:
      return true;
    default:
      return false;
  }
}

bool is_extractor(MixerKind kind) {
  return kind == MixerKind::ExtractorSHE || kind == MixerKind::ExtractorHE || kind == MixerKind::ExtractorWE ||
         kind == MixerKind::ExtractorME;
}

bool is_shift_mixer(MixerKind kind) {
  return kind != MixerKind::Attention && !is_da_mixer(kind) && !is_extractor(kind);
}

bool reads_all_earlier(MixerKind kind) {
  return kind == MixerKind::Attention || is_extractor(kind) || (is_da_mixer(kind) && kind != MixerKind::GatedMlp);
}

QkSource qk_source(MixerKind kind) {
  switch (kind) {
    case MixerKind::RndEmbQK:
      return QkSource::kRandom;
    case MixerKind::FixedSeqQK:
      return QkSource::kFixedText;
    case MixerKind::StaticEmbQK:
      return QkSource::kEmbedding;
    default:
      return QkSource::kSelf;
  }
}

int64_t taylor_feature_dim(int64_t hd) { return 1 + hd + hd * (hd + 1) / 2; }

std::vector<int64_t> layer_shifts(MixerKind kind, int64_t layer, int64_t heads) {
  switch (kind) {
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
      if (!is_shift_mixer(kind)) return {};  // attention, the DA mixers and the extractors shift nothing
      return {int64_t{1} << layer};
  }
}

}  // namespace hsm
