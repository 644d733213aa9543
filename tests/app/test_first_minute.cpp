// What a newcomer meets in the first minute (issue 21): "Train a small model now" on the start
// page trains the starter preset, with its own settings, on the bundled starter corpus and the
// curves fill; the Training view's corpus starts as the starter corpus; the Diagnostics view
// diagnoses the current run when first shown; both programs and Help > About show the one
// version, CMake's project version.
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QTimer>

#include "gui/engine/engine_host.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/start_page.h"
#include "gui/views/training_view.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/plot_panel.h"
#include "hsm/presets.h"
#include "hsm/version.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

int train_points(const PlotPanel* plot) {
  for (const PlotSeries& s : plot->series())
    if (s.name.endsWith(QLatin1String(" train (raw)"))) return static_cast<int>(s.x.size());
  return 0;
}

QString starter_corpus() { return QString::fromStdString(hsm::starter_corpus()); }

}  // namespace

TEST(FirstMinute, TrainASmallModelNowTrainsTheStarterPresetOnTheStarterCorpus) {
  ASSERT_FALSE(starter_corpus().isEmpty()) << "resources/corpus/tinystories-starter.txt is missing";
  MainWindow w;
  w.show();
  w.showStartPage();
  const QString runDir = QDir(temp_root()).filePath(QStringLiteral("starter-run"));
  w.trainingView()->setField(QStringLiteral("run_dir"), runDir);
  w.trainingView()->setField(QStringLiteral("threads"), QStringLiteral("1"));
  auto* button = w.findChild<QPushButton*>(QStringLiteral("train_starter"));
  ASSERT_NE(button, nullptr);
  ASSERT_TRUE(button->isEnabled());
  button->click();

  ASSERT_TRUE(w.engine()->isTraining()) << w.trainingView()->lastError().toStdString();
  EXPECT_FALSE(w.startPageShown());
  EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::kTraining);
  TrainingView* view = w.trainingView();
  // The form shows what is training: the starter preset, its own settings, the starter corpus.
  const hsm::TrainSettings own = hsm::preset_train_settings(hsm::kStarterPreset);
  EXPECT_EQ(view->findChild<QComboBox*>(QStringLiteral("preset"))->currentData().toString(), QStringLiteral("starter"));
  EXPECT_EQ(view->field(QStringLiteral("corpus"))->text(), starter_corpus());
  EXPECT_EQ(view->field(QStringLiteral("steps"))->text().toLongLong(), own.steps);
  EXPECT_EQ(view->field(QStringLiteral("batch_size"))->text().toLongLong(), own.batch_size);
  EXPECT_DOUBLE_EQ(view->field(QStringLiteral("lr"))->text().toDouble(), own.lr);
  EXPECT_EQ(view->findChild<QCheckBox*>(QStringLiteral("cosine"))->isChecked(), own.cosine);
  EXPECT_EQ(view->field(QStringLiteral("threads"))->text(), QStringLiteral("1"));  // the user's, kept

  // The curves fill while it trains; Stop keeps a checkpoint of the starter model.
  ASSERT_TRUE(wait_for([&] { return train_points(view->lossPlot()) >= 1 || !w.engine()->isTraining(); }, 300000));
  ASSERT_GE(train_points(view->lossPlot()), 1) << view->lastError().toStdString();
  w.engine()->stopTraining();
  ASSERT_TRUE(wait_for([&] { return !w.engine()->isTraining(); }, 120000));
  const hsm::RunInfo info = hsm::read_run_info(runDir.toStdString());
  EXPECT_EQ(info.model.name, "starter");
  EXPECT_EQ(info.model.vocab_size, 2000);
  EXPECT_EQ(info.training.batch_size, own.batch_size);
  EXPECT_EQ(info.training.steps, own.steps);
  EXPECT_GT(info.step, 0);
}

TEST(FirstMinute, TheTrainingViewsCorpusStartsAsTheStarterCorpusUntilAnotherIsUsed) {
  QSettings().remove(QStringLiteral("data/last_corpus"));
  RunList runs;
  EngineHost engine;
  {
    TrainingView fresh(&runs, &engine);
    EXPECT_EQ(fresh.field(QStringLiteral("corpus"))->text(), starter_corpus());
  }
  QSettings().setValue(QStringLiteral("data/last_corpus"), QStringLiteral("/data/my-stories.txt"));
  {
    TrainingView returning(&runs, &engine);
    EXPECT_EQ(returning.field(QStringLiteral("corpus"))->text(), QStringLiteral("/data/my-stories.txt"));
  }
  QSettings().remove(QStringLiteral("data/last_corpus"));
}

