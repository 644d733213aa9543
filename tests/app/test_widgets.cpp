// Plot decimation and export at 100k points, token tinting, the run list following a run
// that another process writes, the main window's start page, the stall monitor's report of
// the slowest GUI events.
#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QDir>
#include <QRegularExpression>
#include <QFontMetrics>
#include <QFile>
#include <QLabel>
#include <QPainter>
#include <QTabWidget>
#include <ctime>

#include "gui/main_window.h"
#include "gui/stall_monitor.h"
#include "gui/studio_application.h"
#include "gui/run_list.h"
#include "gui/engine/engine_host.h"
#include "gui/views/lab_view.h"
#include "gui/views/playground_view.h"
#include "gui/views/probe_view.h"
#include "gui/widgets/colour_maps.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/token_text.h"
#include "hsm/run_folder.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

TEST(PlotPanel, HundredThousandPointsAreDrawnDecimatedAndExportedWhole) {
  PlotPanel plot(QStringLiteral("Loss"), QStringLiteral("step"), QStringLiteral("loss"));
  PlotSeries s;
  s.name = QStringLiteral("train");
  s.color = Qt::blue;
  for (int i = 0; i < 100000; ++i) {
    s.x << i;
    s.y << 5.0 / (1 + i * 1e-3) + ((i == 54321) ? 7.0 : 0.0);  // one spike must survive
  }
  plot.setSeries({s});
  EXPECT_LE(plot.drawnPoints(0), PlotPanel::kMaxDrawnPoints);
  EXPECT_GT(plot.drawnPoints(0), PlotPanel::kMaxDrawnPoints / 2);
  double maxDrawn = 0;
  for (auto it = plot.plot()->graph(0)->data()->begin(); it != plot.plot()->graph(0)->data()->end(); ++it)
    maxDrawn = std::max(maxDrawn, it->value);
  EXPECT_NEAR(maxDrawn, 5.0 / (1 + 54321e-3) + 7.0, 1e-9);

  const QString csv = QDir(temp_root()).filePath(QStringLiteral("big.csv"));
  ASSERT_EQ(plot.exportTo(csv), QString());
  QFile f(csv);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  int lines = 0;
  while (!f.atEnd()) {
    f.readLine();
    ++lines;
  }
  EXPECT_EQ(lines, 100001);  // header + every point
  EXPECT_NE(plot.exportTo(QDir(temp_root()).filePath(QStringLiteral("x.bmp"))), QString());
  plot.setLogY(true);
  EXPECT_EQ(plot.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
}

// Issue 48: at 1024x600 the Training view's throughput plot printed six overlapping tick labels
// and "cross-entropy (nats)" ran past its axis. A short plot has fewer ticks, and each axis label
// fits its axis' length; issue 69: on more lines, every word kept (elided, "multiply-…" said
// nothing), on one line again when the plot is large.
TEST(PlotPanel, ASmallPlotHasFewTicksAndItsAxisLabelsFit) {
  PlotPanel plot(QStringLiteral("Throughput"), QStringLiteral("tokens back to its previous occurrence"),
                 QStringLiteral("cross-entropy (nats)"));
  PlotSeries s;
  s.name = QStringLiteral("run");
  s.color = Qt::blue;
  for (int i = 0; i <= 460; i += 10) {
    s.x << i;
    s.y << 500 + 3 * i;
  }
  plot.setSeries({s});
  auto layOut = [&](QSize size) {
    plot.resize(size);
    plot.show();
    QCoreApplication::processEvents();
    plot.plot()->replot();
  };
  auto fits = [](const QCPAxis* axis, int length) {
    for (const QString& line : axis->label().split(QLatin1Char('\n')))
      if (QFontMetrics(axis->labelFont()).horizontalAdvance(line) > length) return false;
    return true;
  };
  auto whole = [](const QCPAxis* axis, const QString& label) {
    static const QRegularExpression space(QStringLiteral("\\s"));  // lines break at spaces and after hyphens
    return QString(axis->label()).remove(space) == QString(label).remove(space);
  };
  layOut(QSize(290, 150));
  const QCPAxisRect* axes = plot.plot()->axisRect();
  EXPECT_LE(plot.plot()->yAxis->tickVector().size(), 3) << "ticks on an axis " << axes->height() << " px high";
  EXPECT_FALSE(plot.plot()->yAxis->label().isEmpty());
  EXPECT_TRUE(plot.plot()->yAxis->label().contains(QLatin1Char('\n'))) << "on one line on an axis " << axes->height() << " px high";
  EXPECT_TRUE(whole(plot.plot()->yAxis, plot.yLabel())) << plot.plot()->yAxis->label().toStdString();
  EXPECT_TRUE(whole(plot.plot()->xAxis, plot.xLabel())) << plot.plot()->xAxis->label().toStdString();
  EXPECT_TRUE(fits(plot.plot()->yAxis, axes->height())) << plot.plot()->yAxis->label().toStdString();
  EXPECT_TRUE(fits(plot.plot()->xAxis, axes->width())) << plot.plot()->xAxis->label().toStdString();
  EXPECT_EQ(plot.yLabel(), QStringLiteral("cross-entropy (nats)"));  // the label as set, for the CSV
  layOut(QSize(900, 600));
  EXPECT_GE(plot.plot()->yAxis->tickVector().size(), 4);
  EXPECT_EQ(plot.plot()->yAxis->label(), QStringLiteral("cross-entropy (nats)"));
  EXPECT_EQ(plot.plot()->xAxis->label(), QStringLiteral("tokens back to its previous occurrence"));
}

TEST(PlotPanel, DecimationKeepsEndsAndExtremes) {
  QVector<double> x, y, xo, yo;
  for (int i = 0; i < 1000; ++i) {
    x << i;
    y << (i % 100 == 37 ? -1.0 : 1.0);
  }
  decimate_line(x, y, 10, xo, yo);
  EXPECT_LE(xo.size(), 40);
  EXPECT_EQ(xo.front(), 0);
  EXPECT_EQ(xo.back(), 999);
  EXPECT_EQ(std::count(yo.begin(), yo.end(), -1.0), 10);  // each bucket's dip survives
  for (int i = 1; i < xo.size(); ++i) EXPECT_LT(xo[i - 1], xo[i]);
}

TEST(TokenText, TintGoesFromRedToGreen) {
  EXPECT_LT(TokenText::tint(0.0).hueF(), 0.05);
  EXPECT_NEAR(TokenText::tint(1.0).hueF(), 1.0 / 3.0, 0.01);
  EXPECT_NEAR(TokenText::tint(0.1).hueF(), 1.0 / 6.0, 0.01);  // log scale: 10% is half-way (yellow)
  TokenText text;
  text.setPrompt(QStringLiteral("Hi"));
  hsm::GeneratedToken t;
  t.id = 7;
  t.piece = " there";
  t.text = " there";
  t.prob = 0.25f;
  t.top = {{7, " there", 0.25f}, {9, " you", 0.2f}};
  text.appendToken(t);
  EXPECT_EQ(text.generatedText(), QStringLiteral(" there"));
  EXPECT_EQ(text.toPlainText(), QStringLiteral("Hi there"));
  const QString tip = text.tooltipAt(3);
  EXPECT_TRUE(tip.contains(QStringLiteral("0.250")));
  EXPECT_TRUE(tip.contains(QStringLiteral("␣you")));
}

TEST(RunList, FollowsARunThatAnotherProcessWrites) {
  const QString run = trained_run();
  const QString copy = QDir(temp_root()).filePath(QStringLiteral("followed"));
  QDir().mkpath(copy);
  for (const QString& f : QDir(run).entryList(QDir::Files)) QFile::copy(QDir(run).filePath(f), QDir(copy).filePath(f));
  RunList runs;
  const int row = runs.open(copy);
  const size_t before = runs.at(row).metrics.size();
  ASSERT_GT(before, 0u);
  int appended = 0;
  QObject::connect(&runs, &RunList::metricsAppended, [&](int r) { appended += r == row; });
  hsm::MetricRecord m;
  m.kind = "train";
  m.step = 999;
  m.train_loss = 1.5;
  QFile f(QDir(copy).filePath(QStringLiteral("metrics.jsonl")));
  ASSERT_TRUE(f.open(QIODevice::Append));
  f.write(QByteArray::fromStdString(hsm::metric_to_json_line(m) + "\n"));
  f.close();
  ASSERT_TRUE(wait_for([&] { return appended > 0; }, 5000));  // its own timer noticed
  EXPECT_EQ(runs.at(row).metrics.size(), before + 1);
  EXPECT_EQ(runs.at(row).metrics.back().step, 999);
  EXPECT_THROW(runs.open(temp_root()), std::runtime_error);  // not a run folder
  EXPECT_EQ(runs.open(copy), row);                           // opened once
}

// Issue 69: the status bar's step is the step the run's records have reached, as the Training
// view's bar says, not its last checkpoint's alone ("step 0" beside a bar at 80/600).
TEST(MainWindow, TheStatusBarSaysTheStepTheRunHasReached) {
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("status-step/run"));
  QDir(dir).removeRecursively();
  ASSERT_TRUE(QDir().mkpath(dir));
  for (const QFileInfo& f : QDir(trained_run()).entryInfoList(QDir::Files))
    ASSERT_TRUE(QFile::copy(f.absoluteFilePath(), QDir(dir).filePath(f.fileName()))) << f.fileName().toStdString();
  const hsm::RunInfo info = hsm::read_run_info(dir.toStdString());
  QFile metrics(QDir(dir).filePath(QStringLiteral("metrics.jsonl")));
  ASSERT_TRUE(metrics.open(QIODevice::Append));
  metrics.write(QStringLiteral("{\"kind\":\"train\",\"step\":%1,\"total_steps\":%2,\"train_loss\":5.0,\"lr\":0.001,"
                               "\"epoch\":1,\"tokens_per_s\":100,\"wall_s\":9}\n")
                    .arg(info.step + 10)
                    .arg(info.step + 100)
                    .toUtf8());
  metrics.close();
  MainWindow w;
  ASSERT_EQ(w.openRun(dir, true), QString());
  auto* label = w.findChild<QLabel*>(QStringLiteral("model_label"));
  ASSERT_NE(label, nullptr);
  EXPECT_TRUE(label->text().contains(QStringLiteral("step %1 (last checkpoint at %2)").arg(info.step + 10).arg(info.step)))
      << label->text().toStdString();
}

