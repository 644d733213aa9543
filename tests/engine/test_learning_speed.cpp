// A guard on how fast the trainer learns (issue 33): a tiny hsm_ab model with dropout, on the
// generated stories, one thread, eight fixed seeds; the mean validation loss after kSteps must
// stay within a tolerance of the value recorded when the trainer was known to be good. The
// tolerance comes from the spread over seeds of this very setting, so noise passes and a
// slower learner (a halved learning rate, dropout masks that repeat) fails; the second test
// shows that it does (docs/training.md has the numbers).
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
// Another CPU (AVX2 or AVX-512 kernels, Intel or AMD) rounds differently, and over kSteps a
// rounding difference can grow into what another seed would give: at worst each of the
// eight losses is a fresh draw. The difference of two means of 8 draws then has a standard
// deviation of kSeedStd * sqrt(2 / 8) = kSeedStd / 2; the tolerance is 4 of those (a false
// alarm about once in 16,000 runs). Half the learning rate moves the mean by 0.30, 3.3
// kSeedStd, so it fails with a margin.
constexpr double kTolerance = 4 * kSeedStd / 2;

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

// The guard can fail: the same runs at half the learning rate land outside the tolerance.
TEST(LearningSpeed, HalfTheLearningRateFailsTheGuard) {
  const Spread s = losses_over_seeds("half_lr", 0.5);
  std::cout << "at half the learning rate: mean " << s.mean << "\n";
  EXPECT_GT(s.mean, kRecordedMean + kTolerance);
}
