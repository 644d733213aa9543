// Issue 23 in the studio: the Diagnostics view's indicators over time, driven through its
// widgets: a diagnostics.jsonl written here through the engine's line format (one line per
// layer in the chart, the slider's step in the table), live appends, a run without the file,
// and the log a real training wrote.
#include <gtest/gtest.h>

#include <QAbstractScrollArea>
#include <QCheckBox>
#include <QFile>
#include <QSlider>
#include <QTableWidget>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/diagnostics_timeline.h"
#include "gui/views/diagnostics_view.h"
#include "gui/widgets/plot_panel.h"
#include "hsm/config.h"
#include "hsm/diagnostics_log.h"
#include "hsm/run_folder.h"
#include "hsm/trainer.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {
// A copy of the trained run (model, config, tokenizer, metrics), without its diagnostics log.
QString copy_of_trained_run(const QString& name) {
  const QString dir = QDir(temp_root()).filePath(name);
  QDir().mkpath(dir);
  for (const QString& f : QDir(trained_run()).entryList(QDir::Files))
    if (f != QLatin1String("diagnostics.jsonl")) QFile::copy(QDir(trained_run()).filePath(f), QDir(dir).filePath(f));
  return dir;
}

// A record with values that differ per step and layer, so a mix-up shows.
hsm::DiagnosticsRecord make_record(int64_t step) {
  hsm::DiagnosticsRecord r;
  r.step = step;
  r.prompt = "Once upon a time";
  const char* mixers[] = {"hsm_ab", "attn", "hsm_ab"};
  for (int l = 0; l < 3; ++l) {
    hsm::DiagnosticsLayerRecord layer;
    layer.layer = l;
    layer.mixer = mixers[l];
    layer.kind = l == 1 ? hsm::MatrixKind::kAttention : hsm::MatrixKind::kLinear;
    const double base = 0.01 * static_cast<double>(step) + l;
    layer.indicators.entropy = 10 + base;
    layer.indicators.conc = 2 + 0.5 * base;
    layer.indicators.headdiv = 0.1 * l;
    layer.indicators.sink = 0.05 * (l + 1) + 0.001 * static_cast<double>(step);
    for (int n = 0; n < 4; ++n) layer.indicators.locfoc[static_cast<size_t>(n)] = 0.1 * n + 0.01 * l;
    layer.heads.push_back({0, layer.indicators});
    layer.lens_kl = 3.0 - 0.001 * static_cast<double>(step) - 0.5 * l;
    r.layers.push_back(layer);
  }
  return r;
}

void append_line(const QString& runDir, const hsm::DiagnosticsRecord& r) {
  QFile f(QDir(runDir).filePath(QStringLiteral("diagnostics.jsonl")));
  ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Append));
  f.write(QByteArray::fromStdString(hsm::diagnostics_record_to_json_line(r)) + '\n');
}

int column_of(QTableWidget* table, const QString& title) {
  for (int c = 0; c < table->columnCount(); ++c)
    if (table->horizontalHeaderItem(c)->text() == title) return c;
  return -1;
}

}  // namespace