TEST(MainWindow, StartsOnTheStartPageAndOpensRuns) {
  MainWindow w;
  w.showStartPage();
  EXPECT_TRUE(w.startPageShown());
  // Architecture, Training, Weights, Diagnostics, Playground, Probe, Losses, Lab, Experiments, Trace, Start
  EXPECT_EQ(w.tabs()->count(), 11);
  EXPECT_FALSE(w.openRun(QDir(temp_root()).filePath(QStringLiteral("nothing-here")), true).isEmpty());
  EXPECT_EQ(w.openRun(trained_run(), true), QString());
  EXPECT_FALSE(w.startPageShown());
  EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::kPlayground);
  EXPECT_EQ(w.runs()->current(), 0);
  w.showView(MainWindow::kTraining);
  EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::kTraining);
}

TEST(MainWindow, OpensTheBundledModelsOnThePapersFirstPrompt) {
  // A resources folder with the presets and two "bundled" models (copies of a trained run).
  const QString res = QDir(temp_root()).filePath(QStringLiteral("resources"));
  const QString source = QStringLiteral(HSM_RESOURCES_PATH);
  for (const QString& sub : {QStringLiteral("presets"), QStringLiteral("prompts")}) {
    QDir().mkpath(res + "/" + sub);
    for (const QString& f : QDir(source + "/" + sub).entryList(QDir::Files))
      QFile::copy(source + "/" + sub + "/" + f, res + "/" + sub + "/" + f);
  }
  for (const QString& name : {QStringLiteral("gpt"), QStringLiteral("hsm_ab")}) {
    QDir().mkpath(res + "/models/" + name);
    for (const QString& f : QDir(trained_run()).entryList(QDir::Files))
      QFile::copy(QDir(trained_run()).filePath(f), res + "/models/" + name + "/" + f);
  }
  QFile index(res + "/models/index.json");
  ASSERT_TRUE(index.open(QIODevice::WriteOnly));
  index.write(R"(["hsm_ab", "gpt", "missing"])");
  index.close();
  qputenv("HSM_RESOURCES", res.toUtf8());
  MainWindow w;
  const int opened = w.openBundledModels();
  qunsetenv("HSM_RESOURCES");
  EXPECT_EQ(opened, 2);  // the index's order; a missing folder is skipped
  ASSERT_EQ(w.runs()->count(), 2);
  EXPECT_EQ(w.runs()->at(0).name(), QStringLiteral("hsm_ab"));
  EXPECT_EQ(w.runs()->current(), 0);
  EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::kPlayground);
  EXPECT_TRUE(w.playgroundView()->prompt().startsWith(QStringLiteral("Alice was so tired")));
}

