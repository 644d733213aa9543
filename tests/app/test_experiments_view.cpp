// The Experiments view (issue 39) driven through its widgets on a tiny sweep made here (2 mixers
// x 2 seeds of the tiny model, 20 steps each): its rows are hsm::sweep_table's, only the
// settings that differ are columns, sorting and filtering work, grouping by seed gives the mean
// and standard deviation recomputed here, brushing an axis of the parallel coordinates filters
// the table, the scatter's points are the table's columns, the plots and the table export, a
// folder that is no sweep gives one line; a running sweep is followed; a sweep started from
// the form trains off the GUI thread and Cancel stops it with the folder resumable; the
// selected rows' curves appear in the Training view.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QScrollBar>
#include <QHeaderView>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QTabWidget>
#include <QThread>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <map>
#include <qcustomplot.h>
#include <set>
#include <thread>

#include "gui/engine/engine_host.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/experiments_view.h"
#include "gui/engine/grid_runner.h"
#include "gui/views/sweep_form.h"
#include "gui/views/training_view.h"
#include "gui/widgets/parallel_coordinates.h"
#include "gui/widgets/plot_panel.h"
#include "hsm/sweep.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

struct Studio {
  RunList runs;
  EngineHost engine;
  ExperimentsView view{&runs, &engine};
};

// The spec of the tiny sweep: layer 1's mixer x seed, and a single-valued lr (not a setting
// that differs). steps: each point's.
std::string tiny_spec(const QString& dir, int steps) {
  return QStringLiteral(R"({"name": "tiny", "base": {"config": "%1"}, "data": "%2",
    "train": {"steps": %3, "batch": 8, "eval_every": 10, "eval_batches": 2, "checkpoint_every": 10, "log_every": 5,
              "threads": 1, "device": "cpu"},
    "axes": {"model.layers.1.mixer": ["attn", "hsm_ab"], "train.lr": [0.003], "seed": [1, 2]}})")
      .arg(tiny_config(dir), make_corpus(dir))
      .arg(steps)
      .toStdString();
}

// A sweep folder of the tiny spec, its points not started.
QString new_sweep(const QString& name, int steps) {
  const QString dir = QDir(temp_root()).filePath(name);
  QDir().mkpath(dir);
  const QString sweep = QDir(dir).filePath(QStringLiteral("sweep"));
  hsm::open_sweep_folder(sweep.toStdString(), hsm::parse_sweep_spec(tiny_spec(dir, steps), dir.toStdString()));
  return sweep;
}

// The tiny sweep trained to the end, once per process.
QString finished_sweep() {
  static const QString sweep = [] {
    const QString s = new_sweep(QStringLiteral("finished"), 20);
    for (int64_t k = 0; k < 4; ++k) hsm::run_sweep_point(s.toStdString(), k, 1, nullptr);
    return s;
  }();
  return sweep;
}

bool open_and_wait(ExperimentsView& view, const QString& dir) {
  if (!view.openSweep(dir)) return false;
  return wait_for([&] { return !view.isReading() && !view.rows().empty(); }, 60000);
}

// The proxy's rows (table order) as source rows.
std::vector<int> shown_rows(const ExperimentsView& view) {
  std::vector<int> rows;
  for (int r = 0; r < view.proxy()->rowCount(); ++r)
    rows.push_back(view.proxy()->mapToSource(view.proxy()->index(r, 0)).row());
  return rows;
}

double number(const ExperimentsView& view, int row, const QString& column) {
  const int c = view.model()->table().columnOf(column);
  EXPECT_GE(c, 0) << column.toStdString();
  return c < 0 ? NAN : view.model()->table().numbers[row][c];
}

QString text(const ExperimentsView& view, int row, const QString& column) {
  const int c = view.model()->table().columnOf(column);
  EXPECT_GE(c, 0) << column.toStdString();
  return c < 0 ? QString() : view.model()->table().texts[row][c];
}

const QStringList kBundledModels = {QStringLiteral("gpt"), QStringLiteral("hsm_ab"), QStringLiteral("hybrid_0_6")};