TEST(DiagnosticsOverTime, PlotsEveryLayerAndTheSliderRedrawsTheTable) {
  const QString run = copy_of_trained_run(QStringLiteral("over-time"));
  const std::vector<hsm::DiagnosticsRecord> written = {make_record(10), make_record(20), make_record(30)};
  for (const auto& r : written) append_line(run, r);
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  runs.setCurrent(runs.open(run));
  DiagnosticsTimeline* t = view.timeline();
  ASSERT_TRUE(wait_for([&] { return t->records().size() == 3; }, 10000)) << t->message().toStdString();

  // One line per layer, the recorded values against step.
  const QVector<PlotSeries>& series = t->plot()->series();
  ASSERT_EQ(series.size(), 3);
  for (int l = 0; l < 3; ++l) {
    ASSERT_EQ(series[l].x.size(), 3);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(series[l].x[i], double(written[i].step));
      EXPECT_DOUBLE_EQ(series[l].y[i], written[i].layers[l].indicators.entropy);
    }
  }
  t->setIndicator(8);  // lens KL
  ASSERT_EQ(t->plot()->series().size(), 3);
  EXPECT_DOUBLE_EQ(t->plot()->series()[2].y[1], written[1].layers[2].lens_kl);
  t->setIndicator(3);  // SINK
  EXPECT_DOUBLE_EQ(t->plot()->series()[1].y[0], written[0].layers[1].indicators.sink);

  // The slider at step 20: the table holds exactly that record's indicators.
  view.findChild<QSlider*>(QStringLiteral("timeline_slider"))->setValue(1);
  EXPECT_TRUE(t->showsStep());
  EXPECT_TRUE(view.indicatorSource().contains(QStringLiteral("step 20"))) << view.indicatorSource().toStdString();
  QTableWidget* table = view.indicatorTable();
  ASSERT_EQ(table->rowCount(), 3);
  const int entropy = column_of(table, QStringLiteral("ENTROPY")), sink = column_of(table, QStringLiteral("SINK")),
            loc3 = column_of(table, QStringLiteral("LocFoc3")), conc = column_of(table, QStringLiteral("CONC"));
  ASSERT_GE(entropy, 0);
  for (int l = 0; l < 3; ++l) {
    const hsm::Indicators& i = written[1].layers[l].indicators;
    EXPECT_DOUBLE_EQ(table->item(l, entropy)->data(Qt::UserRole).toDouble(), i.entropy);
    EXPECT_DOUBLE_EQ(table->item(l, conc)->data(Qt::UserRole).toDouble(), i.conc);
    EXPECT_DOUBLE_EQ(table->item(l, sink)->data(Qt::UserRole).toDouble(), i.sink);
    EXPECT_DOUBLE_EQ(table->item(l, loc3)->data(Qt::UserRole).toDouble(), i.locfoc[3]);
  }
  view.findChild<QSlider*>(QStringLiteral("timeline_slider"))->setValue(2);
  EXPECT_DOUBLE_EQ(table->item(2, entropy)->data(Qt::UserRole).toDouble(), written[2].layers[2].indicators.entropy);

  // Live: a line appended while the view is open is picked up by the poll; the slider on the
  // last record follows it.
  append_line(run, make_record(40));
  ASSERT_TRUE(wait_for([&] { return t->records().size() == 4; }, 10000));
  EXPECT_EQ(t->plot()->series()[0].x.size(), 4);
  EXPECT_EQ(t->currentRecord()->step, 40);
  EXPECT_DOUBLE_EQ(table->item(0, sink)->data(Qt::UserRole).toDouble(), make_record(40).layers[0].indicators.sink);

  // Unticked: back to the prompt's diagnosis (none yet: an empty table).
  view.findChild<QCheckBox*>(QStringLiteral("timeline_at_step"))->setChecked(false);
  EXPECT_TRUE(view.indicatorSource().contains(QStringLiteral("prompt's diagnosis")));
}

TEST(DiagnosticsOverTime, ARunWithoutTheFileSaysSo) {
  const QString run = copy_of_trained_run(QStringLiteral("no-log"));
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  runs.setCurrent(runs.open(run));
  view.timeline()->poll();
  EXPECT_FALSE(view.timeline()->hasLog());
  EXPECT_TRUE(view.timeline()->message().contains(QStringLiteral("This run has no diagnostics over time")))
      << view.timeline()->message().toStdString();
  EXPECT_FALSE(view.timeline()->showsStep());
  // Only the message shows, in a pane of its height (issue 48: the pane kept 240 px, blank under
  // the message); a run with records gets the plot's room, and gives it back after a switch.
  view.resize(1400, 900);
  view.show();
  wait_for([] { return false; }, 100);
  auto* pane = qobject_cast<QAbstractScrollArea*>(view.timeline()->parentWidget()->parentWidget());
  ASSERT_NE(pane, nullptr) << "the timeline scrolls in a pane of its own";
  EXPECT_LT(view.timeline()->height(), 100);
  EXPECT_LT(pane->height(), 100);
  const int without = runs.current();
  runs.setCurrent(runs.open(trained_run()));
  ASSERT_TRUE(wait_for([&] { return view.timeline()->hasLog() && !view.timeline()->records().empty(); }, 10000));
  wait_for([] { return false; }, 100);
  EXPECT_GT(view.timeline()->height(), 150);
  EXPECT_GT(pane->height(), 150);
  runs.setCurrent(without);
  ASSERT_TRUE(wait_for([&] { return view.timeline()->records().empty(); }, 10000));
  wait_for([] { return false; }, 100);
  EXPECT_LT(pane->height(), 100);
}

