// The Training view driven through its widgets: a tiny run started with the Start button
// puts points into the plots, pauses and resumes, stops into a run folder that `hsm eval`
// loads; the CSV export holds the plotted numbers; bad values are refused beside the field.
#include <gtest/gtest.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QTimer>
#include <cmath>
#include <qcustomplot.h>

#include "gui/engine/engine_host.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/training_view.h"
#include "gui/views/weights_view.h"
#include "gui/widgets/field_error.h"
#include "gui/widgets/plot_panel.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

struct Studio {
  RunList runs;
  EngineHost engine;
  TrainingView view{&runs, &engine};
};

void fill_tiny(TrainingView& view, const QString& dir, int steps) {
  ASSERT_TRUE(view.setModel(tiny_config(dir)));
  view.setCorpus(make_corpus(dir));
  view.setField(QStringLiteral("steps"), QString::number(steps));
  view.setField(QStringLiteral("batch_size"), QStringLiteral("8"));
  view.setField(QStringLiteral("eval_every"), QStringLiteral("10"));
  view.setField(QStringLiteral("checkpoint_every"), QStringLiteral("1000"));
  view.setField(QStringLiteral("threads"), QStringLiteral("1"));
  view.setField(QStringLiteral("device"), QStringLiteral("cpu"));
  view.setField(QStringLiteral("run_dir"), QDir(dir).filePath(QStringLiteral("run")));
}

int train_points(const PlotPanel* plot) {
  for (const PlotSeries& s : plot->series())
    if (s.name.endsWith(QLatin1String(" train (raw)"))) return static_cast<int>(s.x.size());
  return 0;
}

}  // namespace