// The three bundled models open, the view at 1024x600 taking them as one experiment.
void compare_bundled_models(Studio& s) {
  for (const QString& m : kBundledModels) ASSERT_GE(s.runs.open(QStringLiteral(HSM_RESOURCES_PATH "/models/") + m), 0) << m.toStdString();
  s.view.resize(1024, 600);
  s.view.show();
  ASSERT_TRUE(s.view.useOpenRuns()) << s.view.statusLabel()->text().toStdString();
  ASSERT_TRUE(wait_for([&] { return !s.view.isReading() && s.view.model()->rowCount() == 3; }, 60000))
      << s.view.statusLabel()->text().toStdString();
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST(ExperimentsView, RowsAreTheSweepTablesWithOnlyTheSettingsThatDiffer) {
  Studio s;
  const QString dir = finished_sweep();
  ASSERT_TRUE(open_and_wait(s.view, dir)) << s.view.statusLabel()->text().toStdString();
  const std::vector<hsm::SweepRow> expected = hsm::sweep_table(dir.toStdString());
  ASSERT_EQ(expected.size(), 4u);
  const ExperimentTable& t = s.view.model()->table();
  QStringList headers;
  for (const ExperimentColumn& c : t.columns) headers << c.name;
  // lr is on an axis but the same everywhere: not a column.
  EXPECT_EQ(headers, (QStringList{"run", "model.layers.1.mixer", "seed", "parameters", "MACs/token", "final val_loss",
                                  "best val_loss", "final accuracy", "best accuracy", "tokens/s", "wall s", "step",
                                  "state"}));
  ASSERT_EQ(s.view.model()->rowCount(), 4);
  for (int r = 0; r < 4; ++r) {
    const hsm::SweepRow& e = expected[static_cast<size_t>(r)];
    EXPECT_EQ(text(s.view, r, "run").toStdString(), e.run);
    EXPECT_EQ(text(s.view, r, "state"), QStringLiteral("done"));
    EXPECT_EQ(number(s.view, r, "parameters"), static_cast<double>(e.params));
    EXPECT_EQ(number(s.view, r, "MACs/token"), static_cast<double>(e.macs_per_token));
    EXPECT_TRUE(same(number(s.view, r, "final val_loss"), e.final_val_loss));
    EXPECT_TRUE(same(number(s.view, r, "best val_loss"), e.best_val_loss));
    EXPECT_TRUE(same(number(s.view, r, "final accuracy"), e.final_accuracy));
    EXPECT_TRUE(same(number(s.view, r, "best accuracy"), e.best_accuracy));
    EXPECT_TRUE(same(number(s.view, r, "tokens/s"), e.tokens_per_s));
    EXPECT_TRUE(same(number(s.view, r, "wall s"), e.wall_s));
    EXPECT_TRUE(std::isfinite(e.best_val_loss));
    for (const auto& [axis, value] : e.settings)
      EXPECT_EQ(text(s.view, r, QString::fromStdString(axis)), QString::fromStdString(value).remove('"'));
  }
  // The mixers differ in parameters: hsm_ab has none of attention's projections.
  EXPECT_NE(number(s.view, 0, "parameters"), number(s.view, 2, "parameters"));
}

TEST(ExperimentsView, SortsAndFilters) {
  Studio s;
  ASSERT_TRUE(open_and_wait(s.view, finished_sweep()));
  const int best = s.view.model()->table().columnOf("best val_loss");
  s.view.table()->sortByColumn(best, Qt::AscendingOrder);
  std::vector<double> sorted;
  for (int r : shown_rows(s.view)) sorted.push_back(number(s.view, r, "best val_loss"));
  ASSERT_EQ(sorted.size(), 4u);
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end()));
  s.view.table()->sortByColumn(best, Qt::DescendingOrder);
  std::vector<double> down;
  for (int r : shown_rows(s.view)) down.push_back(number(s.view, r, "best val_loss"));
  EXPECT_TRUE(std::is_sorted(down.rbegin(), down.rend()));
  EXPECT_NE(sorted, down);

  s.view.filterEdit()->setText(QStringLiteral("hsm_ab"));
  ASSERT_EQ(s.view.proxy()->rowCount(), 2);
  for (int r : shown_rows(s.view)) EXPECT_EQ(text(s.view, r, "model.layers.1.mixer"), QStringLiteral("hsm_ab"));
  s.view.filterEdit()->setText(QStringLiteral("HSM_AB seed=2"));  // every word must match a cell
  EXPECT_EQ(s.view.proxy()->rowCount(), 1);
  s.view.filterEdit()->clear();
  EXPECT_EQ(s.view.proxy()->rowCount(), 4);
}

