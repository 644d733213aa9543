// Cost per token (cost.h): the formulas at hand-computed points, attention's growth with
// the context against the constant HSM mixers, and the whole-model sum.
#include <gtest/gtest.h>

#include <stdexcept>

#include "hsm/cost.h"
#include "hsm/mixer_kind.h"
#include "hsm/presets.h"

using namespace hsm;

TEST(Cost, FormulasAtTheHandComputedPoint) {
  const int64_t d = 256, T = 128;
  EXPECT_EQ(mixer_macs_per_token("attn", d, 8, T), 4 * 256 * 256 + 2 * 128 * 256);
  EXPECT_EQ(mixer_macs_per_token("hsm_ab", d, 1, T), 512);
  EXPECT_EQ(mixer_macs_per_token("hsm_ab_vec", d, 1, T), 512);
  EXPECT_EQ(mixer_macs_per_token("hsm_ab_mh", d, 8, T), 512);
  EXPECT_EQ(mixer_macs_per_token("hsm_AB", d, 1, T), 3 * 256 * 256);
  EXPECT_EQ(mixer_macs_per_token("hsm_gate1", d, 1, T), 2 * 256 * 256 + 512);
  EXPECT_EQ(mixer_macs_per_token("hsm_gate2", d, 4, T), 4 * (2 * 64 * 64) + 512);
  EXPECT_EQ(mixer_macs_per_token("hsm_fusion", d, 4, T), 4 * (2 * 64 * 64 + 64 * 64));
  EXPECT_EQ(ffn_macs_per_token(256, 1024), 2 * 256 * 1024);
}

TEST(Cost, AttentionGrowsWithContextHsmDoesNot) {
  for (const MixerInfo& m : all_mixers()) {
    const int64_t c8 = mixer_macs_per_token(m.id, 256, m.default_heads, 8);
    const int64_t c1024 = mixer_macs_per_token(m.id, 256, m.default_heads, 1024);
    // Softmax over the context: attention and DA's *_qk variants (qk_source other than kSelf).
    if (m.kind == MixerKind::Attention || qk_source(m.kind) != QkSource::kSelf)
      EXPECT_EQ(c1024 - c8, 2 * (1024 - 8) * 256) << m.id;
    else if (is_extractor(m.kind))  // they read every earlier input too: test_extractors.cpp
      EXPECT_GT(c1024, c8) << m.id;
    else
      EXPECT_EQ(c1024, c8) << m.id;
  }
  EXPECT_THROW(mixer_macs_per_token("nope", 256, 1, 8), std::invalid_argument);
  EXPECT_THROW(mixer_macs_per_token("attn", 256, 8, 0), std::invalid_argument);
}

TEST(Cost, ModelSumsItsLayers) {
  const ModelConfig c = load_preset("hybrid_0_6");
  int64_t expect = c.d_model * c.vocab_size;
  for (const LayerSpec& l : c.layers)
    expect += mixer_macs_per_token(l.mixer, c.d_model, l.heads, 64) + 2 * c.d_model * l.ffn;
  EXPECT_EQ(model_macs_per_token(c, 64), expect);
  EXPECT_LT(model_macs_per_token(load_preset("hsm_ab"), 128), model_macs_per_token(load_preset("gpt"), 128));
}