namespace {

// A widget whose paint takes `ms` of the GUI thread's CPU time (a QWidget to the meta-object system: no Q_OBJECT).
class SlowWidget : public QWidget {
 public:
  explicit SlowWidget(int ms) : ms_(ms) { setObjectName(QStringLiteral("slow_widget")); }

 protected:
  void paintEvent(QPaintEvent*) override {
    // CPU time, as the monitor's busy time counts it (wall time may pass while it waits for
    // a core on a loaded machine).
    const auto cpu_ms = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
    };
    const double start = cpu_ms();
    while (cpu_ms() - start < ms_) {
    }
    QPainter(this).fillRect(rect(), Qt::white);
  }

 private:
  int ms_;
};

}  // namespace

// With the studio's application reporting each event, the monitor names the slowest ones with
// their phase: a 40 ms paint is found as that widget's Paint, inside the window's
// UpdateRequest, and counted in the phase's busy time; the list stays short and sorted.
TEST(StallMonitor, NamesTheSlowestEventsWithTheirPhase) {
  auto* app = dynamic_cast<StudioApplication*>(QCoreApplication::instance());
  ASSERT_NE(app, nullptr);
  StallMonitor monitor;
  app->setEventObserver(&monitor);
  monitor.start();
  monitor.setPhase(QStringLiteral("idle"));
  QElapsedTimer clock;
  clock.start();
  wait_for([&] { return clock.elapsed() > 100; });
  monitor.setPhase(QStringLiteral("slow_paint"));
  SlowWidget w(40);
  w.resize(200, 100);
  w.show();
  ASSERT_TRUE(wait_for([&] {
    for (const StallMonitor::SlowEvent& e : monitor.slowestEvents())
      if (e.event == QLatin1String("Paint")) return true;
    return false;
  }, 10000));
  clock.start();
  wait_for([&] { return clock.elapsed() > 50; });  // a few beats after it
  monitor.stop();
  app->setEventObserver(nullptr);

  const QVector<StallMonitor::SlowEvent>& slowest = monitor.slowestEvents();
  ASSERT_FALSE(slowest.isEmpty());
  EXPECT_LE(slowest.size(), StallMonitor::kSlowestKept);
  for (int i = 1; i < slowest.size(); ++i) EXPECT_GE(slowest[i - 1].ms, slowest[i].ms) << i;
  bool found = false;
  for (const StallMonitor::SlowEvent& e : slowest)
    if (e.event == QLatin1String("Paint") && e.receiver == QLatin1String("QWidget(slow_widget)")) {
      found = true;
      EXPECT_GE(e.ms, 40.0);
      EXPECT_EQ(e.phase, QStringLiteral("slow_paint"));
      EXPECT_GE(e.depth, 1) << "sent while the window's UpdateRequest was handled";
    }
  EXPECT_TRUE(found);
  EXPECT_GE(monitor.maxBusyByPhase().value(QStringLiteral("slow_paint")), 40.0);
  EXPECT_LT(monitor.maxBusyByPhase().value(QStringLiteral("idle")), 40.0);
}