TEST(ExperimentsView, GroupsOverSeedsWithMeanAndStdRecomputedHere) {
  Studio s;
  ASSERT_TRUE(open_and_wait(s.view, finished_sweep()));
  ASSERT_GE(s.view.groupBox()->findText("seed"), 0);
  s.view.groupBox()->setCurrentText("seed");
  const ExperimentTable& t = s.view.model()->table();
  ASSERT_EQ(s.view.model()->rowCount(), 2);
  EXPECT_EQ(t.columnOf("seed"), -1);
  EXPECT_EQ(t.columnOf("run"), -1);
  // Independently: the runs of each mixer, their sample mean and standard deviation.
  std::map<QString, std::vector<double>> losses, accuracies;
  for (const hsm::SweepRow& r : hsm::sweep_table(finished_sweep().toStdString()))
    for (const auto& [axis, value] : r.settings)
      if (axis == "model.layers.1.mixer")
        losses[QString::fromStdString(value).remove('"')].push_back(r.best_val_loss),
            accuracies[QString::fromStdString(value).remove('"')].push_back(r.final_accuracy);
  auto mean_std = [](const std::vector<double>& xs) {
    double m = 0, ss = 0;
    for (double x : xs) m += x;
    m /= static_cast<double>(xs.size());
    for (double x : xs) ss += (x - m) * (x - m);
    return std::pair{m, std::sqrt(ss / static_cast<double>(xs.size() - 1))};
  };
  const int bestCol = t.columnOf("best val_loss"), accCol = t.columnOf("final accuracy");
  for (int r = 0; r < 2; ++r) {
    const QString mixer = text(s.view, r, "model.layers.1.mixer");
    ASSERT_EQ(losses[mixer].size(), 2u) << mixer.toStdString();
    EXPECT_EQ(number(s.view, r, "runs"), 2);
    const auto [m, sd] = mean_std(losses[mixer]);
    EXPECT_NEAR(t.numbers[r][bestCol], m, 1e-12);
    EXPECT_NEAR(t.stds[r][bestCol], sd, 1e-12);
    EXPECT_GT(sd, 0) << "two seeds give two losses";
    EXPECT_TRUE(t.texts[r][bestCol].contains(QStringLiteral("±"))) << t.texts[r][bestCol].toStdString();
    const auto [am, asd] = mean_std(accuracies[mixer]);
    EXPECT_NEAR(t.numbers[r][accCol], am, 1e-12);
    EXPECT_NEAR(t.stds[r][accCol], asd, 1e-12);
  }
  s.view.groupBox()->setCurrentIndex(0);
  EXPECT_EQ(s.view.model()->rowCount(), 4);
}

TEST(ExperimentsView, BrushingAnAxisFiltersTheTable) {
  Studio s;
  s.view.resize(1280, 720);
  s.view.show();
  ASSERT_TRUE(open_and_wait(s.view, finished_sweep()));
  ParallelCoordinates* p = s.view.parallel();
  const int axis = p->axisOf("best val_loss");
  ASSERT_GE(axis, 0);
  ASSERT_GE(p->axisOf("mixer1"), 0);  // the setting's short name, as in the run names
  ASSERT_GE(p->axisOf("seed"), 0);
  std::vector<double> losses;
  for (int r = 0; r < 4; ++r) losses.push_back(number(s.view, r, "best val_loss"));
  std::vector<double> order = losses;
  std::sort(order.begin(), order.end());
  // The two lowest losses, programmatically.
  p->setBrush(axis, order[0], (order[1] + order[2]) / 2);
  ASSERT_EQ(s.view.proxy()->rowCount(), 2);
  for (int r : shown_rows(s.view)) EXPECT_LE(number(s.view, r, "best val_loss"), order[1]);
  p->clearBrushes();
  EXPECT_EQ(s.view.proxy()->rowCount(), 4);

  // With the mouse: drag along the axis from above the highest loss to between the 3rd and 4th.
  s.view.findChild<QTabWidget*>()->setCurrentIndex(0);
  ASSERT_TRUE(wait_for([&] { return p->plot()->isVisible() && p->plot()->width() > 100; }, 5000));
  p->plot()->replot();
  QCustomPlot* plot = p->plot();
  const double x = plot->xAxis->coordToPixel(axis);
  const double top = plot->yAxis->coordToPixel(1.0);
  const double cut = plot->yAxis->coordToPixel((p->position(axis, order[2]) + p->position(axis, order[3])) / 2);
  send_mouse(plot, QEvent::MouseButtonPress, QPointF(x, top), Qt::LeftButton);
  send_mouse(plot, QEvent::MouseMove, QPointF(x, cut), Qt::LeftButton);
  send_mouse(plot, QEvent::MouseButtonRelease, QPointF(x, cut), Qt::NoButton);
  ASSERT_EQ(s.view.proxy()->rowCount(), 1);
  EXPECT_EQ(number(s.view, shown_rows(s.view)[0], "best val_loss"), order[3]);
  // A click on the axis clears its brush.
  send_mouse(plot, QEvent::MouseButtonPress, QPointF(x, top), Qt::LeftButton);
  send_mouse(plot, QEvent::MouseButtonRelease, QPointF(x, top), Qt::NoButton);
  EXPECT_EQ(s.view.proxy()->rowCount(), 4);
}