TEST(TrainingView, StartPauseResumeStopAndTheRunFolderEvaluates) {
  Studio s;
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("train-view"));
  fill_tiny(s.view, dir, 100000);  // runs until stopped
  s.view.field(QStringLiteral("lr"))->setText(QStringLiteral("0.003"));
  s.view.setField(QStringLiteral("windows"), QStringLiteral("story_start"));
  s.view.setField(QStringLiteral("keep_best"), QStringLiteral("true"));
  // The probe text of diagnostics.jsonl is a field like the others, the paper's prompt by default.
  EXPECT_EQ(s.view.field(QStringLiteral("probe_text"))->text().toStdString(), hsm::TrainSettings{}.probe_text);
  s.view.setField(QStringLiteral("probe_text"), QStringLiteral("Once upon a time"));
  hsm::RunSpec spec;
  ASSERT_TRUE(s.view.buildSpec(spec));
  EXPECT_EQ(spec.train.windows, "story_start");
  EXPECT_TRUE(spec.train.keep_best);
  EXPECT_EQ(spec.train.probe_text, "Once upon a time");
  s.view.startButton()->click();
  ASSERT_TRUE(s.engine.isTraining()) << s.view.lastError().toStdString();
  EXPECT_FALSE(s.view.startButton()->isEnabled());
  ASSERT_EQ(s.runs.count(), 1);

  // Points arrive in the loss plot while it trains.
  ASSERT_TRUE(wait_for([&] { return train_points(s.view.lossPlot()) >= 3 || !s.engine.isTraining(); }));
  ASSERT_TRUE(s.engine.isTraining()) << "training ended: " << s.view.lastError().toStdString();

  // Pause: the step count stops moving; resume: it moves again.
  s.view.pauseButton()->click();
  ASSERT_TRUE(wait_for([&] { return s.engine.isPaused(); }, 10000));
  EXPECT_EQ(s.view.pauseButton()->text(), QStringLiteral("Resume"));
  wait_for([] { return false; }, 600);  // let a step in flight finish and be logged
  s.runs.poll();
  const size_t pausedAt = s.runs.at(0).metrics.size();
  wait_for([] { return false; }, 800);
  s.runs.poll();
  EXPECT_EQ(s.runs.at(0).metrics.size(), pausedAt) << "metrics grew while paused";
  s.view.pauseButton()->click();
  ASSERT_TRUE(wait_for([&] {
    s.runs.poll();
    return s.runs.at(0).metrics.size() > pausedAt + 1;
  }));

  // Stop: a checkpoint that the CLI evaluates.
  s.view.stopButton()->click();
  ASSERT_TRUE(wait_for([&] { return !s.engine.isTraining(); }));
  EXPECT_TRUE(s.view.startButton()->isEnabled());
  const QString run = QDir(dir).filePath(QStringLiteral("run"));
  const hsm::RunInfo info = hsm::read_run_info(run.toStdString());
  EXPECT_GT(info.step, 0);
  const ProcessResult eval =
      run_program(QStringLiteral(HSM_CLI_PATH), {QStringLiteral("eval"), run, QStringLiteral("--json"),
                                                 QStringLiteral("--threads"), QStringLiteral("1")});
  ASSERT_EQ(eval.exit_code, 0) << eval.err.toStdString();
  const QJsonObject j = QJsonDocument::fromJson(eval.out).object();
  EXPECT_TRUE(std::isfinite(j.value(QStringLiteral("loss")).toDouble(NAN))) << eval.out.toStdString();
  EXPECT_LT(j.value(QStringLiteral("loss")).toDouble(), std::log(300.0));  // learned something

  // The CSV export holds exactly the plotted numbers: every raw train loss of the run.
  s.runs.poll();
  const QString csv = QDir(dir).filePath(QStringLiteral("loss.csv"));
  ASSERT_EQ(s.view.lossPlot()->exportTo(csv), QString());
  QFile f(csv);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  ASSERT_GT(lines.size(), 1);
  EXPECT_EQ(lines[0], QStringLiteral("series,\"step\",\"loss (nats)\""));
  std::vector<std::pair<double, double>> raw;
  for (const QString& line : lines)
    if (line.startsWith(QLatin1String("\"run train (raw)\""))) {
      const QStringList cols = line.split(QLatin1Char(','));
      raw.emplace_back(cols[1].toDouble(), cols[2].toDouble());
    }
  std::vector<std::pair<double, double>> expected;
  for (const hsm::MetricRecord& m : hsm::read_metrics(run.toStdString()))
    if (m.kind == "train" && std::isfinite(m.train_loss)) expected.emplace_back(double(m.step), m.train_loss);
  ASSERT_EQ(raw.size(), expected.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    EXPECT_EQ(raw[i].first, expected[i].first);
    EXPECT_DOUBLE_EQ(raw[i].second, expected[i].second);
  }
  for (const char* ext : {"png", "pdf", "svg"}) {
    const QString path = QDir(dir).filePath(QStringLiteral("loss.") + QLatin1String(ext));
    EXPECT_EQ(s.view.lossPlot()->exportTo(path), QString());
    EXPECT_GT(QFileInfo(path).size(), 500) << ext;
  }
}

TEST(TrainingView, BadValuesAreRefusedBesideTheirFields) {
  Studio s;
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("bad-fields"));
  fill_tiny(s.view, dir, 10);
  s.view.field(QStringLiteral("batch_size"))->setText(QStringLiteral("abc"));
  s.view.field(QStringLiteral("lr"))->setText(QStringLiteral("-0.5"));
  s.view.field(QStringLiteral("corpus"))->setText(QStringLiteral("/no/such/corpus.txt"));
  s.view.show();
  s.view.startButton()->click();
  EXPECT_FALSE(s.engine.isTraining());
  EXPECT_EQ(s.runs.count(), 0);
  for (const char* field : {"batch_size", "lr", "corpus"}) {
    FieldError* e = s.view.fieldError(QLatin1String(field));
    ASSERT_NE(e, nullptr) << field;
    EXPECT_TRUE(e->hasError()) << field;
    EXPECT_TRUE(e->isVisible()) << field;
  }
  EXPECT_TRUE(s.view.fieldError(QStringLiteral("batch_size"))->text().contains(QStringLiteral("'abc' is not a whole number")));
  EXPECT_TRUE(s.view.fieldError(QStringLiteral("lr"))->text().contains(QStringLiteral("out of range")));
  EXPECT_TRUE(s.view.fieldError(QStringLiteral("corpus"))->text().contains(QStringLiteral("does not exist")));
  EXPECT_FALSE(s.view.fieldError(QStringLiteral("steps"))->hasError());
  // Editing a refused field clears its message.
  s.view.field(QStringLiteral("batch_size"))->setText(QStringLiteral("8"));
  emit s.view.field(QStringLiteral("batch_size"))->textEdited(QStringLiteral("8"));
  EXPECT_FALSE(s.view.fieldError(QStringLiteral("batch_size"))->hasError());
  // An unknown preset or config is refused too.
  EXPECT_FALSE(s.view.setModel(QStringLiteral("no_such_preset")));
  EXPECT_TRUE(s.view.fieldError(QStringLiteral("preset"))->hasError());
}

