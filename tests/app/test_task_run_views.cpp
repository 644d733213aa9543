// A run trained on a synthetic task (issue 38) in the studio's other views, driven through their
// widgets: Diagnostics and Probe read a test example of its task instead of text (its tokens by
// the task's labels, the answers marked, the model's answer beside the right one); Playground
// and Losses say what a task run is instead of failing on its missing tokenizer; Weights shows
// its mixers.
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QDir>
#include <atomic>
#include <chrono>
#include <thread>
#include <filesystem>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>

#include "gui/engine/engine_host.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/diagnostics_timeline.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/lab_view.h"
#include "gui/views/losses_view.h"
#include "gui/views/playground_view.h"
#include "gui/views/probe_view.h"
#include "gui/views/training_series.h"
#include "gui/views/weights_view.h"
#include "gui/views/what_if_editor.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/task_example_bar.h"
#include "hsm/evaluator.h"
#include "hsm/model.h"
#include "hsm/task_run.h"
#include "hsm/trainer.h"
#include "../engine/training_test_util.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

constexpr const char* kTask = "mqar:vocab=64,pairs=4,context=32";

// A task run of kTask (tests/engine/training_test_util.h: two attention layers, d 32, 10
// steps), trained once per process.
QString task_run() {
  static const QString dir = [] {
    const hsm::RunSpec spec = hsm::test::tiny_task_run(temp_root().toStdString() + "/task_run", kTask);
    hsm::Trainer(spec).run();
    return QString::fromStdString(spec.run_dir);
  }();
  return dir;
}

// Test example `index` of the run's task, read independently of the views.
hsm::TaskPrompt expected_example(int index) {
  return hsm::task_prompt(*hsm::parse_task(hsm::run_task(task_run().toStdString())), index);
}

QStringList labels_of(const hsm::TaskPrompt& p) {
  QStringList out;
  for (const std::string& l : p.labels) out << QString::fromStdString(l);
  return out;
}

}  // namespace

TEST(TaskRunViews, DiagnosticsShowsATestExampleByItsLabelsAndTheAnswers) {
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  runs.setCurrent(runs.open(task_run()));
  // The example picker stands where the prompt box stood.
  EXPECT_TRUE(view.findChild<QLineEdit*>(QStringLiteral("diag_prompt"))->isHidden());
  ASSERT_FALSE(view.exampleBar()->isHidden());
  EXPECT_TRUE(view.findChild<QLabel*>(QStringLiteral("diag_task"))->text().contains(QStringLiteral("task: mqar:")));
  EXPECT_TRUE(view.timeline()->message().contains(QStringLiteral("A task run"))) << view.timeline()->message().toStdString();

  view.findChild<QSpinBox*>(QStringLiteral("diag_example"))->setValue(2);  // runs it
  ASSERT_TRUE(view.isRunning()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isRunning(); }));
  ASSERT_EQ(view.lastError(), QString());
  ASSERT_TRUE(view.hasResult(0));

  const hsm::TaskPrompt want = expected_example(2);
  const hsm::TaskPrompt& shown = view.example(0);
  EXPECT_EQ(shown.index, 2);
  EXPECT_EQ(view.diagnosis(0).token_ids, want.tokens);
  EXPECT_EQ(view.diagnosis(0).tokens, want.labels);  // "k12", "v7", ...
  ASSERT_EQ(shown.answers, want.answers);
  ASSERT_EQ(shown.predicted.size(), want.answers.size());

  // The map's keys are the labels; its query rows mark the answers.
  HeatmapPanel* m = view.matrixPanel();
  const int L = static_cast<int>(want.tokens.size());
  ASSERT_EQ(m->rows(), L);
  const QStringList labels = labels_of(want);
  for (int64_t t : want.answers) {
    const QString hover = m->hoverText(static_cast<int>(t), 0);
    EXPECT_TRUE(hover.contains(QStringLiteral("▸") + labels[static_cast<int>(t)])) << hover.toStdString();
  }
  EXPECT_TRUE(m->hoverText(0, 0).contains(labels[0])) << m->hoverText(0, 0).toStdString();
  EXPECT_FALSE(m->hoverText(0, 0).contains(QStringLiteral("▸")));

  // The answers line says the model's answer and the right one at each answer position.
  const QString answers = view.exampleBar()->answersText();
  for (size_t i = 0; i < want.answers.size(); ++i) {
    EXPECT_TRUE(answers.contains(QStringLiteral("right: %1").arg(QString::fromStdString(want.answer_labels[i]))))
        << answers.toStdString();
    EXPECT_TRUE(answers.contains(QString::fromStdString(shown.predicted_labels[i]))) << answers.toStdString();
  }
  EXPECT_TRUE(answers.contains(QStringLiteral("%1 of %2 right").arg(shown.right()).arg(want.answers.size())))
      << answers.toStdString();

  // "Next example" diagnoses the next test example.
  view.findChild<QPushButton*>(QStringLiteral("diag_next"))->click();
  ASSERT_TRUE(wait_for([&] { return !view.isRunning() && view.example(0).index == 3; }));
  EXPECT_EQ(view.diagnosis(0).tokens, expected_example(3).labels);

  // The exports name the example: its task, index, labels and answers.
  const QString folder = temp_root() + QStringLiteral("/task_diag_export");
  QString error;
  const QStringList files = view.exportAll(folder, &error);
  EXPECT_EQ(error, QString());
  QFile about(QDir(folder).filePath(QStringLiteral("run-diagnostics.json")));
  ASSERT_TRUE(about.open(QIODevice::ReadOnly)) << files.join(' ').toStdString();
  const QJsonObject json = QJsonDocument::fromJson(about.readAll()).object();
  const QJsonObject example = json[QStringLiteral("task_example")].toObject();
  EXPECT_EQ(example[QStringLiteral("index")].toInt(), 3);
  EXPECT_EQ(example[QStringLiteral("split")].toString(), QStringLiteral("test"));
  EXPECT_EQ(example[QStringLiteral("answers")].toArray().size(), static_cast<int>(expected_example(3).answers.size()));
  EXPECT_EQ(json[QStringLiteral("tokens")].toArray().first().toString(), labels_of(expected_example(3)).first());
}