TEST(ExperimentsView, ScatterPointsAreTheTablesColumns) {
  Studio s;
  ASSERT_TRUE(open_and_wait(s.view, finished_sweep()));
  s.view.scatterX()->setCurrentIndex(s.view.scatterX()->findData("parameters"));
  s.view.scatterY()->setCurrentIndex(s.view.scatterY()->findData("best val_loss"));
  auto points = [&] {
    std::multiset<std::pair<double, double>> ps;
    for (const PlotSeries& series : s.view.scatter()->series())
      for (int i = 0; i < series.x.size(); ++i) ps.insert({series.x[i], series.y[i]});
    return ps;
  };
  std::multiset<std::pair<double, double>> expected;
  for (int r : shown_rows(s.view)) expected.insert({number(s.view, r, "parameters"), number(s.view, r, "best val_loss")});
  EXPECT_EQ(points(), expected);
  ASSERT_EQ(s.view.scatter()->series().size(), 2) << "a series per mixer";
  EXPECT_EQ(s.view.scatter()->series()[0].name, QStringLiteral("mixer, layer 1: attn"));
  s.view.scatterX()->setCurrentIndex(s.view.scatterX()->findData("tokens/s"));
  expected.clear();
  for (int r : shown_rows(s.view)) expected.insert({number(s.view, r, "tokens/s"), number(s.view, r, "best val_loss")});
  EXPECT_EQ(points(), expected);
  // The scatter shows the filtered rows.
  s.view.filterEdit()->setText("attn");
  EXPECT_EQ(points().size(), 2u);
}

TEST(ExperimentsView, ExportsThePlotsAndTheTable) {
  Studio s;
  ASSERT_TRUE(open_and_wait(s.view, finished_sweep()));
  const QString folder = QDir(temp_root()).filePath(QStringLiteral("experiments-export"));
  QString error;
  const QStringList files = s.view.exportAll(folder, &error);
  EXPECT_TRUE(error.isEmpty()) << error.toStdString();
  EXPECT_EQ(files.size(), 9);  // two plots x PNG, PDF, SVG, CSV, and the table
  for (const QString& f : files) EXPECT_GT(QFileInfo(f).size(), 0) << f.toStdString();
  for (const char* ext : {".png", ".svg", ".csv"})
    EXPECT_GE(files.filter(QLatin1String(ext)).size(), 2) << ext;
  QFile table(files.filter("experiments-table").value(0));
  ASSERT_TRUE(table.open(QIODevice::ReadOnly));
  const QStringList lines = QString::fromUtf8(table.readAll()).split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(lines.size(), 5);
  EXPECT_TRUE(lines[0].startsWith("\"run\",\"model.layers.1.mixer\",\"seed\"")) << lines[0].toStdString();
  // The parallel coordinates' CSV holds every run.
  QFile parallel(files.filter("parallel-coordinates.csv").value(0));
  ASSERT_TRUE(parallel.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(parallel.readAll()).split('\n', Qt::SkipEmptyParts).size(), 5);
}

TEST(ExperimentsView, AFolderThatIsNoSweepGivesOneClearLine) {
  Studio s;
  const QString empty = QDir(temp_root()).filePath(QStringLiteral("no-sweep"));
  QDir().mkpath(empty);
  EXPECT_FALSE(s.view.openSweep(empty));
  EXPECT_TRUE(s.view.statusLabel()->text().contains("is not a sweep folder")) << s.view.statusLabel()->text().toStdString();
  EXPECT_FALSE(s.view.statusLabel()->text().contains('\n'));
  // A broken manifest: the read fails off the GUI thread, with the engine's line.
  const QString broken = QDir(temp_root()).filePath(QStringLiteral("broken-sweep"));
  QDir().mkpath(broken);
  std::ofstream(QDir(broken).filePath("sweep.json").toStdString()) << "{\"name\": 3}";
  EXPECT_TRUE(s.view.openSweep(broken));
  ASSERT_TRUE(wait_for([&] { return !s.view.isReading(); }, 30000));
  EXPECT_TRUE(s.view.statusLabel()->text().contains("is not a sweep folder")) << s.view.statusLabel()->text().toStdString();
  EXPECT_EQ(s.view.model()->rowCount(), 0);
}