// A preset with training settings of its own (the starter) fills the form when picked in the
// preset box, as the start page's button does; picking another preset puts back the paper's
// defaults in the fields it filled, but not in one the user edited since.
TEST(TrainingView, ThePresetBoxFillsAPresetsOwnTrainingSettings) {
  Studio s;
  auto* box = s.view.findChild<QComboBox*>(QStringLiteral("preset"));
  ASSERT_NE(box, nullptr);
  const hsm::TrainSettings own = hsm::preset_train_settings(hsm::kStarterPreset), paper;
  ASSERT_NE(own.steps, paper.steps);  // else this test shows nothing
  ASSERT_NE(own.batch_size, paper.batch_size);
  const QString threads = s.view.field(QStringLiteral("threads"))->text();
  box->setCurrentIndex(box->findData(QStringLiteral("starter")));
  EXPECT_EQ(s.view.field(QStringLiteral("steps"))->text().toLongLong(), own.steps);
  EXPECT_EQ(s.view.field(QStringLiteral("batch_size"))->text().toLongLong(), own.batch_size);
  EXPECT_DOUBLE_EQ(s.view.field(QStringLiteral("lr"))->text().toDouble(), own.lr);
  EXPECT_EQ(s.view.field(QStringLiteral("threads"))->text(), threads);  // this machine's, not the preset's
  s.view.setField(QStringLiteral("batch_size"), QStringLiteral("24"));  // the user's own value
  box->setCurrentIndex(box->findData(QStringLiteral("hsm_ab")));
  EXPECT_EQ(s.view.field(QStringLiteral("steps"))->text().toLongLong(), paper.steps);
  EXPECT_DOUBLE_EQ(s.view.field(QStringLiteral("lr"))->text().toDouble(), paper.lr);
  EXPECT_EQ(s.view.field(QStringLiteral("batch_size"))->text(), QStringLiteral("24"));
}

TEST(MainWindowClose, DuringTrainingAsksThenStopsAndKeepsTheCheckpoint) {
  MainWindow w;
  w.show();
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("close-while-training"));
  fill_tiny(*w.trainingView(), dir, 100000);
  w.trainingView()->startButton()->click();
  ASSERT_TRUE(w.engine()->isTraining());
  ASSERT_TRUE(wait_for([&] { return train_points(w.trainingView()->lossPlot()) >= 2 || !w.engine()->isTraining(); }));
  // First answer Cancel: the window stays and training goes on.
  auto answer = [](QMessageBox::StandardButton button) {
    QTimer::singleShot(100, [button] {
      if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) box->button(button)->click();
    });
  };
  answer(QMessageBox::Cancel);
  EXPECT_FALSE(w.close());
  EXPECT_TRUE(w.isVisible());
  EXPECT_TRUE(w.engine()->isTraining());
  // Then Yes: training stops after its step, the checkpoint is written, the window closes.
  answer(QMessageBox::Yes);
  w.close();
  ASSERT_TRUE(wait_for([&] { return !w.isVisible(); }, 60000));
  EXPECT_FALSE(w.engine()->isTraining());
  const hsm::RunInfo info = hsm::read_run_info(QDir(dir).filePath(QStringLiteral("run")).toStdString());
  EXPECT_GT(info.step, 0);
}

