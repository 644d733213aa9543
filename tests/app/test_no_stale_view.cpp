// Issue 36, "no stale view": after the current run changes, every view shows the new run's
// results or says plainly it has none yet; the cheap ones (a diagnosis of the prompt, the
// probe, the weights) are computed for it at once; every result names its run. Real widgets
// on two tiny runs trained with different seeds (so their numbers differ).
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QLabel>
#include <QTableWidget>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/losses_view.h"
#include "gui/views/probe_view.h"
#include "gui/views/weights_view.h"
#include "gui/widgets/plot_panel.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

// A second run of the tiny model, trained with another seed into a folder named "run-b".
QString second_run() {
  static const QString run = [] {
    hsm::RunSpec spec = tiny_run_spec(QDir(temp_root()).filePath(QStringLiteral("second")));
    spec.run_dir = QDir(temp_root()).filePath(QStringLiteral("second/run-b")).toStdString();
    spec.train.seed = 4242;
    hsm::Trainer(spec).run();
    return QString::fromStdString(spec.run_dir);
  }();
  return run;
}

QString label_text(QWidget& view, const char* name) {
  auto* label = view.findChild<QLabel*>(QString::fromLatin1(name));
  return label ? label->text() : QStringLiteral("<no label %1>").arg(QString::fromLatin1(name));
}

// The text the ablation plot shows over empty axes (empty: none).
QString ablation_placeholder(ProbeView& view) {
  QCustomPlot* p = view.ablationPanel()->plot();
  for (int i = 0; i < p->itemCount(); ++i)
    if (auto* text = qobject_cast<QCPItemText*>(p->item(i))) return text->text();
  return {};
}

}  // namespace

TEST(NoStaleView, SwitchingRunsLeavesNoViewShowingThePreviousRunsResults) {
  const QString a = trained_run(), b = second_run();
  RunList runs;
  EngineHost engine;
  DiagnosticsView diagnostics(&runs, &engine);
  ProbeView probe(&runs, &engine);
  WeightsView weights(&runs, &engine);
  const int rowA = runs.open(a), rowB = runs.open(b);
  runs.setCurrent(rowA);
  for (QWidget* v : std::initializer_list<QWidget*>{&diagnostics, &probe, &weights}) {
    v->resize(1400, 900);
    v->show();
  }
  // Shown, each view computes the cheap results of the current run by itself.
  ASSERT_TRUE(wait_for([&] {
    return diagnostics.hasResult(0) && !diagnostics.isRunning() && probe.hasProbe() && !weights.weights().empty();
  })) << diagnostics.lastError().toStdString()
      << probe.lastError().toStdString();
  probe.setMaxWindows(4);
  ASSERT_TRUE(probe.runAblation()) << probe.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !probe.isAblating(); }));
  ASSERT_TRUE(probe.hasAblation()) << probe.lastError().toStdString();
  EXPECT_TRUE(probe.ablationOf().contains(QStringLiteral("<b>run</b>"))) << probe.ablationOf().toStdString();
  const hsm::Diagnosis diagnosisA = diagnostics.diagnosis(0);
  const std::vector<hsm::MixerWeights> weightsA = weights.weights();
  const double ablationBaseA = probe.ablation().base_loss;
  const std::vector<hsm::LensLayer> lensA = probe.probe().lens;

  // Switched to B: at once, nothing of A is left under B's name.
  runs.setCurrent(rowB);
  EXPECT_FALSE(diagnostics.hasResult(0));
  EXPECT_TRUE(label_text(diagnostics, "diag_title").contains(QStringLiteral("run-b")))
      << label_text(diagnostics, "diag_title").toStdString();
  EXPECT_FALSE(probe.hasProbe());
  EXPECT_EQ(probe.lensTable()->rowCount(), 0);
  EXPECT_FALSE(probe.hasAblation());
  EXPECT_TRUE(probe.ablationOf().isEmpty()) << probe.ablationOf().toStdString();
  EXPECT_TRUE(ablation_placeholder(probe).contains(QStringLiteral("No ablation of run-b yet")))
      << ablation_placeholder(probe).toStdString();
  EXPECT_TRUE(weights.weights().empty());
  EXPECT_FALSE(label_text(weights, "weights_header").contains(QStringLiteral("<b>run</b>")))
      << label_text(weights, "weights_header").toStdString();

  // Then B's own cheap results arrive, each naming B; the ablation waits to be asked for.
  ASSERT_TRUE(wait_for([&] {
    return diagnostics.hasResult(0) && !diagnostics.isRunning() && probe.hasProbe() && !probe.isProbing() &&
           !weights.weights().empty();
  })) << diagnostics.lastError().toStdString()
      << probe.lastError().toStdString();
  EXPECT_TRUE(label_text(diagnostics, "diag_title").contains(QStringLiteral("<b>run-b</b>")))
      << label_text(diagnostics, "diag_title").toStdString();
  EXPECT_NE(diagnostics.diagnosis(0).layers[1].heads[0].matrix, diagnosisA.layers[1].heads[0].matrix);
  EXPECT_NE(probe.probe().lens.front().kl_to_final, lensA.front().kl_to_final);
  EXPECT_EQ(QDir(weights.shownRun()).absolutePath(), QDir(b).absolutePath());
  EXPECT_TRUE(label_text(weights, "weights_header").contains(QStringLiteral("<b>run-b</b>")))
      << label_text(weights, "weights_header").toStdString();
  ASSERT_FALSE(weights.weights().empty());
  EXPECT_NE(weights.weights()[0].a, weightsA[0].a);
  EXPECT_FALSE(probe.hasAblation());

  // "Compare with" A, B still current: A's diagnosis of the same prompt, computed at once.
  diagnostics.setCompare(true, a);
  ASSERT_TRUE(wait_for([&] { return diagnostics.hasResult(1) && !diagnostics.isRunning(); }));
  EXPECT_EQ(diagnostics.diagnosis(1).layers[1].heads[0].matrix, diagnosisA.layers[1].heads[0].matrix);
  EXPECT_TRUE(label_text(diagnostics, "diag_title-b").contains(QStringLiteral("<b>run</b>")))
      << label_text(diagnostics, "diag_title-b").toStdString();

  // Back to A: its ablation (kept per run) is shown again, named; its diagnosis comes back.
  runs.setCurrent(rowA);
  ASSERT_TRUE(probe.hasAblation());
  EXPECT_DOUBLE_EQ(probe.ablation().base_loss, ablationBaseA);
  EXPECT_TRUE(probe.ablationOf().contains(QStringLiteral("<b>run</b>"))) << probe.ablationOf().toStdString();
  ASSERT_TRUE(wait_for([&] { return diagnostics.hasResult(0) && !diagnostics.isRunning(); }));
  EXPECT_EQ(diagnostics.diagnosis(0).layers[1].heads[0].matrix, diagnosisA.layers[1].heads[0].matrix);
  EXPECT_TRUE(engine.waitIdle(60000));
}