TEST(DiagnosticsOverTime, ReadsTheLogATrainingWrote) {
  if (!QFile::exists(QDir(trained_run()).filePath(QStringLiteral("diagnostics.jsonl"))))
    GTEST_SKIP() << "the trainer does not write diagnostics.jsonl yet";
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  runs.setCurrent(runs.open(trained_run()));
  const std::vector<hsm::DiagnosticsRecord> expect = hsm::read_diagnostics_log(trained_run().toStdString());
  ASSERT_FALSE(expect.empty());
  ASSERT_TRUE(wait_for([&] { return view.timeline()->records().size() == expect.size(); }, 10000));
  ASSERT_EQ(view.timeline()->plot()->series().size(), static_cast<int>(expect.front().layers.size()));
  EXPECT_DOUBLE_EQ(view.timeline()->plot()->series()[1].y.back(), expect.back().layers[1].indicators.entropy);
}


TEST(DiagnosticsOverTime, FollowsARunThatTrainsFromItsFirstRecord) {
  // The view follows a run before its folder exists; the trainer's records appear as it
  // validates (polled on the timer), every one of them by the end.
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("live"));
  hsm::RunSpec spec = tiny_run_spec(dir, 120);
  spec.train.steps = 40;
  spec.train.batch_size = 8;
  spec.train.eval_batches = 1;
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  const QString run = QString::fromStdString(spec.run_dir);
  runs.setCurrent(runs.addPending(run, spec.model));
  EXPECT_FALSE(view.timeline()->hasLog());
  ASSERT_TRUE(engine.startTraining(spec));
  ASSERT_TRUE(engine.waitIdle(120000));
  const std::vector<hsm::DiagnosticsRecord> written = hsm::read_diagnostics_log(spec.run_dir);
  ASSERT_GE(written.size(), 4u);
  ASSERT_TRUE(wait_for([&] { return view.timeline()->records().size() == written.size(); }, 10000))
      << view.timeline()->records().size() << " of " << written.size();
  EXPECT_EQ(view.timeline()->records().back().step, written.back().step);
  EXPECT_EQ(view.timeline()->plot()->series().size(), 3);
}

// Issue 69: every bundled model said "no diagnostics over time: it was trained before they were
// recorded"; each now carries the record of its kept checkpoint (`hsm diagnose RUN --record`,
// resources/models/README.md), so the over-time pane shows it on a first start.
TEST(DiagnosticsOverTime, TheBundledModelsShowTheirRecordOnAFirstStart) {
  for (const char* name : {"gpt", "hsm_ab", "hybrid_0_6"}) {
    const QString dir = QStringLiteral(HSM_RESOURCES_PATH "/models/") + QLatin1String(name);
    const hsm::RunInfo info = hsm::read_run_info(dir.toStdString());
    RunList runs;
    EngineHost engine;
    DiagnosticsView view(&runs, &engine);
    runs.setCurrent(runs.open(dir));
    ASSERT_TRUE(wait_for([&] { return view.timeline()->hasLog(); }, 10000))
        << name << ": " << view.timeline()->message().toStdString();
    EXPECT_FALSE(view.timeline()->message().contains(QStringLiteral("no diagnostics over time"))) << name;
    // One record, said so (issue 69: "Recorded at 1 validations").
    EXPECT_TRUE(view.timeline()->message().startsWith(QStringLiteral("Recorded once, at step %1;").arg(info.step)))
        << view.timeline()->message().toStdString();
    const hsm::DiagnosticsRecord& last = view.timeline()->records().back();
    EXPECT_EQ(last.step, info.step) << name;
    EXPECT_EQ(last.prompt, info.training.probe_text) << name;
    ASSERT_EQ(view.timeline()->plot()->series().size(), static_cast<int>(info.model.layers.size())) << name;
    for (const PlotSeries& layer : view.timeline()->plot()->series()) EXPECT_FALSE(layer.y.isEmpty()) << name;
  }
}