TEST(ExperimentsView, FollowsARunningSweep) {
  Studio s;
  const QString dir = new_sweep(QStringLiteral("live"), 10);
  ASSERT_TRUE(open_and_wait(s.view, dir));
  ASSERT_EQ(s.view.model()->rowCount(), 4);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(text(s.view, r, "state"), QStringLiteral("pending"));
  // Another process's launcher, as far as the view knows: points trained beside it.
  std::thread trainer([dir] {
    for (int64_t k : {0, 1}) hsm::run_sweep_point(dir.toStdString(), k, 1, nullptr);
  });
  const bool followed = wait_for(
      [&] {
        int done = 0;
        for (int r = 0; r < s.view.model()->rowCount(); ++r) done += text(s.view, r, "state") == "done";
        return done == 2;
      },
      120000);
  trainer.join();
  EXPECT_TRUE(followed) << s.view.statusLabel()->text().toStdString();
  EXPECT_TRUE(std::isfinite(number(s.view, 0, "best val_loss")));
}

TEST(ExperimentsView, StartsASweepFromTheFormOffTheGuiThreadAndCancelLeavesItResumable) {
  Studio s;
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("form"));
  QDir().mkpath(dir);
  SweepForm form;
  form.name = "form";
  form.base = tiny_config(dir);
  form.data = make_corpus(dir);
  form.steps = 100000;  // long: cancelled below
  form.batch = 8;
  form.evalEvery = 10;
  // Bad input: one line, nothing started.
  const QString out = QDir(dir).filePath(QStringLiteral("sweep"));
  form.axes = "seed 1, 2";
  s.view.setForm(form, out);
  EXPECT_FALSE(s.view.startSweep());
  EXPECT_TRUE(s.view.sweepStatus()->text().contains("axes line 1")) << s.view.sweepStatus()->text().toStdString();
  form.axes = "model.layers.9.mixer = hsm_ab\nseed = 1, 2";
  s.view.setForm(form, out);
  EXPECT_FALSE(s.view.startSweep());  // every point checked before anything starts
  EXPECT_FALSE(s.view.runner()->running());
  EXPECT_TRUE(s.view.sweepStatus()->text().contains("nothing started")) << s.view.sweepStatus()->text().toStdString();
  EXPECT_TRUE(s.view.sweepStatus()->text().contains("model.layers.9.mixer")) << s.view.sweepStatus()->text().toStdString();
  EXPECT_FALSE(QFileInfo::exists(out)) << "a refused spec makes no folder";

  form.axes = "train.threads = 1\ntrain.device = cpu\ntrain.checkpoint_every = 10\ntrain.log_every = 2\nseed = 1, 2";
  s.view.setForm(form, out);
  // The point's progress events (issue 47), read on the GUI thread as they come (no thread of
  // the runner's, no polling): the point trains in a process of its own.
  int events = 0;
  bool resumed = false;
  QObject::connect(s.view.runner(), &GridRunner::progress, s.view.runner(), [&](double) { ++events; });
  QObject::connect(s.view.runner(), &GridRunner::pointStarted, s.view.runner(),
                   [&](int, const QString&, bool r) { resumed = resumed || r; });
  ASSERT_TRUE(s.view.startSweep()) << s.view.sweepStatus()->text().toStdString();
  // The GUI thread keeps turning while the first point trains; the table shows the sweep.
  ASSERT_TRUE(wait_for([&] { return events > 3 && s.view.model()->rowCount() == 2; }, 120000))
      << s.view.sweepStatus()->text().toStdString();
  EXPECT_EQ(s.view.sweepDir(), QDir(out).absolutePath());
  {
    // The point trains in a process of its own (`hsm sweep run`), not in the studio's: its
    // state names that process, and its output goes to the launcher's log file as well.
    const hsm::Sweep running = hsm::load_sweep(out.toStdString());
    const hsm::PointState state = hsm::read_point_state(out.toStdString(), running.points[0]);
    EXPECT_EQ(state.state, "running");
    EXPECT_GT(state.pid, 0);
    EXPECT_NE(state.pid, QCoreApplication::applicationPid());
    EXPECT_GT(QFileInfo(QDir(out).filePath(QStringLiteral("points/seed=1.log"))).size(), 0);
  }
  s.view.cancelSweep();
  ASSERT_TRUE(wait_for([&] { return !s.view.runner()->running(); }, 60000));
  ASSERT_TRUE(wait_for([&] { return s.view.sweepStatus()->text().contains("cancelled"); }, 10000))
      << s.view.sweepStatus()->text().toStdString();
  // The point under way stopped with a checkpoint, the other never started: resumable.
  const hsm::Sweep sweep = hsm::load_sweep(out.toStdString());
  ASSERT_EQ(sweep.points.size(), 2u);
  EXPECT_EQ(hsm::read_point_state(out.toStdString(), sweep.points[0]).state, "stopped");
  EXPECT_EQ(hsm::read_point_state(out.toStdString(), sweep.points[1]).state, "pending");
  // Its checkpoint is the stop's: of the step its log says it stopped at (not the latest
  // periodic one, every 10 steps), at or after the last step its curve records.
  const QString stopped = QDir(out).filePath(QStringLiteral("runs/seed=1"));
  QFile pointLog(QDir(out).filePath(QStringLiteral("points/seed=1.log")));
  ASSERT_TRUE(pointLog.open(QIODevice::ReadOnly));
  const QString logText = QString::fromUtf8(pointLog.readAll());
  const QRegularExpressionMatch stop = QRegularExpression(QStringLiteral("stopped at step (\\d+)")).match(logText);
  ASSERT_TRUE(stop.hasMatch()) << logText.toStdString();
  EXPECT_GT(last_train_step(stopped), 0);
  EXPECT_EQ(run_state_step(stopped), stop.captured(1).toLongLong()) << "no checkpoint at the stop";
  EXPECT_GE(run_state_step(stopped), last_train_step(stopped)) << "no checkpoint at the stop";
  EXPECT_FALSE(resumed);

  // The same form again continues the stopped point from its checkpoint.
  const int before = events;
  ASSERT_TRUE(s.view.startSweep()) << s.view.sweepStatus()->text().toStdString();
  ASSERT_TRUE(wait_for([&] { return resumed && events > before + 3; }, 120000))
      << s.view.sweepStatus()->text().toStdString();
  EXPECT_TRUE(s.view.sweepStatus()->text().contains("Continuing seed=1")) << s.view.sweepStatus()->text().toStdString();
  s.view.cancelSweep();
  ASSERT_TRUE(wait_for([&] { return !s.view.runner()->running(); }, 60000));
}

