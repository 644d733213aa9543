// Incremental decoding (KV cache for attention, shift ring for HSM) gives the same logits
// as recomputing the whole sequence, for every mixer and the hybrids.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "hsm/mixer_kind.h"
#include "hsm/presets.h"
#include "model/model.h"
#include "model_test_util.h"

using namespace hsm;

namespace {

ModelConfig config_with(const std::vector<LayerSpec>& layers) {
  ModelConfig c;
  c.vocab_size = 37;
  c.d_model = 16;
  c.context = 24;
  c.dropout = 0.0;
  c.layers = layers;
  return c;
}

void expect_cached_equals_uncached(const ModelConfig& c, const std::string& what) {
  Gpt model = test::make_model(c);  // fp64, the (a,b) weights off their equal initial values
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, c.vocab_size, {2, c.context}, torch::kLong);
  auto full = model->forward(idx);  // [2, T, V]
  DecodeState state;
  for (int64_t t = 0; t < c.context; ++t) {
    auto step_logits = model->step(idx.select(1, t), state);  // [2, V]
    ASSERT_TRUE(torch::allclose(step_logits, full.select(1, t), 1e-9, 1e-9))
        << what << ": position " << t << " max diff " << (step_logits - full.select(1, t)).abs().max().item<double>();
  }
  EXPECT_THROW(model->step(idx.select(1, 0), state), std::logic_error);  // context full

  // A batched prefill of any prefix leaves the same caches as stepping through it.
  for (int64_t prefix : {int64_t{1}, int64_t{7}, c.context - 1}) {
    DecodeState st;
    auto first = model->prefill(idx.narrow(1, 0, prefix), st);
    ASSERT_TRUE(torch::allclose(first, full.select(1, prefix - 1), 1e-9, 1e-9)) << what << " prefix " << prefix;
    for (int64_t t = prefix; t < c.context; ++t)
      ASSERT_TRUE(torch::allclose(model->step(idx.select(1, t), st), full.select(1, t), 1e-9, 1e-9))
          << what << ": prefix " << prefix << ", position " << t;
  }
}

class CachedDecoding : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(CachedDecoding, EqualsFullForward) {
  const std::string mixer = GetParam();
  const int64_t heads = mixer_info(mixer).multi_head ? 4 : 1;
  // Four layers: shifts 1, 2, 4, 8 (multihead: 1..8 per head) inside a context of 24.
  std::vector<LayerSpec> layers(4, LayerSpec{mixer, 24, heads});
  expect_cached_equals_uncached(config_with(layers), mixer);
}

INSTANTIATE_TEST_SUITE_P(Mixers, CachedDecoding,
                         ::testing::Values("attn", "hsm_ab", "hsm_ab_vec", "hsm_AB", "hsm_gate1", "hsm_gate2",
                                           "hsm_fusion", "hsm_ab_mh", "hsm_ab_mh_ext"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(DeconstructingAttention, CachedDecoding,
                         ::testing::Values("mlp", "taylor", "nonapprox", "rnd_emb_qk", "fixed_seq_qk", "static_emb_qk"),
                         [](const auto& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Extractors, CachedDecoding, ::testing::Values("she", "he", "we", "me"),
                         [](const auto& info) { return info.param; });

TEST(CachedDecoding, HybridStack) {
  expect_cached_equals_uncached(
      config_with({{"hsm_ab", 24, 1}, {"attn", 24, 4}, {"hsm_ab_mh_ext", 24, 4}, {"attn", 24, 2}, {"hsm_gate2", 24, 2}}),
      "hybrid");
}

TEST(CachedDecoding, MultiheadShiftLongerThanContext) {
  // 8 heads: head 7 shifts by 128 > context 24 and must read nothing.
  auto c = config_with({{"hsm_ab_mh", 24, 8}, {"hsm_ab_mh", 24, 8}});
  expect_cached_equals_uncached(c, "mh 8 heads");
}