// A run trained in the studio joins Recent and reopens after a restart: a new main window (the
// same settings, kept in the test's own folder by test_main.cpp) lists it first on its start
// page, and a click there opens it. The bundled demo models do not crowd Recent.
TEST(MainWindowRecent, ARunTrainedInTheStudioIsInRecentAfterARestart) {
  QSettings().remove(QStringLiteral("runs/recent"));
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("recent-after-restart"));
  const QString run = QDir(QDir(dir).filePath(QStringLiteral("run"))).absolutePath();
  {
    MainWindow w;
    w.show();
    fill_tiny(*w.trainingView(), dir, 10);
    w.trainingView()->startButton()->click();
    ASSERT_TRUE(w.engine()->isTraining()) << w.trainingView()->lastError().toStdString();
    ASSERT_TRUE(wait_for([&] { return !w.engine()->isTraining(); }));
    w.openBundledModels();
  }
  MainWindow again;
  again.show();
  again.showStartPage();
  auto* recent = again.findChild<QListWidget*>(QStringLiteral("recent_runs"));
  ASSERT_NE(recent, nullptr);
  ASSERT_EQ(recent->count(), 1);  // the trained run, not the demo models
  // (ASSERT: a click on the placeholder of an empty list would open a message box and wait.)
  ASSERT_EQ(recent->item(0)->data(Qt::UserRole).toString(), run);
  EXPECT_EQ(again.runs()->indexOf(run), -1);
  ASSERT_TRUE(
      wait_for([&] { return recent->isVisible() && recent->visualItemRect(recent->item(0)).height() > 0; }, 10000));
  const QRect at = recent->visualItemRect(recent->item(0));
  click(recent->viewport(), QPointF(at.center()));
  ASSERT_NE(again.runs()->indexOf(run), -1);
  EXPECT_EQ(again.runs()->currentRun()->dir, run);
}

// Issue 48: a run trained now among the three bundled demo runs is drawn above their curves
// and thicker, in every plot of the Training view, whatever the order the runs were opened in.
TEST(TrainingView, TheCurrentRunIsDrawnAboveTheOthersAndThicker) {
  Studio s;
  const int mine = s.runs.open(trained_run());
  for (const char* m : {"gpt", "hsm_ab", "hybrid_0_6"})
    ASSERT_GE(s.runs.open(QStringLiteral(HSM_RESOURCES_PATH "/models/") + QLatin1String(m)), 0) << m;
  s.runs.setCurrent(mine);
  s.view.resize(1280, 720);
  s.view.show();
  const QString name = s.runs.at(mine).name();
  auto drawOrder = [](QCPGraph* g) { return std::pair(g->layer()->index(), g->layer()->children().indexOf(g)); };
  ASSERT_TRUE(wait_for([&] { return s.view.lossPlot()->plot()->graphCount() >= 8; })) << s.view.lossPlot()->plot()->graphCount();
  for (PlotPanel* panel : {s.view.lossPlot(), s.view.findChild<PlotPanel*>(QStringLiteral("Validation accuracy"))}) {
    ASSERT_NE(panel, nullptr);
    QCustomPlot* p = panel->plot();
    QList<QCPGraph*> current, others;
    for (int i = 0; i < p->graphCount(); ++i) {
      QCPGraph* g = p->graph(i);
      if (g->name().endsWith(QLatin1String(" train (raw)"))) continue;  // faint, beneath on purpose
      (g->name().startsWith(name + QLatin1Char(' ')) || g->name() == name ? current : others) << g;
    }
    ASSERT_FALSE(current.isEmpty()) << panel->title().toStdString();
    ASSERT_GE(others.size(), 3) << panel->title().toStdString();
    for (QCPGraph* c : current)
      for (QCPGraph* o : others) {
        EXPECT_GT(drawOrder(c), drawOrder(o)) << c->name().toStdString() << " drawn beneath " << o->name().toStdString();
        EXPECT_GT(c->pen().widthF(), o->pen().widthF()) << c->name().toStdString() << " vs " << o->name().toStdString();
      }
  }
}