TEST(FirstMinute, TheDiagnosticsViewDiagnosesTheCurrentRunWhenFirstShown) {
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  view.resize(1400, 900);
  view.show();  // nothing open: nothing to diagnose, and no error either
  QCoreApplication::processEvents();
  EXPECT_FALSE(view.isRunning());
  EXPECT_EQ(view.lastError(), QString());
  view.hide();

  runs.setCurrent(runs.open(trained_run()));
  QCoreApplication::processEvents();
  EXPECT_FALSE(view.isRunning());  // hidden views wait
  const QString defaultPrompt = view.prompt();
  ASSERT_FALSE(defaultPrompt.isEmpty());
  view.show();
  ASSERT_TRUE(wait_for([&] { return view.hasResult(0) && !view.isRunning(); }));
  EXPECT_EQ(view.lastError(), QString());
  EXPECT_EQ(view.diagnosis(0).layers.size(), 3u);
  EXPECT_GT(view.matrixPanel()->rows(), 0);
  EXPECT_EQ(view.prompt(), defaultPrompt);

  // Shown again on the same run: the result stands, nothing runs again.
  view.hide();
  view.show();
  QCoreApplication::processEvents();
  EXPECT_FALSE(view.isRunning());
}

// Issue 48: on an 8-bit display (Xvfb's `-screen 0 WxHx8`) Qt painted every window black and the
// studio crashed in its style's first frame; it stops at once and says what display it needs.
TEST(Display, AnEightBitDisplayIsRefusedWithAMessage) {
  const QString xvfbRun = QStandardPaths::findExecutable(QStringLiteral("xvfb-run"));
  if (xvfbRun.isEmpty() || QStandardPaths::findExecutable(QStringLiteral("Xvfb")).isEmpty())
    GTEST_SKIP() << "no xvfb-run and Xvfb here";
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove(QStringLiteral("QT_QPA_PLATFORM"));  // the X server's display, not offscreen
  const ProcessResult r = run_program(xvfbRun,
                                      {QStringLiteral("-a"), QStringLiteral("-s"), QStringLiteral("-screen 0 640x480x8"),
                                       QStringLiteral(HSM_STUDIO_PATH), QStringLiteral("--version")},
                                      60000, env);
  EXPECT_EQ(r.exit_code, 2) << r.err.toStdString();
  EXPECT_TRUE(QString::fromUtf8(r.err).contains(QStringLiteral("8 bits per pixel"))) << r.err.toStdString();
}

TEST(Version, BothProgramsAndTheAboutBoxShowTheProjectVersion) {
  const QString version = QStringLiteral(HSM_VERSION);
  ASSERT_TRUE(QRegularExpression(QStringLiteral("^\\d+\\.\\d+\\.\\d+$")).match(version).hasMatch()) << HSM_VERSION;
  const ProcessResult cli = run_program(QStringLiteral(HSM_CLI_PATH), {QStringLiteral("--version")});
  EXPECT_EQ(cli.exit_code, 0);
  EXPECT_EQ(QString::fromUtf8(cli.out).trimmed(), QStringLiteral("hsm ") + version);
  const ProcessResult studio = run_program(QStringLiteral(HSM_STUDIO_PATH), {QStringLiteral("--version")});
  EXPECT_EQ(studio.exit_code, 0);
  EXPECT_EQ(QString::fromUtf8(studio.out).trimmed(), QStringLiteral("HSM Studio ") + version);

  MainWindow w;
  QAction* about = nullptr;
  for (QAction* menu : w.menuBar()->actions())
    for (QAction* a : menu->menu()->actions())
      if (a->text().contains(QStringLiteral("About"))) about = a;
  ASSERT_NE(about, nullptr);
  QString shown;
  QTimer::singleShot(100, [&shown] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      shown = box->text();
      box->accept();
    }
  });
  about->trigger();
  EXPECT_TRUE(shown.contains(QStringLiteral("HSM Studio ") + version)) << shown.toStdString();
}