TEST(TaskRunViews, ProbesLensAndRolloutWorkOnATaskExample) {
  RunList runs;
  EngineHost engine;
  ProbeView view(&runs, &engine);
  runs.setCurrent(runs.open(task_run()));
  EXPECT_TRUE(view.findChild<QLineEdit*>(QStringLiteral("probe_prompt"))->isHidden());
  ASSERT_FALSE(view.exampleBar()->isHidden());
  ASSERT_TRUE(view.runProbe()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isProbing(); }));
  ASSERT_TRUE(view.hasProbe()) << view.lastError().toStdString();

  const hsm::TaskPrompt want = expected_example(0);
  const hsm::Probe& p = view.probe();
  EXPECT_EQ(p.token_ids, want.tokens);
  EXPECT_EQ(p.tokens, want.labels);
  ASSERT_EQ(view.example().answers, want.answers);
  QTableWidget* lens = view.lensTable();
  ASSERT_EQ(lens->columnCount(), static_cast<int>(want.tokens.size()));
  const int last = lens->rowCount() - 1;  // after the last block: the model's own prediction
  for (size_t i = 0; i < want.answers.size(); ++i) {
    const int t = static_cast<int>(want.answers[i]);
    EXPECT_EQ(lens->horizontalHeaderItem(t)->text(), QStringLiteral("▸") + labels_of(want)[t]);
    EXPECT_EQ(lens->item(last, t)->text(), QString::fromStdString(view.example().predicted_labels[i]));
    EXPECT_TRUE(view.lensTooltip(last, t).contains(QStringLiteral("right answer “%1”")
                                                      .arg(QString::fromStdString(want.answer_labels[i]))))
        << view.lensTooltip(last, t).toStdString();
  }
  EXPECT_EQ(view.rolloutPanel()->rows(), static_cast<int>(want.tokens.size()));

  // The ablation scores a corpus: refused on a task run with the reason.
  EXPECT_FALSE(view.findChild<QPushButton*>(QStringLiteral("ablation_run"))->isEnabled());
  EXPECT_FALSE(view.runAblation());
  EXPECT_TRUE(view.lastError().contains(QStringLiteral("trained on a task"))) << view.lastError().toStdString();

  const QStringList files = view.exportAll(temp_root() + QStringLiteral("/task_probe_export"));
  EXPECT_TRUE(files.contains(temp_root() + QStringLiteral("/task_probe_export/run-probe-example.json")))
      << files.join(' ').toStdString();
}