// A view hidden while the run changes drops the old run's results at once too, and computes
// the new run's when it is shown.
TEST(NoStaleView, AHiddenViewCatchesUpWhenShown) {
  const QString a = trained_run(), b = second_run();
  RunList runs;
  EngineHost engine;
  DiagnosticsView diagnostics(&runs, &engine);
  const int rowA = runs.open(a), rowB = runs.open(b);
  runs.setCurrent(rowA);
  diagnostics.resize(1200, 800);
  diagnostics.show();
  ASSERT_TRUE(wait_for([&] { return diagnostics.hasResult(0) && !diagnostics.isRunning(); }));
  diagnostics.hide();
  runs.setCurrent(rowB);
  EXPECT_FALSE(diagnostics.hasResult(0));
  QCoreApplication::processEvents();
  EXPECT_FALSE(diagnostics.isRunning());  // hidden: nothing computed for nobody
  diagnostics.show();
  ASSERT_TRUE(wait_for([&] { return diagnostics.hasResult(0) && !diagnostics.isRunning(); }));
  EXPECT_TRUE(label_text(diagnostics, "diag_title").contains(QStringLiteral("<b>run-b</b>")));
  EXPECT_TRUE(engine.waitIdle(60000));
}

// Issue 48: the Losses view's document table compares two runs under a header that names them,
// "Δ loss (run-b − run)", and a colour key says which colour favours which; after a switch to
// the other run nothing of either is left.
TEST(NoStaleView, TheLossesCompareHeaderFollowsARunSwitch) {
  const QString a = trained_run(), b = second_run();
  RunList runs;
  EngineHost engine;
  LossesView losses(&runs, &engine);
  const int rowA = runs.open(a), rowB = runs.open(b);
  runs.setCurrent(rowA);
  losses.resize(1280, 720);
  losses.show();
  losses.setMaxWindows(4);
  ASSERT_TRUE(losses.score()) << losses.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !losses.isScoring(); }));
  ASSERT_EQ(losses.comparedRuns(), QStringList{runs.at(rowB).dir});
  losses.setCompareRun(runs.at(rowB).dir);
  auto header = [&] { return losses.documentTable()->horizontalHeaderItem(2)->text(); };
  ASSERT_TRUE(header().contains(QStringLiteral("run-b − run"))) << header().toStdString();
  // The compare tint has its colour key: which colour favours which run.
  EXPECT_TRUE(losses.tintKey().contains(QStringLiteral("run-b better"))) << losses.tintKey().toStdString();
  EXPECT_TRUE(losses.tintKey().contains(LossesView::differenceTint(-LossesView::kTintMaxDifference).name()))
      << losses.tintKey().toStdString();

  runs.setCurrent(rowB);
  EXPECT_FALSE(header().contains(QStringLiteral("−"))) << header().toStdString();
  EXPECT_FALSE(header().contains(QStringLiteral("run"))) << header().toStdString();
  EXPECT_EQ(losses.documentTable()->rowCount(), 0);
  EXPECT_FALSE(losses.tintKey().contains(QStringLiteral("run-b"))) << losses.tintKey().toStdString();
  EXPECT_TRUE(engine.waitIdle(60000));
}
