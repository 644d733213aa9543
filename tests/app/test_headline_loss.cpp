// Issue 48, "one headline loss per model everywhere": the Losses view and the Weights view show
// the run's own evaluation on every window as `hsm eval` gives it, whatever number of windows
// they score token by token or use for a what-if (that number is shown beside, named as fewer
// windows). Two tiny runs: one whose last validation scored every window (its record is the
// headline, nothing computed) and the shared fixture, whose validation scored 2 batches (the
// headline is then computed).
#include <gtest/gtest.h>

#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <cmath>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/losses_view.h"
#include "gui/views/weights_view.h"
#include "gui/views/what_if_editor.h"
#include "hsm/run_folder.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

// The tiny model whose every validation scores all windows (eval_batches 0), the last one at
// its checkpoint's step.
QString fully_validated_run() {
  return trained_variant(QStringLiteral("fully-validated"), [](hsm::RunSpec& spec) { spec.train.eval_batches = 0; });
}

// `hsm eval --json RUN`: the run's evaluation on every window of its validation split.
QJsonObject hsm_eval(const QString& run) {
  const ProcessResult r = run_program(QStringLiteral(HSM_CLI_PATH),
                                      {QStringLiteral("eval"), QStringLiteral("--json"), QStringLiteral("--threads"),
                                       QStringLiteral("1"), QStringLiteral("--cache-dir"),
                                       QDir(temp_root()).filePath(QStringLiteral("cache")), run});
  EXPECT_EQ(r.exit_code, 0) << r.err.toStdString();
  return QJsonDocument::fromJson(r.out).object();
}

// The last validation record of a run's curve (the Training view's last validation).
double last_validation(const RunEntry& run) {
  for (auto it = run.metrics.rbegin(); it != run.metrics.rend(); ++it)
    if (it->kind == "eval") return it->val_loss;
  return std::nan("");
}

void check_views_agree_with_hsm_eval(const QString& run, bool recorded) {
  const QJsonObject eval = hsm_eval(run);
  const double expected = eval.value(QStringLiteral("loss")).toDouble();
  const int windows = eval.value(QStringLiteral("window_count")).toInt();
  ASSERT_GT(windows, 8) << "the test needs more windows than the views score";
  RunList runs;
  EngineHost engine;
  runs.setCurrent(runs.open(run));
  if (recorded) {
    EXPECT_NEAR(last_validation(runs.at(0)), expected, 1e-5) << "Training's last validation";
  }

  // The Losses view scoring its first 4 windows: the headline is the evaluation on all of them.
  LossesView losses(&runs, &engine);
  losses.resize(1280, 720);
  losses.show();
  losses.setMaxWindows(4);
  ASSERT_TRUE(losses.score()) << losses.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !losses.isScoring(); }));
  ASSERT_TRUE(losses.hasScores()) << losses.lastError().toStdString();
  EXPECT_EQ(losses.scores().result.window_count, 4);
  EXPECT_NEAR(losses.evaluationLoss(), expected, 1e-5);
  const QString status = losses.statusLabel()->text();
  EXPECT_TRUE(status.contains(QString::number(losses.evaluationLoss(), 'f', 4))) << status.toStdString();
  EXPECT_TRUE(status.contains(QStringLiteral("on the first 4 windows"))) << status.toStdString();
  EXPECT_FALSE(status.contains(QStringLiteral("its evaluation's loss"))) << status.toStdString();
  if (!recorded) {
    EXPECT_TRUE(status.contains(QStringLiteral("all %1 ").arg(windows))) << status.toStdString();
  }

  // The Weights view's what-if on its first 8 windows: the same headline beside it.
  WeightsView weights(&runs, &engine);
  weights.setEvalWindows(8);
  weights.resize(1280, 720);
  weights.show();
  ASSERT_TRUE(wait_for([&] { return !weights.weights().empty() && !weights.isWaiting(); }));
  if (recorded) {  // known from the record at once, before any edit
    EXPECT_NEAR(weights.evaluationLoss(), expected, 1e-5);
  }
  weights.whatIfEditor()->spinBox('a', 0)->setValue(0.25);
  ASSERT_TRUE(wait_for([&] { return weights.hasEvaluation() && !weights.isEvaluating() && !weights.edits().empty(); },
                       120000));
  EXPECT_EQ(weights.lastEvaluation().trained.window_count, 8);
  EXPECT_NEAR(weights.evaluationLoss(), expected, 1e-5);
  const QString text = weights.lossText();
  EXPECT_TRUE(text.contains(QString::number(weights.evaluationLoss(), 'f', 4))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("first 8 windows"))) << text.toStdString();
}

}  // namespace

TEST(HeadlineLoss, ARunsRecordedFullValidationIsEveryViewsHeadline) { check_views_agree_with_hsm_eval(fully_validated_run(), true); }

TEST(HeadlineLoss, WithoutARecordTheViewsComputeTheEvaluationOnEveryWindow) {
  check_views_agree_with_hsm_eval(trained_run(), false);
}

// Issue 69: a run whose record holds no evaluation of every window at its checkpoint (the
// starter run trained by "Train a small model now" validates on 20 batches) shows its headline
// in the Weights view at once, no edit needed: computed off the GUI thread when it is shown,
// the loss `hsm eval` gives.
TEST(HeadlineLoss, TheWeightsViewComputesAMissingHeadlineWithoutAnEdit) {
  const QString run = trained_run();
  const double expected = hsm_eval(run).value(QStringLiteral("loss")).toDouble();
  RunList runs;
  EngineHost engine;
  runs.setCurrent(runs.open(run));
  WeightsView weights(&runs, &engine);
  weights.resize(1280, 720);
  weights.show();
  ASSERT_TRUE(wait_for([&] { return weights.hasEvaluation() && !weights.isEvaluating(); }, 60000))
      << "no headline without an edit: \"" << weights.lossText().toStdString() << "\"";
  EXPECT_TRUE(weights.edits().empty());
  EXPECT_NEAR(weights.evaluationLoss(), expected, 1e-5);
  const QString text = weights.lossText();
  EXPECT_TRUE(text.contains(QStringLiteral("its evaluation: %1 nats").arg(expected, 0, 'f', 4))) << text.toStdString();
}