TEST(TaskRunViews, PlaygroundAndLossesSayWhatATaskRunIs) {
  RunList runs;
  EngineHost engine;
  PlaygroundView playground(&runs, &engine);
  LossesView losses(&runs, &engine);
  runs.setCurrent(runs.open(task_run()));

  EXPECT_FALSE(playground.findChild<QPushButton*>(QStringLiteral("generate"))->isEnabled());
  EXPECT_TRUE(playground.findChild<QLabel*>(QStringLiteral("hint"))->text().contains(QStringLiteral("generates no text")));
  EXPECT_FALSE(playground.generate());
  EXPECT_TRUE(playground.lastError().contains(QStringLiteral("Diagnostics"))) << playground.lastError().toStdString();

  EXPECT_TRUE(losses.statusText().contains(QStringLiteral("reads no text"))) << losses.statusText().toStdString();
  EXPECT_EQ(losses.findChild<QPushButton*>(QStringLiteral("losses_score"))->text(), QStringLiteral("Score test examples"));
  ASSERT_TRUE(losses.score()) << losses.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !losses.isScoring(); }));
  const hsm::TaskScore s = hsm::score_task_run(task_run().toStdString(), 256);
  EXPECT_TRUE(losses.statusText().contains(QStringLiteral("answer accuracy %1").arg(s.answer_accuracy, 0, 'f', 3)))
      << losses.statusText().toStdString();
}

// The Training view's accuracy plot: a task run's validation accuracy is on its answers, and its
// sequence accuracy (every answer of an example right) is drawn beside it.
TEST(TaskRunViews, TrainingCurvesShowAnswerAndSequenceAccuracy) {
  RunList runs;
  const int row = runs.open(task_run());
  const RunEntry& run = runs.at(row);
  const TrainingCurves c = training_curves({&run}, 0, CurveOptions{});
  ASSERT_EQ(c.accuracy.size(), 2);
  EXPECT_EQ(c.accuracy[0].name, run.name() + QStringLiteral(" answers"));
  EXPECT_EQ(c.accuracy[1].name, run.name() + QStringLiteral(" sequences"));
  const hsm::MetricRecord* last = nullptr;
  for (const hsm::MetricRecord& m : run.metrics)
    if (m.kind == "eval") last = &m;
  ASSERT_NE(last, nullptr);
  ASSERT_FALSE(c.accuracy[1].y.isEmpty());
  EXPECT_DOUBLE_EQ(c.accuracy[1].y.back(), last->sequence_accuracy);
  EXPECT_DOUBLE_EQ(c.accuracy[0].y.back(), last->val_accuracy);
}

// The Weights view shows a task run's mixers, and a knock-out is scored on the task's test
// examples (the run reads no text): trained against edited, as the engine scores them.
TEST(TaskRunViews, WeightsViewScoresAKnockOutOnTheTestExamples) {
  RunList runs;
  EngineHost engine;
  WeightsView view(&runs, &engine);
  runs.setCurrent(runs.open(task_run()));
  view.resize(1400, 900);
  view.show();
  ASSERT_TRUE(wait_for([&] { return !view.weights().empty() && !view.isWaiting(); }));
  EXPECT_EQ(view.weights().size(), 2u);
  view.whatIfEditor()->knockOutBox(0)->setChecked(true);
  ASSERT_TRUE(wait_for([&] { return view.lossText().contains(QStringLiteral("→")); }, 60000))
      << view.lossText().toStdString();
  const auto model = hsm::Model::load(task_run().toStdString(), "cpu");
  const hsm::TaskScore trained = hsm::Evaluator(model).score_task(256);
  const hsm::TaskScore edited = hsm::Evaluator(model->edited(hsm::WhatIf{{hsm::KnockOut{0, -1}}, {}})).score_task(256);
  EXPECT_TRUE(view.lossText().contains(QStringLiteral("test answer accuracy %1 → %2")
                                           .arg(trained.answer_accuracy, 0, 'f', 3)
                                           .arg(edited.answer_accuracy, 0, 'f', 3)))
      << view.lossText().toStdString();
  EXPECT_TRUE(view.lossText().contains(QString::number(edited.loss, 'f', 3))) << view.lossText().toStdString();
}

