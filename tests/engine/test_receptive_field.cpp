// Receptive fields (HSM §3) from the layer list alone.
#include <gtest/gtest.h>

#include "hsm/presets.h"
#include "hsm/receptive_field.h"

using namespace hsm;

TEST(ReceptiveField, HsmAbDoublesPerLayerAndReachesAll128) {
  const auto rf = receptive_field(load_preset("hsm_ab"));
  for (size_t l = 0; l < 7; ++l) EXPECT_EQ(rf.coverage(l), int64_t{2} << l) << "layer " << l;
  // One path per offset: the binary digits of k say which layers took the shifted branch.
  for (int64_t k = 0; k < 128; ++k) EXPECT_EQ(rf.paths[6][k], 1) << k;
}

TEST(ReceptiveField, OffsetsAreClippedAtSequenceStart) {
  const auto rf = receptive_field(load_preset("hsm_ab"));
  EXPECT_EQ(rf.offsets(1, 128), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(rf.offsets(1, 2), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(rf.offsets(2, 5), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(rf.offsets(6, 0), (std::vector<int64_t>{0}));
}

TEST(ReceptiveField, AttentionSeesEverything) {
  const auto rf = receptive_field(load_preset("gpt"));
  for (size_t l = 0; l < 7; ++l) EXPECT_EQ(rf.coverage(l), 128);
  const auto hybrid = receptive_field(load_preset("hybrid_0_6"));
  EXPECT_EQ(hybrid.coverage(0), 2);
  EXPECT_EQ(hybrid.coverage(1), 128);
}

TEST(ReceptiveField, MultiheadUnionOfShifts) {
  const auto rf = receptive_field(load_preset("hsm_ab_mh"));
  // Shifts 1..64 (128 falls outside the context) in one layer: subset sums of one use each.
  EXPECT_EQ(rf.coverage(0), 8);  // offsets 0,1,2,4,...,64
  EXPECT_EQ(rf.coverage(6), 128);
  const auto ext = receptive_field(load_preset("hsm_ab_mh_ext"));
  EXPECT_EQ(ext.coverage(6), 128);
}

TEST(ReceptiveField, SingleShiftMatchesRecurrence) {
  // RF_l = RF_{l-1} ∪ (RF_{l-1} + 2^l), for the gate and fusion variants too.
  for (const char* name : {"hsm_ab_vec", "hsm_AB", "hsm_gate1", "hsm_gate2", "hsm_fusion"}) {
    const auto rf = receptive_field(load_preset(name));
    std::vector<bool> expected(128, false);
    expected[0] = true;
    for (size_t l = 0; l < 7; ++l) {
      auto next = expected;
      for (int64_t k = int64_t{1} << l; k < 128; ++k) next[k] = next[k] || expected[k - (int64_t{1} << l)];
      expected = next;
      EXPECT_EQ(rf.reachable[l], expected) << name << " layer " << l;
    }
  }
}
