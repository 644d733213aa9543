// Per-token scoring (issue 40) on a tiny trained run: the scores come out of the evaluation
// itself (their mean is its loss, their top-1 count its accuracy), they are the same on any
// number of threads, and each token's loss, probability and rank agree with a plain softmax
// of the model's logits.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "hsm/cpu_threads.h"
#include "hsm/evaluator.h"
#include "hsm/model.h"
#include "hsm/token_scores.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"
#include "inference/model_impl.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

class TokenScoring : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(temp_dir("token_scores"));
    data_ = new std::string(make_corpus(*dir_));
    RunSpec spec = tiny_run(*dir_, *data_, 20);
    spec.model.layers[1] = {"attn", 64, 4};
    Trainer(spec).run();
    run_ = new std::string(spec.run_dir);
  }
  static EvalOptions options() {
    EvalOptions o;
    o.cache_dir = *dir_ + "/cache";
    o.max_windows = 20;
    o.batch_size = 8;  // three batches, the last one short
    return o;
  }
  static std::string* dir_;
  static std::string* data_;
  static std::string* run_;
};
std::string* TokenScoring::dir_ = nullptr;
std::string* TokenScoring::data_ = nullptr;
std::string* TokenScoring::run_ = nullptr;

}  // namespace

TEST_F(TokenScoring, TheMeanOfTheTokensLossesIsTheEvaluationsLoss) {
  const auto model = Model::load(*run_, "cpu");
  Evaluator evaluator(model);
  const EvalOptions o = options();
  const EvalSet set = evaluator.read(*data_, o);
  const EvalResult plain = evaluator.evaluate(set, o);
  const TokenScores scores = evaluator.score_tokens(set, o);
  // The same evaluation: the same loss and accuracy to the last bit.
  EXPECT_EQ(scores.result.loss, plain.loss);
  EXPECT_EQ(scores.result.accuracy, plain.accuracy);
  EXPECT_EQ(scores.result.tokens, plain.tokens);
  ASSERT_EQ(static_cast<int64_t>(scores.tokens.size()), plain.tokens);
  EXPECT_EQ(plain.tokens, 20 * model->config().context);
  double sum = 0;
  int64_t top1 = 0;
  for (const TokenScore& t : scores.tokens) {
    sum += t.loss;
    top1 += t.rank == 1 ? 1 : 0;
  }
  // Summed here in token order, there in slices: the same terms, rounding apart only.
  EXPECT_NEAR(sum / static_cast<double>(scores.tokens.size()), plain.loss, 1e-12 * plain.loss);
  EXPECT_EQ(static_cast<double>(top1) / static_cast<double>(scores.tokens.size()), plain.accuracy);
  // From the corpus directly, and with max_batches (a prefix), the same again.
  EXPECT_EQ(evaluator.score_tokens(*data_, o).result.loss, plain.loss);
  EvalOptions prefix = o;
  prefix.max_batches = 1;
  const TokenScores first = evaluator.score_tokens(set, prefix);
  EXPECT_EQ(first.result.loss, evaluator.evaluate(set, prefix).loss);
  ASSERT_EQ(first.tokens.size(), static_cast<size_t>(8 * model->config().context));
  for (size_t i = 0; i < first.tokens.size(); ++i) ASSERT_EQ(first.tokens[i].loss, scores.tokens[i].loss) << i;
}

TEST_F(TokenScoring, TheSameOnAnyNumberOfThreads) {
  const auto model = Model::load(*run_, "cpu");
  Evaluator evaluator(model);
  const EvalSet set = evaluator.read(*data_, options());
  set_cpu_threads(1);
  const TokenScores one = evaluator.score_tokens(set, options());
  set_cpu_threads(3);
  const TokenScores three = evaluator.score_tokens(set, options());
  set_cpu_threads(0);
  EXPECT_EQ(one.result.loss, three.result.loss);
  ASSERT_EQ(one.tokens.size(), three.tokens.size());
  for (size_t i = 0; i < one.tokens.size(); ++i) {
    ASSERT_EQ(one.tokens[i].loss, three.tokens[i].loss) << i;
    ASSERT_EQ(one.tokens[i].rank, three.tokens[i].rank) << i;
  }
}

TEST_F(TokenScoring, LossProbAndRankAgreeWithASoftmaxOfTheLogits) {
  const auto model = Model::load(*run_, "cpu");
  Evaluator evaluator(model);
  EvalOptions o = options();
  o.max_windows = 4;
  const EvalSet set = evaluator.read(*data_, o);
  const TokenScores scores = evaluator.score_tokens(set, o);
  const int64_t T = model->config().context;
  ASSERT_EQ(static_cast<int64_t>(scores.tokens.size()), 4 * T);
  // The windows back from the scores (inputs, and the last target), through the plain forward.
  auto x = torch::empty({4, T}, torch::kLong);
  for (const TokenScore& t : scores.tokens) x[t.window][t.position] = t.input;
  torch::NoGradGuard no_grad;
  const auto logits = model->impl().gpt->forward(x).to(torch::kFloat64);  // [4, T, V]
  const auto log_p = torch::log_softmax(logits, -1);
  int64_t checked_ranks = 0, distances = 0;
  for (const TokenScore& t : scores.tokens) {
    const auto row = logits[t.window][t.position];
    const double target_logit = row[t.target].item<double>();
    EXPECT_NEAR(t.loss, -log_p[t.window][t.position][t.target].item<double>(), 1e-4);
    EXPECT_NEAR(t.prob, std::exp(log_p[t.window][t.position][t.target].item<double>()), 1e-5);
    // Rank: 1 + the logits above the target's (ties, rare, go to the lower id as argmax).
    // Skipped where another logit is within rounding of the target's: either order is right.
    const auto gap = (row - target_logit).abs();
    gap[t.target] = 1.0;
    if (gap.min().item<double>() < 1e-4) continue;
    EXPECT_EQ(t.rank, 1 + row.gt(target_logit).sum().item<int64_t>()) << t.window << ":" << t.position;
    ++checked_ranks;
    distances += t.distance > 0 ? 1 : 0;
  }
  EXPECT_GT(checked_ranks, 3 * T);
  EXPECT_GT(distances, 0);  // the stories repeat themselves
}