// A task example's answer rows keep their labels when a heatmap thins them out (say row 62 of
// 64, which no thinning step under 31 keeps); the others stay thinned.
TEST(TaskRunViews, HeatmapKeepsThePinnedRowLabels) {
  HeatmapPanel panel(QStringLiteral("m"), QStringLiteral("key"), QStringLiteral("query"));
  panel.resize(400, 260);
  panel.show();
  QStringList labels;
  for (int i = 0; i < 64; ++i) labels << QStringLiteral("k%1").arg(i);
  labels[62] = QStringLiteral("▸k62");
  panel.setPinnedRows({62});
  panel.setMatrix(64, 64, std::vector<double>(64 * 64, 0.5), labels, labels);
  auto rows = [&] { return panel.plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>(); };
  ASSERT_TRUE(wait_for([&] { return rows() && rows()->ticks().size() < 20; }, 5000));  // thinned to fit
  EXPECT_EQ(rows()->ticks().value(62), QStringLiteral("▸k62"));
  EXPECT_EQ(rows()->ticks().value(0), QStringLiteral("k0"));
}

// The path: a Lab view cell asks for its run (runRequested, as a double-click does), the
// window opens it in Diagnostics, which diagnoses a test example of its task at once.
TEST(TaskRunViews, ALabCellOpensItsRunInDiagnosticsOnATestExample) {
  MainWindow w;
  w.resize(1280, 720);
  w.show();
  emit w.labView()->runRequested(task_run());
  DiagnosticsView* view = w.diagnosticsView();
  ASSERT_TRUE(wait_for([&] { return view->hasResult(0) && !view->isRunning(); })) << view->lastError().toStdString();
  EXPECT_TRUE(view->isVisible());
  EXPECT_EQ(view->example(0).index, 0);
  EXPECT_EQ(view->diagnosis(0).tokens, expected_example(0).labels);
  EXPECT_FALSE(view->exampleBar()->answersText().isEmpty());
}

// A damaged task.json does not keep the run from opening (its curves still show); diagnosing it
// says what is wrong with the file.
TEST(TaskRunViews, ADamagedTaskFileIsNamedWhenTheRunIsDiagnosed) {
  const QString copy = temp_root() + QStringLiteral("/damaged_task_run");
  std::filesystem::remove_all(copy.toStdString());
  std::filesystem::copy(task_run().toStdString(), copy.toStdString(), std::filesystem::copy_options::recursive);
  {
    QFile f(copy + QStringLiteral("/task.json"));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write("{\"no\": 1}");
  }
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  int row = -1;
  ASSERT_NO_THROW(row = runs.open(copy));
  EXPECT_FALSE(runs.at(row).metrics.empty());
  runs.setCurrent(row);
  ASSERT_TRUE(view.run()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isRunning(); }));
  EXPECT_TRUE(view.lastError().contains(QStringLiteral("task.json is damaged"))) << view.lastError().toStdString();
}

// Issue 46: a task.json that is a FIFO once blocked the GUI thread in RunList::open (the
// studio's own --smoke --timeout never fired). The run opens at once (its curves show), and
// diagnosing it names the file. A watchdog feeds the FIFO an end of file if the open waits on it.
TEST(TaskRunViews, AFifoTaskFileNeverBlocksTheGuiThread) {
  const QString copy = temp_root() + QStringLiteral("/fifo_task_run");
  std::filesystem::remove_all(copy.toStdString());
  std::filesystem::copy(task_run().toStdString(), copy.toStdString(), std::filesystem::copy_options::recursive);
  const std::string fifo = copy.toStdString() + "/task.json";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::atomic<bool> opened{false}, fed{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 200 && !opened; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    while (!opened) {  // the open waits on the FIFO: a writer that closes at once lets it go on
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        fed = true;
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  int row = -1;
  EXPECT_NO_THROW(row = runs.open(copy));
  opened = true;
  watchdog.join();
  EXPECT_FALSE(fed) << "RunList::open waited on the FIFO task.json (the GUI thread was blocked)";
  ASSERT_GE(row, 0);
  EXPECT_FALSE(runs.at(row).metrics.empty());
  runs.setCurrent(row);
  ASSERT_TRUE(view.run()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isRunning(); }));
  EXPECT_TRUE(view.lastError().contains(QStringLiteral("task.json"))) << view.lastError().toStdString();
  EXPECT_TRUE(view.lastError().contains(QStringLiteral("FIFO"))) << view.lastError().toStdString();
}
