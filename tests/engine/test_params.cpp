// Parameter counts of the paper's presets and FFN matching (HSM §6.1).
#include <gtest/gtest.h>

#include <cmath>

#include "hsm/params.h"
#include "hsm/presets.h"

using namespace hsm;

TEST(Params, GptReferenceByHand) {
  // 7 × (attention 4·256² + 4·256, FFN 2·256·512 + 512 + 256, 2 LayerNorms 4·256)
  // + token 5000·256 + position 128·256 + final LayerNorm 2·256.
  const int64_t layer = (4 * 256 * 256 + 4 * 256) + (2 * 256 * 512 + 512 + 256) + 4 * 256;
  const int64_t expected = 7 * layer + 5000 * 256 + 128 * 256 + 2 * 256;
  EXPECT_EQ(count_params(load_preset("gpt")).total(), expected);
  EXPECT_EQ(expected, 5003008);
}

TEST(Params, HsmAbByHand) {
  const auto pc = count_params(load_preset("hsm_ab"));
  EXPECT_EQ(pc.layers[0].mixer, 2);
  EXPECT_EQ(pc.layers[0].ffn, 2 * 256 * 1024 + 1024 + 256);
}

TEST(Params, EveryPaperPresetIsNear5Point1Million) {
  // HSM §6.1: every version is kept "as close as possible to 5.1 million parameters".
  for (const auto& name : preset_names()) {
    if (name.rfind("ex_", 0) == 0) continue;  // EX Table 1's presets: test_extractors.cpp
    if (name == kStarterPreset) continue;     // not the paper's: test_starter.cpp
    const int64_t n = count_params(load_preset(name)).total();
    EXPECT_LT(std::abs(n - 5.1e6) / 5.1e6, 0.03) << name << ": " << n;
  }
}

TEST(Params, PerLayerSumsToTotal) {
  const auto pc = count_params(load_preset("hybrid_0_6"));
  int64_t sum = pc.token_embedding + pc.position_embedding + pc.final_norm;
  for (const auto& l : pc.layers) sum += l.mixer + l.ffn + l.norms;
  EXPECT_EQ(sum, pc.total());
  EXPECT_EQ(pc.layers[0].mixer, 2);
  EXPECT_EQ(pc.layers[1].mixer, 4 * 256 * 256 + 4 * 256);
}

TEST(FfnMatch, ReproducesThePapersWidths) {
  // Matching the HSM presets to the GPT reference's size gives back (close to) Table 1's widths.
  const int64_t gpt = count_params(load_preset("gpt")).total();
  EXPECT_EQ(match_ffn(load_preset("hsm_ab"), gpt).ffn, 1024);
  EXPECT_EQ(match_ffn(load_preset("hsm_ab_vec"), gpt).ffn, 1024);
  EXPECT_EQ(match_ffn(load_preset("hsm_gate1"), gpt).ffn, 768);
  EXPECT_EQ(match_ffn(load_preset("hsm_gate2"), gpt).ffn, 960);
  EXPECT_EQ(match_ffn(load_preset("hsm_AB"), gpt).ffn, 640);
}

TEST(FfnMatch, ChoosesTheClosestMultipleOf64) {
  const auto base = load_preset("hsm_ab");
  for (int64_t target : {2'000'000LL, 5'100'000LL, 9'000'000LL}) {
    const FfnMatch m = match_ffn(base, target);
    EXPECT_EQ(m.ffn % 64, 0);
    EXPECT_EQ(m.params, count_params(m.config).total());
    for (int64_t other : {m.ffn - 64, m.ffn + 64}) {
      if (other < 64) continue;
      ModelConfig c = base;
      for (auto& l : c.layers) l.ffn = other;
      EXPECT_LE(std::llabs(m.params - target), std::llabs(count_params(c).total() - target)) << target;
    }
  }
}

TEST(FfnMatch, HybridKeepsAttentionWidths) {
  const FfnMatch m = match_ffn(load_preset("hybrid_0_6"), 6'000'000);
  EXPECT_EQ(m.matched_layers, (std::vector<size_t>{0, 6}));
  for (int l = 1; l < 6; ++l) EXPECT_EQ(m.config.layers[l].ffn, 512);
  EXPECT_EQ(m.config.layers[0].ffn, m.ffn);
}

TEST(FfnMatch, RejectsNonPositiveTarget) {
  EXPECT_THROW(match_ffn(load_preset("hsm_ab"), 0), std::invalid_argument);
}
