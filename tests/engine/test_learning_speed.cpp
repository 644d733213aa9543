// A guard on how fast the trainer learns (issue 33): a tiny hsm_ab model with dropout, on the
// generated stories, one thread, eight fixed seeds; the mean validation loss after kSteps must
// stay within a tolerance of the value recorded when the trainer was known to be good. A slower
// learner fails: a learning rate a sixth lower (0.0025 for 0.003) is outside the tolerance, and
// the second test shows that it is. It does not catch everything that could be wrong with the
// randomness: dropout masks that repeat at every step leave this loss where it was (3.0571
// against 3.0573, docs/training.md section 2), so they pass.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <numeric>
#include <vector>

#include "hsm/trainer.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

constexpr int64_t kSteps = 60;
constexpr uint64_t kSeeds = 8;  // seeds 1..8

// Recorded on the trainer of issue 33 (Intel Xeon, AVX-512, one thread): the mean over the
// seeds of the validation loss at kSteps, and the standard deviation of one seed's loss.
constexpr double kRecordedMean = 3.0573;
constexpr double kSeedStd = 0.0903;
// The tolerance is for rounding, not for seeds: the seeds are fixed, so what can move the
// mean between machines is only how each CPU rounds (AVX2 or AVX-512 kernels, oneDNN's or
// LibTorch's products, Intel or AMD). That is not zero by construction (the products sum in
// other orders), but over 60 steps it stays far below a seed's spread: an AMD EPYC with AVX2
// alone (LibTorch's products) gives the Intel Xeon's eight losses to the 3rd decimal and the mean
// 3.05729 (docs/training.md section 5). 0.03 is hundreds of times that difference and a quarter
// of what a learning rate a sixth lower moves the mean (+0.11, to 3.169), so rounding passes
// and that slower learner fails with a margin.
constexpr double kTolerance = 0.03;
RunSpec guard_run(const std::string& dir, const std::string& data, uint64_t seed) {
  RunSpec spec = tiny_run(dir + "/seed" + std::to_string(seed), data, kSteps);
  spec.cache_dir = dir + "/cache";  // one tokenizer and one encoded corpus for every seed
  spec.model.dropout = 0.1;         // masks drawn per step: a repeating or correlated mask shows here
  spec.train.seed = seed;
  spec.train.eval_every = kSteps;
  spec.train.eval_batches = 8;
  spec.train.log_every = kSteps;
  spec.train.checkpoint_every = kSteps;
  spec.train.probe_text = "";  // no diagnostics.jsonl: not what this measures
  return spec;
}

struct Spread {
  double mean = 0, std = 0;
};

// The validation loss after kSteps for seeds 1..kSeeds: their mean and standard deviation.
Spread losses_over_seeds(const std::string& name, double lr_scale = 1.0) {
  const std::string dir = temp_dir(name);
  const std::string data = make_corpus(dir);
  std::vector<double> losses;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    RunSpec spec = guard_run(dir, data, seed);
    spec.train.lr *= lr_scale;
    const TrainSummary s = Trainer(spec).run();
    EXPECT_EQ(s.steps, kSteps);
    losses.push_back(s.val_loss);
    std::cout << "seed " << seed << ": " << s.val_loss << "\n";
  }
  Spread out;
  out.mean = std::accumulate(losses.begin(), losses.end(), 0.0) / static_cast<double>(losses.size());
  for (double l : losses) out.std += (l - out.mean) * (l - out.mean);
  out.std = std::sqrt(out.std / static_cast<double>(losses.size() - 1));
  return out;
}

}  // namespace

TEST(LearningSpeed, MeanValidationLossAfterSixtyStepsIsTheRecordedOne) {
  const Spread s = losses_over_seeds("guard");
  std::cout << "mean validation loss after " << kSteps << " steps over seeds 1-" << kSeeds << ": " << s.mean
            << " (recorded " << kRecordedMean << " ± " << kTolerance << "); one seed's std " << s.std << " (recorded "
            << kSeedStd << ")\n";
  EXPECT_LT(s.mean, kRecordedMean + kTolerance) << "the trainer learns slower than it did (docs/training.md)";
  // Much faster is as unexplained (validation on other windows, the validation split leaking
  // into training): if it is a real improvement, measure and record the new values.
  EXPECT_GT(s.mean, kRecordedMean - kTolerance) << "the trainer learns faster than recorded (docs/training.md)";
}

// The guard can fail: the same runs at a learning rate a sixth lower (0.0025 for 0.003) land
// outside the tolerance.
TEST(LearningSpeed, ALearningRateASixthLowerFailsTheGuard) {
  const Spread s = losses_over_seeds("lower_lr", 0.0025 / 0.003);
  std::cout << "at lr 0.0025: mean " << s.mean << "\n";
  EXPECT_GT(s.mean, kRecordedMean + kTolerance);
}
