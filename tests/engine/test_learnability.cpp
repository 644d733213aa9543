// The hierarchy at work (HSM §3): on sequences where every token repeats the token five
// places back, predicting the next token means reading offset 4 from the current position.
// hsm_ab with 3 layers (shifts 1, 2, 4: offsets 0..7) learns it; with 2 layers (offsets
// 0..3) the one token it needs is out of reach and it stays near chance.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "train/adamw.h"
#include "model/model.h"

using namespace hsm;

namespace {

constexpr int64_t kVocab = 16, kPeriod = 5, kContext = 32;

// [B, context + 1] sequences with s[t] = s[t - 5]; the first five tokens are random.
torch::Tensor periodic_batch(int64_t batch, torch::Generator& gen) {
  auto head = torch::randint(0, kVocab, {batch, kPeriod}, gen, torch::kLong);
  return head.repeat({1, (kContext + 1 + kPeriod - 1) / kPeriod}).narrow(1, 0, kContext + 1);
}

// Trains an hsm_ab stack and returns next-token accuracy on positions whose answer lies in
// the past (t >= 4: the token to copy is in the sequence).
double train_and_measure(int layers) {
  torch::manual_seed(0);
  ModelConfig c;
  c.vocab_size = kVocab;
  c.d_model = 32;
  c.context = kContext;
  c.dropout = 0.0;
  for (int l = 0; l < layers; ++l) c.layers.push_back({"hsm_ab", 64, 1});
  Gpt model(c);
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (const auto& p : model->named_parameters()) params.emplace_back(p.key(), p.value());
  AdamW opt(params, {3e-3, 0.9, 0.999, 1e-8, 0.0});
  auto gen = torch::make_generator<torch::CPUGeneratorImpl>(1);
  for (int step = 0; step < 400; ++step) {
    auto seq = periodic_batch(32, gen);
    auto logits = model->forward(seq.narrow(1, 0, kContext));
    auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, kVocab}),
                                                     seq.narrow(1, 1, kContext).reshape({-1}));
    opt.zero_grad();
    loss.backward();
    opt.step(3e-3);
  }
  model->eval();
  torch::NoGradGuard no_grad;
  auto seq = periodic_batch(256, gen);
  auto pred = model->forward(seq.narrow(1, 0, kContext)).argmax(-1);
  auto target = seq.narrow(1, 1, kContext);
  const int64_t from = kPeriod - 1;
  return pred.narrow(1, from, kContext - from).eq(target.narrow(1, from, kContext - from)).to(torch::kDouble)
      .mean()
      .item<double>();
}

}  // namespace

TEST(Learnability, ThreeShiftLayersReachOffsetFiveTwoCannot) {
  const double three = train_and_measure(3);
  const double two = train_and_measure(2);
  EXPECT_GT(three, 0.95) << "3 layers (offsets 0..7) should copy the token 5 back";
  std::cout << "accuracy with 3 layers " << three << ", with 2 layers " << two << "\n";
  EXPECT_LT(two, 0.2) << "2 layers (offsets 0..3) cannot see it; chance is " << 1.0 / kVocab;
}