// Issue 69: a bundled run in the Training view says how it was trained and where it ended,
// above its curves (its form on the left is a new run's, with the paper's defaults).
TEST(TrainingView, TheCurrentRunsOwnSettingsAndLastValidationAreShown) {
  RunList runs;
  EngineHost engine;
  TrainingView view(&runs, &engine);
  runs.setCurrent(runs.open(QStringLiteral(HSM_RESOURCES_PATH "/models/hsm_ab")));
  ASSERT_TRUE(wait_for([&] { return !view.runSummaryText().isEmpty(); }, 10000));
  const RunEntry& run = *runs.currentRun();
  const QString text = view.runSummaryText();
  const qint64 steps = run.info.total_steps > 0 ? run.info.total_steps : run.info.training.steps;
  EXPECT_TRUE(text.contains(QStringLiteral("%1 steps of %2 windows").arg(steps).arg(run.info.training.batch_size)))
      << text.toStdString();
  double last = NAN;
  for (const hsm::MetricRecord& m : run.metrics)
    if (m.kind == "eval" && std::isfinite(m.val_loss)) last = m.val_loss;
  ASSERT_TRUE(std::isfinite(last));
  EXPECT_TRUE(text.contains(QStringLiteral("loss %1 nats").arg(last, 0, 'f', 3))) << text.toStdString();
}

// Issue 69's walk: a run training says the step its metrics reached, as the status bar and the
// progress bar do, not its last checkpoint's ("at step 100 now" while the bar said 170 / 600).
TEST(TrainingView, ATrainingRunsSummarySaysTheStepItsMetricsReached) {
  RunEntry run;
  run.dir = QStringLiteral("/tmp/starter-run");
  run.has_info = true;
  run.info.step = 100;  // its last checkpoint
  run.info.total_steps = 600;
  run.info.training.batch_size = 16;
  for (const int64_t step : {150, 170}) {
    hsm::MetricRecord m;
    m.kind = "train";
    m.step = step;
    run.metrics.push_back(m);
  }
  const QString text = TrainingView::runSummary(run);
  EXPECT_TRUE(text.contains(QStringLiteral("(at step 170 now)"))) << text.toStdString();
  run.metrics.back().step = 600;  // finished: no "now"
  EXPECT_FALSE(TrainingView::runSummary(run).contains(QStringLiteral("now"))) << TrainingView::runSummary(run).toStdString();
}