TEST(ExperimentsView, SelectedRowsOverlayTheirCurvesInTheTrainingView) {
  MainWindow w;
  ExperimentsView* view = w.experimentsView();
  w.showView(MainWindow::kExperiments);
  ASSERT_TRUE(open_and_wait(*view, finished_sweep()));
  view->table()->selectRow(0);
  view->table()->selectionModel()->select(view->proxy()->index(2, 0),
                                          QItemSelectionModel::Select | QItemSelectionModel::Rows);
  const QStringList dirs = view->selectedRunDirs();
  ASSERT_EQ(dirs.size(), 2);
  EXPECT_EQ(view->showSelectedCurves(), 2);
  EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::kTraining);
  EXPECT_EQ(w.runs()->count(), 2);
  // The Training view's loss plot draws both runs (the current one and the other overlaid).
  ASSERT_TRUE(wait_for(
      [&] {
        QSet<QString> named;
        for (const PlotSeries& series : w.trainingView()->lossPlot()->series())
          for (const QString& d : dirs)
            if (series.name.contains(QFileInfo(d).fileName())) named.insert(d);
        return named.size() == 2;
      },
      30000));
}

TEST(ExperimentsView, TakesTheOpenRunsAsOneExperiment) {
  Studio s;
  EXPECT_FALSE(s.view.useOpenRuns());
  EXPECT_TRUE(s.view.statusLabel()->text().contains("at least two"));
  const hsm::Sweep sweep = hsm::load_sweep(finished_sweep().toStdString());
  for (const hsm::SweepPoint& p : {sweep.points[0], sweep.points[3]})
    s.runs.open(QString::fromStdString(hsm::sweep_run_dir(finished_sweep().toStdString(), p)));
  ASSERT_TRUE(s.view.useOpenRuns());
  ASSERT_TRUE(wait_for([&] { return !s.view.isReading() && s.view.model()->rowCount() == 2; }, 30000))
      << s.view.statusLabel()->text().toStdString();
  const ExperimentTable& t = s.view.model()->table();
  // Only what differs between the two: layer 1's mixer and the seed (and its heads).
  EXPECT_GE(t.columnOf("model.layers.1.mixer"), 0);
  EXPECT_GE(t.columnOf("train.seed"), 0);
  EXPECT_EQ(t.columnOf("train.lr"), -1);
  EXPECT_EQ(t.columnOf("model.d_model"), -1);
  const std::vector<hsm::SweepRow> rows = hsm::sweep_table(finished_sweep().toStdString());
  EXPECT_TRUE(same(number(s.view, 0, "best val_loss"), rows[0].best_val_loss));
  EXPECT_TRUE(same(number(s.view, 1, "best val_loss"), rows[3].best_val_loss));
  EXPECT_EQ(text(s.view, 0, "state"), QStringLiteral("done"));
}