// Issue 48: a colour key beside every tint of a table: the Lab's cells (answer accuracy, red to
// green) and the Probe's logit lens (the top token's probability), each key showing the colours
// the cells are painted with at the ends of the scale.
TEST(ColourKeys, TheLabGridAndTheLogitLensShowTheirTintsColours) {
  RunList runs;
  EngineHost engine;
  LabView lab(&runs, &engine);
  auto* labKey = lab.findChild<QLabel*>(QStringLiteral("lab_colour_key"));
  ASSERT_NE(labKey, nullptr) << "the Lab's cells have no colour key";
  for (double a : {0.0, 1.0})
    EXPECT_TRUE(labKey->text().contains(colours::redToGreen(a, 0.55, 0.95).name())) << labKey->text().toStdString();
  ProbeView probe(&runs, &engine);
  auto* lensKey = probe.findChild<QLabel*>(QStringLiteral("lens_title"));
  ASSERT_NE(lensKey, nullptr) << "the logit lens has no colour key";
  for (double p : {0.01, 1.0})
    EXPECT_TRUE(lensKey->text().contains(TokenText::tint(p).name())) << lensKey->text().toStdString();
}

// Issue 69: a byte-fallback token reads as its character in the logit lens and the Trace view,
// not as "<0x0A>".
TEST(TokenText, PieceLabelsShowBytesAsTheirCharacters) {
  EXPECT_EQ(pieceLabel("<0x0A>"), QStringLiteral("↵"));
  EXPECT_EQ(pieceLabel("<0x09>"), QStringLiteral("⇥"));
  EXPECT_EQ(pieceLabel("<0x41>"), QStringLiteral("A"));
  EXPECT_EQ(pieceLabel("<0xE2>"), QString(QChar(QChar::ReplacementCharacter)));
  EXPECT_EQ(pieceLabel(" the\n"), QStringLiteral("␣the↵"));
}