// Issue 69: the Training view's form shows the current run as it was trained (a bundled run
// that trained 460 steps of 32 showed the paper's defaults: steps 0, epochs 20, batch 256), and
// a new run started from it is that run again; the loss plot's legend has each run's last
// validation loss beside its name.
TEST(TrainingView, TheFormShowsTheCurrentRunsSettingsAndANewRunStartsFromThem) {
  Studio s;
  const QString bundled = QStringLiteral(HSM_RESOURCES_PATH "/models/hsm_ab");
  const hsm::RunInfo info = hsm::read_run_info(bundled.toStdString());
  ASSERT_NE(info.training.batch_size, hsm::TrainSettings{}.batch_size);  // else this test shows nothing
  s.runs.setCurrent(s.runs.open(bundled));
  EXPECT_EQ(s.view.field(QStringLiteral("steps"))->text().toLongLong(), info.training.steps);
  EXPECT_EQ(s.view.field(QStringLiteral("batch_size"))->text().toLongLong(), info.training.batch_size);
  // (Trained for a number of steps, it records no epochs: the field keeps its default, unused.)
  EXPECT_DOUBLE_EQ(s.view.field(QStringLiteral("epochs"))->text().toDouble(),
                   info.training.epochs > 0 ? info.training.epochs : hsm::TrainSettings{}.epochs);
  EXPECT_DOUBLE_EQ(s.view.field(QStringLiteral("lr"))->text().toDouble(), info.training.lr);
  EXPECT_EQ(s.view.field(QStringLiteral("eval_every"))->text().toLongLong(), info.training.eval_every);
  EXPECT_EQ(s.view.findChild<QCheckBox*>(QStringLiteral("keep_best"))->isChecked(), info.training.keep_best);
  EXPECT_EQ(s.view.findChild<QComboBox*>(QStringLiteral("windows"))->currentData().toString().toStdString(),
            info.training.windows);
  EXPECT_EQ(s.view.field(QStringLiteral("tokenizer"))->text().toStdString(), hsm::RunFolder(info.dir).tokenizer);

  // A new run from the form: the run's model, settings and tokenizer, in a fresh folder.
  const QString threads = s.view.field(QStringLiteral("threads"))->text();
  hsm::RunSpec spec;
  s.view.setCorpus(make_corpus(QDir(temp_root()).filePath(QStringLiteral("form-from-run"))));
  ASSERT_TRUE(s.view.buildSpec(spec)) << s.view.lastError().toStdString();
  EXPECT_EQ(spec.model, info.model);
  EXPECT_EQ(spec.train.steps, info.training.steps);
  EXPECT_EQ(spec.train.batch_size, info.training.batch_size);
  EXPECT_DOUBLE_EQ(spec.train.min_lr, hsm::TrainSettings{}.min_lr);  // no field: a new run's default
  EXPECT_EQ(spec.tokenizer_path, hsm::RunFolder(info.dir).tokenizer);
  EXPECT_NE(spec.run_dir, info.dir);
  EXPECT_EQ(s.view.field(QStringLiteral("threads"))->text(), threads);  // this machine's

  // A preset chosen afterwards (the Start page's "Set up training", the paper's hyper-parameters
  // filled in): the paper's defaults again, and a new tokenizer.
  ASSERT_TRUE(s.view.setModel(QStringLiteral("hsm_ab")));
  EXPECT_EQ(s.view.field(QStringLiteral("steps"))->text().toLongLong(), hsm::TrainSettings{}.steps);
  EXPECT_EQ(s.view.field(QStringLiteral("batch_size"))->text().toLongLong(), hsm::TrainSettings{}.batch_size);
  EXPECT_EQ(s.view.field(QStringLiteral("tokenizer"))->text(), QString());

  // Another run made current: its own settings.
  s.runs.setCurrent(s.runs.open(trained_run()));
  EXPECT_EQ(s.view.field(QStringLiteral("steps"))->text().toLongLong(), 20);
  EXPECT_EQ(s.view.field(QStringLiteral("batch_size"))->text().toLongLong(), 16);

  // A number per model beside the curves: the legend's entry ends with its last validation loss.
  ASSERT_TRUE(wait_for([&] { return !s.view.lossPlot()->series().isEmpty(); }, 10000));
  for (int row = 0; row < s.runs.count(); ++row) {
    const RunEntry& run = s.runs.at(row);
    double last = NAN;
    for (const hsm::MetricRecord& m : run.metrics)
      if (m.kind == "eval" && std::isfinite(m.val_loss)) last = m.val_loss;
    ASSERT_TRUE(std::isfinite(last));
    bool found = false;
    for (const PlotSeries& series : s.view.lossPlot()->series())
      found = found || (series.in_legend && series.legend.startsWith(run.name()) &&
                        series.legend.endsWith(QString::number(last, 'f', 3)));
    EXPECT_TRUE(found) << run.name().toStdString() << " has no legend entry ending with " << last;
  }
}

// Issue 69: "Train a small model now" trains with partial validations (its eval_batches 20); once
// its training is over the Weights view shows its own evaluation on every window, as the bundled
// models show theirs.
TEST(TrainingView, AFinishedRunsWeightsViewShowsItsEvaluation) {
  Studio s;
  WeightsView weights(&s.runs, &s.engine);
  weights.resize(1280, 720);
  weights.show();
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("finished-headline"));
  fill_tiny(s.view, dir, 30);
  s.view.startButton()->click();
  ASSERT_TRUE(s.engine.isTraining()) << s.view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !s.engine.isTraining(); }));
  ASSERT_TRUE(wait_for([&] { return weights.lossText().contains(QStringLiteral("its evaluation")); }, 60000))
      << "\"" << weights.lossText().toStdString() << "\"";
  EXPECT_TRUE(weights.edits().empty());
}