// Issue 48: the three bundled models as one experiment. They differ in every field of every
// layer (about 45 settings before, each a column and an axis with overlapping labels): a layer
// field that differs in more than two layers is one setting, each model's layers as a list, and
// the free-text description is none; the run's name stays at the left of the table scrolled
// right to the losses, at 1024x600.
TEST(ExperimentsView, TheBundledModelsDifferInAFewSettingsAndTheRunNameStaysInView) {
  Studio s;
  ASSERT_NO_FATAL_FAILURE(compare_bundled_models(s));
  const ExperimentTable& t = s.view.model()->table();
  std::set<std::string> settings;
  for (const ExperimentColumn& c : t.columns)
    if (c.setting) settings.insert(c.name.toStdString());
  EXPECT_EQ(settings, (std::set<std::string>{"model.name", "model.layers.ffn", "model.layers.heads", "model.layers.mixer"}));
  int hybrid = -1;
  for (int r = 0; r < 3; ++r)
    if (text(s.view, r, column::kRun) == QLatin1String("hybrid_0_6")) hybrid = r;
  ASSERT_GE(hybrid, 0);
  EXPECT_EQ(text(s.view, hybrid, QStringLiteral("model.layers.mixer")), QStringLiteral("hsm_ab, attn×5, hsm_ab"));
  EXPECT_EQ(text(s.view, hybrid, QStringLiteral("model.layers.ffn")), QStringLiteral("1024, 512×5, 1024"));
  // An axis per setting and per metric that has a value: no more.
  const QVector<ParallelCoordinates::Axis>& axes = s.view.parallel()->axes();
  EXPECT_LE(axes.size(), 12) << axes.size() << " axes";
  EXPECT_GE(s.view.parallel()->axisOf(QStringLiteral("layers.mixer")), 0);

  // Scrolled right to the last column: the run names are still in view, whole, at the left.
  QTableView* table = s.view.table();
  QCoreApplication::processEvents();
  table->scrollTo(table->model()->index(0, table->model()->columnCount() - 1));
  QCoreApplication::processEvents();
  ASSERT_GT(table->horizontalScrollBar()->value(), 0) << "the table does not scroll at 1024x600";
  EXPECT_LT(table->columnViewportPosition(0), 0);  // the table's own run column is scrolled away
  auto* frozen = table->findChild<QTableView*>(QStringLiteral("frozen_column"));
  ASSERT_NE(frozen, nullptr) << "no column stays in view";
  EXPECT_TRUE(frozen->isVisible());
  EXPECT_LE(frozen->geometry().left(), table->viewport()->geometry().left());
  const int runColumn = t.columnOf(column::kRun);
  ASSERT_EQ(runColumn, 0);
  for (int r = 0; r < table->model()->rowCount(); ++r) {
    const QModelIndex i = frozen->model()->index(r, runColumn);
    const QString name = i.data().toString();
    EXPECT_TRUE(kBundledModels.contains(name)) << name.toStdString();
    const QRect cell = frozen->visualRect(i);
    EXPECT_TRUE(frozen->viewport()->rect().contains(cell.topLeft())) << name.toStdString();
    EXPECT_GE(cell.width(), frozen->fontMetrics().horizontalAdvance(name)) << name.toStdString() << " is cut";
  }
  EXPECT_TRUE(frozen->isColumnHidden(1));
  // Its header sorts the table by the run.
  frozen->horizontalHeader()->sectionClicked(0);
  EXPECT_EQ(table->horizontalHeader()->sortIndicatorSection(), 0);
  EXPECT_EQ(table->model()->index(0, 0).data().toString(), QStringLiteral("gpt"));
  frozen->horizontalHeader()->sectionClicked(0);
  EXPECT_EQ(table->model()->index(0, 0).data().toString(), QStringLiteral("hybrid_0_6"));
}

