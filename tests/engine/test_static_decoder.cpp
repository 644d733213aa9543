// The static-shape decoding step (inference/static_decoder.h; what a CUDA graph records, issue 49)
// gives the logits of LibTorch's cached step and of the whole forward at every position of a
// full context, continues where a prefill left off, and starts over after reset(). On the CPU, in
// fp64 (as test_decoding.cpp): the three are the same sums in another order or length (the masked
// attention slots add exact zeros), so 1e-9; a wrong ring slot or position changes logits by O(1).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "hsm/knock_out.h"
#include "inference/static_decoder.h"
#include "model/model.h"
#include "model_test_util.h"

using namespace hsm;
using hsm::test::make_model;
using hsm::test::config_with;
using hsm::test::models;

namespace {

::testing::AssertionResult same(const torch::Tensor& a, const torch::Tensor& b) {
  if (torch::allclose(a, b, 1e-9, 1e-9)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "largest difference " << (a - b).abs().max().item<double>();
}

// Steps `dec` through idx[:, from..) and checks each position's logits against `full`.
void expect_steps(StaticDecoder& dec, const torch::Tensor& idx, const torch::Tensor& full, int64_t from,
                  const std::string& what) {
  for (int64_t t = from; t < idx.size(1); ++t) {
    dec.tokens().copy_(idx.select(1, t));
    ASSERT_TRUE(same(dec.step(), full.select(1, t))) << what << ", position " << t;
    ASSERT_EQ(dec.position().item<int64_t>(), t + 1);
  }
}

}  // namespace

TEST(StaticDecoding, EqualsCachedStepAndFullForwardAtEveryPosition) {
  for (const auto& [name, c] : models()) {
    auto model = make_model(c);
    ASSERT_EQ(StaticDecoder::unsupported(*model), "") << name;
    torch::NoGradGuard no_grad;
    auto idx = torch::randint(0, c.vocab_size, {2, c.context}, torch::kLong);
    const auto full = model->forward(idx);
    StaticDecoder dec(model, 2);
    DecodeState state;
    for (int64_t t = 0; t < c.context; ++t) {
      const auto cached = model->step(idx.select(1, t), state);
      dec.tokens().copy_(idx.select(1, t));
      const auto logits = dec.step();
      ASSERT_TRUE(same(logits, cached)) << name << ": against the cached step at position " << t;
      ASSERT_TRUE(same(logits, full.select(1, t))) << name << ": against the forward at position " << t;
    }
    // reset(): a new sequence from position 0, nothing of the last one left.
    auto other = torch::randint(0, c.vocab_size, {2, c.context}, torch::kLong);
    dec.reset();
    EXPECT_EQ(dec.position().item<int64_t>(), 0);
    expect_steps(dec, other, model->forward(other), 0, name + " after reset");
  }
}

TEST(StaticDecoding, ContinuesWherePrefillLeftOff) {
  for (const auto& [name, c] : models()) {
    auto model = make_model(c);
    torch::NoGradGuard no_grad;
    auto idx = torch::randint(0, c.vocab_size, {1, c.context}, torch::kLong);
    const auto full = model->forward(idx);
    StaticDecoder dec(model, 1);
    // A decoder that held another sequence first (its caches full of it), as after a slide.
    auto before = torch::randint(0, c.vocab_size, {1, c.context}, torch::kLong);
    expect_steps(dec, before, model->forward(before), 0, name + " first sequence");
    // Prefixes shorter and longer than the registers (up to 32 slots), and 1 token.
    for (int64_t prefix : {int64_t{1}, int64_t{5}, int64_t{20}, int64_t{35}}) {
      DecodeState state;
      const auto first = model->prefill(idx.narrow(1, 0, prefix), state);
      ASSERT_TRUE(same(first, full.select(1, prefix - 1)));
      dec.load(state);
      EXPECT_EQ(dec.position().item<int64_t>(), prefix);
      expect_steps(dec, idx, full, prefix, name + " after a prefill of " + std::to_string(prefix));
    }
    // A fresh state (position 0) loads as reset().
    dec.load(DecodeState());
    expect_steps(dec, idx, full, 0, name + " from an empty state");
  }
}

TEST(StaticDecoding, HonoursKnockOuts) {
  const auto c = models()[2].second;  // the hybrid
  auto model = make_model(c);
  model->set_knock_outs({KnockOut{6, 2}, KnockOut{2, -1}, KnockOut{9, 3}, KnockOut{4, 0}});
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, c.vocab_size, {1, c.context}, torch::kLong);
  StaticDecoder dec(model, 1);
  expect_steps(dec, idx, model->forward(idx), 0, "knock-outs");
}

TEST(StaticDecoding, SaysWhichModelsItCannotServe) {
  auto model = make_model(config_with({{"hsm_ab", 64, 1}, {"taylor", 64, 4}}));
  EXPECT_NE(StaticDecoder::unsupported(*model).find("layer 1 (taylor)"), std::string::npos)
      << StaticDecoder::unsupported(*model);
  EXPECT_THROW(StaticDecoder(model, 1), std::invalid_argument);
  auto qk = make_model(config_with({{"attn", 64, 4}, {"static_emb_qk", 64, 4}}));
  EXPECT_NE(StaticDecoder::unsupported(*qk), "");
  auto skipping = make_model(config_with({{"attn", 64, 4}, {"hsm_ab", 64, 1}}));
  skipping->set_skipped_layers({1});
  EXPECT_NE(StaticDecoder::unsupported(*skipping), "");
}