// Issue 69: the headers, the plots' axes and the column menus showed the CSV's keys ("final
// val_loss", "layers.ffn", "d_model"). They show words; the key is in the header's tooltip and in
// every exported file.
TEST(ExperimentsView, ColumnsAndAxesAreNamedInWordsWithTheKeysInTheFiles) {
  Studio s;
  ASSERT_NO_FATAL_FAILURE(compare_bundled_models(s));
  auto notation = [](const QString& text) {
    return text.contains('_') || text.contains('.') || text.contains('=') || text.contains(QLatin1String("val loss"));
  };
  const ExperimentTable& t = s.view.model()->table();
  QMap<QString, QString> titles;  // key -> header
  for (int c = 0; c < t.columns.size(); ++c) {
    const QString header = s.view.model()->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    const QString tip = s.view.model()->headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString();
    EXPECT_FALSE(notation(header)) << header.toStdString();
    EXPECT_TRUE(tip.contains(t.columns[c].name)) << tip.toStdString();
    titles[t.columns[c].name] = header;
  }
  EXPECT_EQ(titles.value("final val_loss"), QStringLiteral("validation loss (final)"));
  EXPECT_EQ(titles.value("best val_loss"), QStringLiteral("validation loss (best)"));
  EXPECT_EQ(titles.value("MACs/token"), QStringLiteral("multiply-adds per token"));
  EXPECT_EQ(titles.value("model.layers.ffn"), QStringLiteral("MLP width per layer"));
  EXPECT_EQ(titles.value("model.layers.heads"), QStringLiteral("heads per layer"));
  EXPECT_EQ(titles.value("model.name"), QStringLiteral("model name"));
  EXPECT_EQ(setting_title(QStringLiteral("model.d_model")), QStringLiteral("model width"));
  EXPECT_EQ(setting_title(QStringLiteral("train.lr")), QStringLiteral("learning rate"));
  EXPECT_EQ(setting_title(QStringLiteral("model.layers.*.ffn")), QStringLiteral("MLP width, every layer"));

  // The parallel coordinates show the headers' words above the axes, keyed as before.
  const QVector<ParallelCoordinates::Axis>& axes = s.view.parallel()->axes();
  ASSERT_FALSE(axes.isEmpty());
  const QVector<ParallelCoordinates::NameShown> shown = s.view.parallel()->namesShown();
  ASSERT_EQ(shown.size(), axes.size());
  for (int a = 0; a < axes.size(); ++a) {
    EXPECT_FALSE(notation(axes[a].title)) << axes[a].title.toStdString();
    EXPECT_EQ(QString(shown[a].text).remove(QRegularExpression("\\s")), QString(axes[a].title).remove(QRegularExpression("\\s")));
  }
  EXPECT_GE(s.view.parallel()->axisOf(QStringLiteral("best val_loss")), 0);
  // The menus of columns: words shown, the key the item's data.
  for (QComboBox* box : {s.view.scatterX(), s.view.scatterY()})
    for (int i = 0; i < box->count(); ++i) {
      EXPECT_FALSE(notation(box->itemText(i))) << box->itemText(i).toStdString();
      EXPECT_EQ(box->itemText(i), titles.value(box->itemData(i).toString()));
    }
  EXPECT_EQ(s.view.scatter()->plot()->yAxis->label(), QStringLiteral("validation loss (best)"));

  // The files keep the keys.
  const QString folder = QDir(temp_root()).filePath(QStringLiteral("experiments-words"));
  QString error;
  const QStringList files = s.view.exportAll(folder, &error);
  ASSERT_TRUE(error.isEmpty()) << error.toStdString();
  QFile table(files.filter("experiments-table").value(0));
  ASSERT_TRUE(table.open(QIODevice::ReadOnly));
  const QString header = QString::fromUtf8(table.readLine());
  for (const char* key : {"\"best val_loss\"", "\"model.layers.ffn\"", "\"MACs/token\""})
    EXPECT_TRUE(header.contains(QLatin1String(key))) << key << " not in " << header.toStdString();
  QFile parallel(files.filter("parallel-coordinates.csv").value(0));
  ASSERT_TRUE(parallel.open(QIODevice::ReadOnly));
  EXPECT_TRUE(QString::fromUtf8(parallel.readLine()).contains(QLatin1String("\"best val_loss\"")));
}
