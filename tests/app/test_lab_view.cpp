// The Lab view (issue 38): real widgets, a tiny grid (one small MQAR, two presets at lab size,
// a few steps), run through the view's buttons; the lab's workers are `hsm lab` processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include <QComboBox>
#include <QDate>
#include <QDir>
#include <QStandardPaths>
#include <QFileInfo>
#include <qcustomplot.h>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QApplication>
#include <QLabel>
#include <QMessageBox>
#include <QTimer>
#include <QKeyEvent>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QThread>
#include <QFuture>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QSettings>

#include "gui/engine/engine_host.h"
#include "gui/engine/grid_runner.h"
#include "gui/engine/hsm_executable.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/lab_state.h"
#include "gui/views/lab_view.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/plot_series.h"
#include "hsm/formation.h"
#include "hsm/lab.h"
#include "hsm/lab_report.h"
#include "hsm/sweep.h"
#include "hsm/tasks.h"
#include "studio_test_util.h"

using namespace studio;

namespace {

// Checks only `tasks` and `models` (adding the task specs not listed), and sets a tiny budget.
void tinyForm(LabView& view, const QStringList& tasks, const QStringList& models, int steps) {
  QListWidget* t = view.taskList();
  for (int i = 0; i < t->count(); ++i) t->item(i)->setCheckState(Qt::Unchecked);
  auto* add = view.findChild<QLineEdit*>(QStringLiteral("lab_new_task"));
  for (const QString& spec : tasks) {
    add->setText(spec);
    QMetaObject::invokeMethod(add, "returnPressed");
  }
  QListWidget* m = view.modelList();
  for (int i = 0; i < m->count(); ++i)
    m->item(i)->setCheckState(models.contains(m->item(i)->text()) ? Qt::Checked : Qt::Unchecked);
  view.findChild<QSpinBox*>(QStringLiteral("lab_steps"))->setValue(steps);
  view.findChild<QSpinBox*>(QStringLiteral("lab_batch"))->setValue(4);
  view.findChild<QSpinBox*>(QStringLiteral("lab_seeds"))->setValue(1);
  // One learning rate (the default lab has two since issue 68): a run per model and task.
  view.findChild<QLineEdit*>(QStringLiteral("lab_lrs"))->setText(QStringLiteral("0.003"));
}

// Each run stopped at a step with a checkpoint of it: past step 0's (written before any
// training), at or after the last step its curve records.
void expectStoppedWithACheckpoint(const QString& runDir) {
  const qint64 step = test::run_state_step(runDir);
  EXPECT_GT(step, 0) << runDir.toStdString() << ": no checkpoint at the stop";
  EXPECT_GE(step, test::last_train_step(runDir)) << runDir.toStdString() << ": no checkpoint at the stop";
  EXPECT_GT(test::last_train_step(runDir), 0) << runDir.toStdString() << ": it never trained";
}

QJsonObject jsonFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// A lab's scored runs, read here (not by hsm::Lab) from its grid's files: each point of the
// manifest (sweep.json) whose state file (points/NAME.json) holds a score, as one object with
// its task, model, learning rate and seed (the spec's axes, the point's settings) and its score.
QList<QJsonObject> labResults(const QString& lab) {
  QList<QJsonObject> out;
  const QJsonObject manifest = jsonFile(lab + QStringLiteral("/sweep.json"));
  const QJsonObject axes = manifest.value(QStringLiteral("spec")).toObject().value(QStringLiteral("axes")).toObject();
  for (const QJsonValue pv : manifest.value(QStringLiteral("points")).toArray()) {
    const QJsonObject p = pv.toObject();
    const QString name = p.value(QStringLiteral("name")).toString();
    const QJsonObject state = jsonFile(lab + QStringLiteral("/points/") + name + QStringLiteral(".json"));
    if (state.value(QStringLiteral("state")).toString() != QLatin1String("done")) continue;
    QJsonObject r = state.value(QStringLiteral("score")).toObject();
    const QJsonObject settings = p.value(QStringLiteral("settings")).toObject();
    // An axis of one value is not among a point's settings: it is the axis' value.
    auto value = [&](const char* axis) {
      return settings.contains(QLatin1String(axis)) ? settings.value(QLatin1String(axis))
                                                    : axes.value(QLatin1String(axis)).toArray().first();
    };
    r[QStringLiteral("task")] = value("task");
    r[QStringLiteral("model")] = value("model");
    r[QStringLiteral("lr")] = value("train.lr");
    r[QStringLiteral("seed")] = value("seed");
    r[QStringLiteral("run_dir")] = lab + QStringLiteral("/runs/") + name;
    out << r;
  }
  return out;
}

// The cell (row `model`, column `task`: the grid's order, its axes) of the lab's table computed
// from its results: the best learning rate's (the first in the grid's order on a tie) mean
// answer accuracy over seeds, and its run of the lowest seed.
struct ExpectedCell {
  double accuracy = -1;
  QString run;
};
ExpectedCell expectedCell(const QString& lab, int task_index, int model_index) {
  const QJsonObject grid =
      jsonFile(lab + QStringLiteral("/sweep.json")).value(QStringLiteral("spec")).toObject().value(QStringLiteral("axes")).toObject();
  EXPECT_FALSE(grid.isEmpty()) << lab.toStdString();
  const QJsonArray lrs = grid.value(QStringLiteral("train.lr")).toArray();
  const QString task = grid.value(QStringLiteral("task")).toArray().at(task_index).toString();
  const QString model = grid.value(QStringLiteral("model")).toArray().at(model_index).toString();
  const QList<QJsonObject> results = labResults(lab);
  ExpectedCell best;
  for (const QJsonValue lr : lrs) {
    double sum = 0;
    int n = 0, lowest = 1 << 30;
    QString run;
    for (const QJsonObject& r : results)
      if (r.value(QStringLiteral("task")).toString() == task && r.value(QStringLiteral("model")).toString() == model &&
          r.value(QStringLiteral("lr")).toDouble() == lr.toDouble()) {
        sum += r.value(QStringLiteral("answer_accuracy")).toDouble();
        ++n;
        if (r.value(QStringLiteral("seed")).toInt() < lowest)
          lowest = r.value(QStringLiteral("seed")).toInt(), run = r.value(QStringLiteral("run_dir")).toString();
      }
    if (n > 0 && sum / n > best.accuracy) best = {sum / n, run};
  }
  return best;
}

// Opens a lab folder in the view and waits for its read (off the GUI thread, LabState) and its
// runs' files (curves, traces).
bool openAndRead(LabView& view, const QString& dir) {
  return view.openLab(dir) && test::wait_for([&] { return !view.isReading(); }, 60000);
}

}  // namespace

// Issue 50: the list offers every task the lab knows, the default grid's ticked; showing a
// lab's grid (after a run, or an opened folder) keeps what the user had listed, unticked.
TEST(LabView, TheTaskListKeepsWhatTheUserLeftUnticked) {
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  QListWidget* list = view.taskList();
  auto listed = [&] {
    std::map<std::string, bool> m;  // spec -> ticked
    for (int i = 0; i < list->count(); ++i)
      m[list->item(i)->data(Qt::UserRole).toString().toStdString()] = list->item(i)->checkState() == Qt::Checked;
    return m;
  };
  const std::vector<std::string> choices = hsm::lab_task_choices();
  const std::vector<std::string> defaults = hsm::default_lab_grid().tasks;
  std::map<std::string, bool> m = listed();
  ASSERT_EQ(m.size(), choices.size());
  for (const std::string& t : choices)
    EXPECT_EQ(m[t], std::find(defaults.begin(), defaults.end(), t) != defaults.end()) << t;
  EXPECT_TRUE(m.count("parity") && m.count("permutation"));

  // The user adds a task of their own and leaves it unticked; a lab of one other task is shown.
  auto* add = view.findChild<QLineEdit*>(QStringLiteral("lab_new_task"));
  add->setText(QStringLiteral("recall_at:vocab=32,context=16,max_distance=15"));
  QMetaObject::invokeMethod(add, "returnPressed");
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->data(Qt::UserRole).toString().startsWith(QStringLiteral("recall_at:vocab=32")))
      list->item(i)->setCheckState(Qt::Unchecked);
  hsm::LabGrid shown = hsm::default_lab_grid();
  shown.tasks = {"mqar:vocab=32,pairs=2,context=16"};
  view.fillForm(shown);
  m = listed();
  EXPECT_EQ(m.size(), choices.size() + 2);
  EXPECT_TRUE(m["mqar:vocab=32,pairs=2,context=16"]);
  EXPECT_FALSE(m["recall_at:vocab=32,context=16,max_distance=15"]);
  for (const std::string& t : choices) EXPECT_FALSE(m[t]) << t << " is listed ticked, or gone";
  EXPECT_EQ(view.formGrid().tasks, shown.tasks);
}

// Issue 69: the task list and the grid's column headers showed specs ("mqar:vocab=128,pairs=8,
// context=6…", cut at 1024x600). They show titles; the spec is each item's data and tooltip, is what
// double-click edits and what the grid that runs gets.
TEST(LabView, TasksAreShownByTitleAndRunByTheirSpec) {
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  view.resize(1024, 600);
  view.show();
  QCoreApplication::processEvents();
  QListWidget* list = view.taskList();
  auto notation = [](const QString& text) {
    return text.contains(QLatin1Char(':')) || text.contains(QLatin1Char('=')) || text.contains(QLatin1Char('_'));
  };
  auto item = [&](const QString& spec) -> QListWidgetItem* {
    for (int i = 0; i < list->count(); ++i)
      if (list->item(i)->data(Qt::UserRole).toString() == spec) return list->item(i);
    return nullptr;
  };
  auto expectTitles = [&] {
    QStringList texts;
    for (int i = 0; i < list->count(); ++i) {
      const QListWidgetItem* it = list->item(i);
      EXPECT_FALSE(notation(it->text())) << it->text().toStdString();
      EXPECT_EQ(it->toolTip(), it->data(Qt::UserRole).toString());
      EXPECT_FALSE(texts.contains(it->text())) << it->text().toStdString() << " twice";
      texts << it->text();
    }
  };
  std::vector<std::string> specs;
  for (int i = 0; i < list->count(); ++i) specs.push_back(list->item(i)->data(Qt::UserRole).toString().toStdString());
  EXPECT_EQ(specs, hsm::lab_task_choices());
  expectTitles();
  ASSERT_NE(item(QStringLiteral("mqar:vocab=128,pairs=8,context=64")), nullptr);
  EXPECT_EQ(item(QStringLiteral("mqar:vocab=128,pairs=8,context=64"))->text(), QStringLiteral("mqar context 64, 8 pairs"));

  // A spec typed below the list: listed by its title, told apart from the other recall_at by its settings.
  auto* add = view.findChild<QLineEdit*>(QStringLiteral("lab_new_task"));
  add->setText(QStringLiteral("recall_at:vocab=32,context=16,max_distance=15"));
  QMetaObject::invokeMethod(add, "returnPressed");
  ASSERT_NE(item(QStringLiteral("recall_at:vocab=32,context=16,max_distance=15")), nullptr);
  EXPECT_EQ(item(QStringLiteral("recall_at:vocab=32,context=16,max_distance=15"))->text(),
            QStringLiteral("recall at (vocab 32, context 16, max distance 15)"));
  expectTitles();

  // Double-click edits the spec, not the title.
  QListWidgetItem* context16 = item(QStringLiteral("mqar:vocab=128,pairs=4,context=16"));
  ASSERT_NE(context16, nullptr);
  list->editItem(context16);
  auto* editor = list->viewport()->findChild<QLineEdit*>();
  ASSERT_NE(editor, nullptr);
  EXPECT_EQ(editor->text(), QStringLiteral("mqar:vocab=128,pairs=4,context=16"));
  editor->setText(QStringLiteral("mqar:vocab=128,pairs=2,context=16"));
  QKeyEvent enter(QEvent::KeyPress, Qt::Key_Return, Qt::NoModifier);
  QApplication::sendEvent(editor, &enter);  // the delegate commits on Return, as a person's key does
  QCoreApplication::processEvents();
  EXPECT_EQ(context16->data(Qt::UserRole).toString(), QStringLiteral("mqar:vocab=128,pairs=2,context=16"));
  EXPECT_EQ(context16->text(), QStringLiteral("mqar context 16, 2 pairs"));
  expectTitles();

  // The grid that runs gets the specs ticked.
  std::vector<std::string> ticked;
  for (const std::string& t : hsm::default_lab_grid().tasks)
    ticked.push_back(t == "mqar:vocab=128,pairs=4,context=16" ? "mqar:vocab=128,pairs=2,context=16" : t);
  ticked.push_back("recall_at:vocab=32,context=16,max_distance=15");
  EXPECT_EQ(view.formGrid().tasks, ticked);

  // A lab's grid: its columns titled, each spec in the header's tooltip; one family's tasks told
  // apart by their settings; the distance plot's choice by its title.
  const QString dir = test::temp_root() + QStringLiteral("/lab-titles");
  hsm::LabGrid grid = hsm::default_lab_grid();
  grid.tasks = {"mqar:vocab=32,pairs=2,context=16", "in_context_recall:vocab=16,context=64",
                "in_context_recall:vocab=32,context=64"};
  grid.models = {"gpt", "hsm_ab"};
  grid.lrs = {0.003};
  grid.weight_decays = {};
  grid.seeds = 1;
  {
    const hsm::Lab lab(dir.toStdString(), grid);
    for (const hsm::SweepPoint& p : lab.sweep().points) {
      hsm::PointState s;
      s.state = "done";
      s.scored = true;
      s.score.answer_accuracy = 0.5;
      s.score.answers = 40;
      s.score.examples = 10;
      s.score.by_difficulty = {{1, {8, 10}}, {9, {1, 10}}};
      hsm::write_point_state(dir.toStdString(), p, s);
    }
  }
  ASSERT_TRUE(openAndRead(view, dir)) << view.status().toStdString();
  ASSERT_EQ(view.grid()->columnCount(), 3);
  QStringList headers;
  for (int c = 0; c < 3; ++c) {
    const QTableWidgetItem* header = view.grid()->horizontalHeaderItem(c);
    EXPECT_FALSE(notation(header->text())) << header->text().toStdString();
    EXPECT_EQ(header->toolTip(), QString::fromStdString(grid.tasks[static_cast<size_t>(c)]));
    EXPECT_FALSE(headers.contains(header->text())) << header->text().toStdString();
    headers << header->text();
  }
  EXPECT_EQ(headers[0], QStringLiteral("mqar context 16\n2 pairs"));
  for (int r = 0; r < 2; ++r) {  // the models by their preset names (hsm_ab), as in every view
    const QString row = view.grid()->verticalHeaderItem(r)->text();
    EXPECT_FALSE(row.contains(QLatin1Char(':')) || row.contains(QLatin1Char('='))) << row.toStdString();
  }
  const int distance = view.difficultyAxis()->findData(QStringLiteral("distance:mqar:vocab=32,pairs=2,context=16"));
  ASSERT_GE(distance, 0);
  EXPECT_EQ(view.difficultyAxis()->itemText(distance), QStringLiteral("mqar context 16, 2 pairs: accuracy against key-query distance"));
}

TEST(LabView, DefaultsAreHsmLabsAndBadFormsAreRefused) {
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  const hsm::LabGrid grid = view.formGrid();
  EXPECT_EQ(grid, hsm::default_lab_grid());
  // Every preset is offered, the default grid's checked.
  EXPECT_GT(view.modelList()->count(), static_cast<int>(grid.models.size()));
  view.setFolder(QString());
  EXPECT_FALSE(view.runLab());
  EXPECT_TRUE(view.status().contains(QStringLiteral("folder"))) << view.status().toStdString();
  view.setFolder(test::temp_root() + QStringLiteral("/lab-bad"));
  view.findChild<QLineEdit*>(QStringLiteral("lab_lrs"))->setText(QStringLiteral("0.003, fast"));
  EXPECT_FALSE(view.runLab());
  EXPECT_TRUE(view.status().contains(QStringLiteral("'fast'"))) << view.status().toStdString();
  view.findChild<QLineEdit*>(QStringLiteral("lab_lrs"))->setText(QStringLiteral("0.003"));
  tinyForm(view, {QStringLiteral("mqar:pairs=999")}, {QStringLiteral("gpt")}, 2);
  EXPECT_FALSE(view.runLab());
  EXPECT_TRUE(view.status().contains(QStringLiteral("pairs"))) << view.status().toStdString();
  EXPECT_FALSE(view.isRunning());
  // A model config file is a row of the grid; a file that is not one is refused with the reason.
  const QString bad = test::temp_root() + QStringLiteral("/not-a-model.json");
  const QString good = test::temp_root() + QStringLiteral("/attn2.json");
  auto write = [](const QString& path, const char* text) {
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(text);
  };
  write(bad, "{\"name\": \"x\", \"layers\": 3}");
  write(good, "{\"name\": \"attn2\", \"vocab_size\": 256, \"d_model\": 64, \"context\": 64, \"dropout\": 0, "
              "\"layers\": [{\"mixer\": \"attn\", \"ffn\": 1, \"heads\": 1}, {\"mixer\": \"attn\", \"ffn\": 1, \"heads\": 1}]}");
  const int before = view.modelList()->count();
  EXPECT_FALSE(view.addModelConfig(bad));
  EXPECT_TRUE(view.status().contains(QStringLiteral("not-a-model.json"))) << view.status().toStdString();
  EXPECT_EQ(view.modelList()->count(), before);
  EXPECT_TRUE(view.addModelConfig(good)) << view.status().toStdString();
  EXPECT_EQ(view.modelList()->count(), before + 1);
  const hsm::LabGrid withConfig = view.formGrid();
  EXPECT_EQ(withConfig.models.back(), QFileInfo(good).absoluteFilePath().toStdString());
}

// Issue 69: a new studio's Lab can start at once. Its folder is a dated one under the user's
// documents, shown in the field and changeable; the form's grid says what Run will cost (the
// lab's own estimate, as `hsm lab --dry-run`); the empty Lab says what it answers instead of
// showing a blank grid, until a lab is shown.
TEST(LabView, ANewLabHasAFolderAnEstimateAndSaysWhatItAnswers) {
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  EXPECT_EQ(view.folder(), LabView::defaultFolder());
  EXPECT_TRUE(view.folder().startsWith(documents + QLatin1Char('/'))) << view.folder().toStdString();
  EXPECT_TRUE(view.folder().endsWith(QDate::currentDate().toString(Qt::ISODate))) << view.folder().toStdString();
  EXPECT_FALSE(QFileInfo::exists(view.folder()) && !QDir(view.folder()).isEmpty()) << "made before Run";
  const hsm::LabGrid grid = hsm::default_lab_grid();
  const double cpu = hsm::estimate_lab(hsm::lab_sweep(grid)).cpu_s;
  EXPECT_NEAR(view.estimatedSeconds(), cpu / std::max(1, QThread::idealThreadCount()), 1e-6);
  EXPECT_TRUE(view.estimateText().contains(QStringLiteral("%1 runs").arg(hsm::lab_run_count(grid))))
      << view.estimateText().toStdString();
  EXPECT_FALSE(view.showsLab());
  auto* intro = view.findChild<QLabel*>(QStringLiteral("lab_intro"));
  ASSERT_NE(intro, nullptr);
  EXPECT_TRUE(intro->text().contains(QStringLiteral("What the Lab answers")));
  // The estimate follows the form: one seed fewer, fewer runs.
  view.findChild<QSpinBox*>(QStringLiteral("lab_seeds"))->setValue(1);
  ASSERT_TRUE(test::wait_for([&] { return view.estimatedSeconds() < cpu / std::max(1, QThread::idealThreadCount()) * 0.75; }, 5000))
      << view.estimateText().toStdString();
  // Another folder is typed: Run uses it.
  const QString dir = test::temp_root() + QStringLiteral("/lab-typed");
  view.findChild<QLineEdit*>(QStringLiteral("lab_folder"))->setText(dir);
  EXPECT_EQ(view.folder(), dir);
  { const hsm::Lab made(dir.toStdString(), grid); }  // a lab there, nothing trained
  ASSERT_TRUE(openAndRead(view, dir)) << view.status().toStdString();
  EXPECT_TRUE(view.showsLab());
}

TEST(LabView, RunsCancelsContinuesAndReopens) {
  const QString dir = test::temp_root() + QStringLiteral("/lab-run");
  const QStringList tasks = {QStringLiteral("mqar:vocab=32,pairs=2,context=16")};
  // In the form's order: the default grid's models first (gpt_2layer, hsm_ab, hybrid_0_6 since
  // issue 68), then the other presets.
  const QStringList models = {QStringLiteral("hsm_ab"), QStringLiteral("gpt")};
  {
    RunList runs;
    EngineHost engine;
    LabView view(&runs, &engine);
    view.setFolder(dir);
    // Long enough to cancel in the middle of the first run.
    tinyForm(view, tasks, models, 100000);
    view.runButton()->click();
    ASSERT_TRUE(view.isRunning()) << view.status().toStdString();
    EXPECT_FALSE(view.runButton()->isEnabled());
    EXPECT_TRUE(view.cancelButton()->isEnabled());
    bool finished = false, cancelled = false;
    QObject::connect(&view, &LabView::labFinished, [&](bool c) { finished = true; cancelled = c; });
    // The bar moves inside a run (the workers report each step), long before one is scored.
    ASSERT_TRUE(test::wait_for([&] { return view.progress()->value() > 0; }, 60000)) << view.status().toStdString();
    // Every worker trains (past its first logged steps) before Cancel: on a loaded machine the
    // fast run alone could move the bar while the other worker still starts.
    auto* runner = view.findChild<GridRunner*>();
    ASSERT_NE(runner, nullptr);
    ASSERT_TRUE(test::wait_for([&] {
      const auto training = runner->inTraining();
      return training.size() == std::min(2, QThread::idealThreadCount()) &&
             std::all_of(training.begin(), training.end(), [](const auto& t) { return t.second >= 0.0005; });
    }, 120000)) << view.status().toStdString();
    // Issue 69: the overall progress in tenths of a percent while it is small, and the time left
    // from the lab's own estimate; the log in the form's words, not the launcher's grid language.
    EXPECT_TRUE(view.progress()->text().contains(QLatin1Char('.'))) << view.progress()->text().toStdString();
    EXPECT_TRUE(view.status().contains(QStringLiteral("left (the lab's estimate)"))) << view.status().toStdString();
    EXPECT_TRUE(view.status().contains(QStringLiteral("0 of 2 runs done"))) << view.status().toStdString();
    {
      const QString text = view.findChild<QPlainTextEdit*>(QStringLiteral("lab_log"))->toPlainText();
      EXPECT_TRUE(text.contains(QStringLiteral("training mqar · gpt · lr 0.003 · seed 1"))) << text.toStdString();
      EXPECT_FALSE(text.contains(QStringLiteral("hsm sweep"))) << text.toStdString();
      EXPECT_FALSE(text.contains(QStringLiteral("seed="))) << text.toStdString();
    }
    auto* training = view.findChild<QLabel*>(QStringLiteral("lab_training"));
    EXPECT_TRUE(training->text().startsWith(QStringLiteral("Training: mqar · ") + models[0] + QStringLiteral(" · lr 0.003 · seed 1 (")))
        << training->text().toStdString();
    // The lab trains in processes of its own: the analysis thread answers at once meanwhile
    // (an ablation in the Probe view never waits behind a lab).
    QFuture<int> other = engine.analysis().call<int>(QString(), [](const CallContext&) { return 7; });
    ASSERT_TRUE(test::wait_for([&] { return other.isFinished(); }, 5000));
    EXPECT_EQ(other.result(), 7);
    EXPECT_TRUE(view.isRunning());
    view.cancelButton()->click();
    ASSERT_TRUE(test::wait_for([&] { return finished; }, 60000));
    EXPECT_TRUE(cancelled);
    EXPECT_FALSE(view.isRunning());
    EXPECT_TRUE(view.runButton()->isEnabled());
    EXPECT_TRUE(view.status().contains(QStringLiteral("Cancel"))) << view.status().toStdString();
    // Each worker stopped at a step and kept its run's checkpoint, which the next Run continues.
    const QStringList started = QDir(dir + QStringLiteral("/runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    // One run per worker: a worker per core, at most one per run of the grid (2).
    ASSERT_EQ(started.size(), std::min(2, QThread::idealThreadCount())) << started.join(QLatin1Char(' ')).toStdString();
    for (const QString& run : started) expectStoppedWithACheckpoint(dir + QStringLiteral("/runs/") + run);
    finished = false;
    ASSERT_TRUE(view.runLab()) << view.status().toStdString();
    auto* log = view.findChild<QPlainTextEdit*>();
    ASSERT_TRUE(test::wait_for([&] { return log->toPlainText().contains(QStringLiteral("continuing mqar · ")); }, 60000))
        << log->toPlainText().toStdString();
    view.cancelLab();
    ASSERT_TRUE(test::wait_for([&] { return finished; }, 60000));
  }
  // Another view (a new studio) reopens the folder and finishes it at a few steps: the lab's
  // own grid is kept (100000 steps), so this is a new folder's grid instead.
  const QString dir2 = test::temp_root() + QStringLiteral("/lab-run2");
  {
    RunList runs;
    EngineHost engine;
    LabView view(&runs, &engine);
    view.setFolder(dir2);
    tinyForm(view, tasks + QStringList{QStringLiteral("recall_at:vocab=32,context=16,max_distance=15")}, models, 3);
    bool finished = false, cancelled = true;
    QObject::connect(&view, &LabView::labFinished, [&](bool c) { finished = true; cancelled = c; });
    double lastProgress = -1;
    QObject::connect(view.progress(), &QProgressBar::valueChanged, [&](int v) { lastProgress = v; });
    ASSERT_TRUE(view.runLab()) << view.status().toStdString();
    ASSERT_TRUE(test::wait_for([&] { return finished; }, 300000));
    ASSERT_TRUE(test::wait_for([&] { return !view.isReading(); }, 60000));  // the runs' curves
    EXPECT_FALSE(cancelled) << view.status().toStdString();
    EXPECT_EQ(lastProgress, 1000);  // all four runs scored
    QTableWidget* grid = view.grid();
    ASSERT_EQ(grid->rowCount(), 2);
    ASSERT_EQ(grid->columnCount(), 2);
    // Each cell is the one the points' scores give (read here).
    ASSERT_EQ(labResults(dir2).size(), 4);
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) {
        QTableWidgetItem* cell = grid->item(r, c);
        ASSERT_NE(cell, nullptr);
        const ExpectedCell expected = expectedCell(dir2, c, r);
        ASSERT_GE(expected.accuracy, 0) << "no result for cell " << r << ", " << c;
        EXPECT_TRUE(cell->text().startsWith(QString::number(expected.accuracy, 'f', 3))) << r << ", " << c;
        // Issue 50's marks: the task's best cell (the first model on a tie) has a star.
        const ExpectedCell other = expectedCell(dir2, c, 1 - r);
        const bool best = expected.accuracy > other.accuracy || (expected.accuracy == other.accuracy && r == 0);
        EXPECT_EQ(cell->text().contains(QStringLiteral("★")), best) << cell->text().toStdString();
        // Chance is 1/answer tokens; the tooltip names the test that marks it.
        const double chance = hsm::parse_task(view.formGrid().tasks[static_cast<size_t>(c)])->chance();
        EXPECT_TRUE(cell->toolTip().contains(QStringLiteral("chance ") + QString::number(chance, 'g', 3)))
            << cell->toolTip().toStdString();
        EXPECT_TRUE(cell->toolTip().contains(QStringLiteral("binomial"))) << cell->toolTip().toStdString();
        EXPECT_TRUE(cell->toolTip().contains(QStringLiteral("answer accuracy ") + QString::number(expected.accuracy, 'f', 4)))
            << cell->toolTip().toStdString();
        EXPECT_TRUE(cell->toolTip().contains(models[r])) << cell->toolTip().toStdString();
      }
    // Accuracy against distance: one choice per task whose answers carry their key-query
    // distance, MQAR's first (the lab's first task). On recall_at: one curve per model over its
    // distances 2..15, each point the model's recall_at answers at that distance (the scores'
    // by_distance: [right, all]) pooled over its runs.
    PlotPanel* plot = view.difficultyPlot();
    EXPECT_EQ(view.difficultyAxis()->currentData().toString(), QStringLiteral("distance:") + tasks[0]);
    ASSERT_EQ(plot->series().size(), 3);  // MQAR's distances: two models and chance
    EXPECT_LE(plot->series()[0].x.back(), 15);  // context 16
    const int recallAxis = view.difficultyAxis()->findData(QStringLiteral("distance:recall_at:vocab=32,context=16,max_distance=15"));
    ASSERT_GE(recallAxis, 0);
    view.difficultyAxis()->setCurrentIndex(recallAxis);
    ASSERT_EQ(plot->series().size(), 3);  // two models and chance
    // Chance drawn dashed across the distances: 1 / recall_at's answer tokens.
    EXPECT_EQ(plot->series()[2].style, PlotSeries::Style::kDashedLine);
    EXPECT_TRUE(plot->series()[2].name.startsWith(QStringLiteral("chance")));
    EXPECT_DOUBLE_EQ(plot->series()[2].y[0],
                     hsm::parse_task("recall_at:vocab=32,context=16,max_distance=15")->chance());
    EXPECT_EQ(plot->series()[0].name, models[0]);
    for (int m = 0; m < 2; ++m) {
      std::map<int, std::pair<double, double>> pooled;
      for (const QJsonObject& r : labResults(dir2)) {
        if (r.value(QStringLiteral("model")).toString() != models[m] ||
            !r.value(QStringLiteral("task")).toString().startsWith(QLatin1String("recall_at:")))
          continue;
        const QJsonObject by = r.value(QStringLiteral("by_distance")).toObject();
        for (auto it = by.begin(); it != by.end(); ++it) {
          pooled[it.key().toInt()].first += it.value().toArray().at(0).toDouble();
          pooled[it.key().toInt()].second += it.value().toArray().at(1).toDouble();
        }
      }
      ASSERT_EQ(static_cast<size_t>(plot->series()[m].x.size()), pooled.size()) << models[m].toStdString();
      int i = 0;
      for (const auto& [d, p] : pooled) {
        EXPECT_EQ(plot->series()[m].x[i], d);
        EXPECT_NEAR(plot->series()[m].y[i], p.first / p.second, 1e-7) << "distance " << d;  // a plot holds floats
        ++i;
      }
    }
    EXPECT_EQ(plot->series()[0].x.front(), 2);
    EXPECT_EQ(plot->series()[0].x.back(), 15);
    EXPECT_LT(plot->plot()->yAxis->range().lower, 0.0);  // an accuracy's whole range, not the data's
    EXPECT_GT(plot->plot()->yAxis->range().upper, 1.0);
    // One task of each name: no setting changes, so no MAD panel (the report has none either).
    EXPECT_EQ(view.difficultyAxis()->count(), 2);
    const QString png = dir2 + QStringLiteral("/difficulty.svg");
    EXPECT_TRUE(plot->exportTo(png).isEmpty());
    EXPECT_GT(QFileInfo(png).size(), 0);
    // The current cell's curve: validation answer accuracy of its one seed, its run's record.
    grid->setCurrentCell(1, 0);
    ASSERT_EQ(view.cellPlot()->series().size(), 2);  // the seed and chance
    EXPECT_TRUE(view.cellPlot()->series()[1].name.startsWith(QStringLiteral("chance")));
    ASSERT_EQ(view.cellPlot()->series()[0].x.size(), 1);  // 3 steps: the final evaluation alone
    EXPECT_EQ(view.cellPlot()->series()[0].x[0], 3);
    {
      QFile metrics(expectedCell(dir2, 0, 1).run + QStringLiteral("/metrics.jsonl"));
      ASSERT_TRUE(metrics.open(QIODevice::ReadOnly)) << metrics.fileName().toStdString();
      double recorded = -1;
      while (!metrics.atEnd()) {
        const QJsonObject j = QJsonDocument::fromJson(metrics.readLine()).object();
        if (j.value(QStringLiteral("kind")).toString() == QLatin1String("eval"))
          recorded = j.value(QStringLiteral("answer_accuracy")).toDouble();
      }
      EXPECT_NEAR(view.cellPlot()->series()[0].y[0], recorded, 1e-7);  // a plot holds floats
    }
    // A cell names its run (the best learning rate's, first seed).
    QString requested;
    QObject::connect(&view, &LabView::runRequested, [&](const QString& d) { requested = d; });
    emit grid->cellDoubleClicked(1, 1);
    const ExpectedCell recall = expectedCell(dir2, 1, 1);
    ASSERT_FALSE(recall.run.isEmpty());
    EXPECT_EQ(requested, recall.run);
    EXPECT_TRUE(QFileInfo::exists(requested + QStringLiteral("/task.json"))) << requested.toStdString();
    const QString csv = dir2 + QStringLiteral("/export.csv");
    ASSERT_TRUE(view.exportCsv(csv));
    QFile f(csv);
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    EXPECT_TRUE(text.startsWith(QStringLiteral("task,model,best_lr,answer_accuracy"))) << text.toStdString();
    EXPECT_EQ(text.count(QLatin1Char('\n')), 5) << text.toStdString();
    // Export report…: the page as `hsm lab report` writes it, its HTML and figures beside it;
    // asked again, the files beside it exist and nothing is written.
    const QString md = dir2 + QStringLiteral("/answer.md");
    QString error;
    ASSERT_TRUE(view.exportReport(md, &error)) << error.toStdString();
    QFile page(md);
    ASSERT_TRUE(page.open(QIODevice::ReadOnly));
    const QString markdown = QString::fromUtf8(page.readAll());
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c)
        EXPECT_TRUE(markdown.contains(QString::number(expectedCell(dir2, c, r).accuracy, 'f', 3))) << r << ", " << c;
    QFile html(dir2 + QStringLiteral("/answer.html"));
    ASSERT_TRUE(html.open(QIODevice::ReadOnly));
    EXPECT_TRUE(html.readAll().contains("<svg"));
    EXPECT_FALSE(view.exportReport(md, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("answer.html"))) << error.toStdString();
  }
  {
    // Reopened in a fresh view: its grid and results come back.
    RunList runs;
    EngineHost engine;
    LabView view(&runs, &engine);
    ASSERT_TRUE(openAndRead(view, dir2)) << view.status().toStdString();
    EXPECT_EQ(view.formGrid().steps, 3);
    EXPECT_EQ(view.grid()->rowCount(), 2);
    ASSERT_NE(view.grid()->item(1, 0), nullptr);
    EXPECT_NE(view.grid()->item(1, 0)->text(), QStringLiteral("–"));
    EXPECT_EQ(view.difficultyPlot()->series().size(), 3);
    EXPECT_TRUE(view.status().contains(QStringLiteral("4 of 4"))) << view.status().toStdString();
    EXPECT_FALSE(view.openLab(test::temp_root()));  // no lab there
  }
}

// A lab made by `hsm lab` with settings the form shows (weight decays) and some it does not (size,
// early stop, test examples) reopens as itself: the form's grid is the folder's, so Run
// continues it instead of being refused as another grid.
TEST(LabView, AReopenedLabKeepsEveryGridSettingOfItsFolder) {
  const QString dir = test::temp_root() + QStringLiteral("/lab_wd");
  hsm::LabGrid grid = hsm::default_lab_grid();
  grid.tasks = {"mqar:vocab=32,pairs=2,context=16"};
  grid.models = {"gpt"};
  grid.lrs = {0.001, 0.003};
  grid.weight_decays = {0, 0.1};
  grid.size = "tiny";
  grid.stop_accuracy = 0;
  grid.stop_stall_steps = 0;
  grid.test_examples = 64;
  grid.steps = 3;
  grid.batch = 4;
  grid.seeds = 1;
  { const hsm::Lab made(dir.toStdString(), grid); }  // the folder, nothing trained
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  ASSERT_TRUE(openAndRead(view, dir)) << view.status().toStdString();
  EXPECT_EQ(view.findChild<QLineEdit*>(QStringLiteral("lab_weight_decays"))->text(), QStringLiteral("0, 0.1"));
  EXPECT_TRUE(view.formGrid() == grid);
  EXPECT_EQ(view.formGrid().size, "tiny");
  EXPECT_EQ(view.formGrid().weight_decays, (std::vector<double>{0, 0.1}));
  // The field is the axis: emptied, none; a bad value is refused naming it.
  auto* decays = view.findChild<QLineEdit*>(QStringLiteral("lab_weight_decays"));
  decays->setText(QString());
  EXPECT_TRUE(view.formGrid().weight_decays.empty());
  decays->setText(QStringLiteral("0.1, 2"));
  try {
    (void)view.formGrid();
    ADD_FAILURE() << "weight decay 2 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("weight decay '2'"), std::string::npos) << e.what();
  }
  // A new folder is a new lab: hsm lab's defaults for what the form does not show, not the
  // reopened lab's.
  decays->setText(QString());
  view.setFolder(test::temp_root() + QStringLiteral("/lab_new"));
  EXPECT_EQ(view.formGrid().size, hsm::default_lab_grid().size);
  EXPECT_EQ(view.formGrid().stop_accuracy, hsm::default_lab_grid().stop_accuracy);
  EXPECT_EQ(view.formGrid().stop_stall_steps, hsm::default_lab_grid().stop_stall_steps);
}

TEST(LabView, IsATabAfterTheOtherViews) {
  MainWindow w;
  EXPECT_EQ(w.tabs()->tabText(MainWindow::kLab), QStringLiteral("Lab"));
  EXPECT_TRUE(w.tabs()->widget(MainWindow::kLab)->isAncestorOf(w.labView()));
  w.showView(MainWindow::kLab);
  EXPECT_TRUE(w.tabs()->currentWidget()->isAncestorOf(w.labView()));
  // The Architecture view's model is offered; checked, Run saves it into the lab and trains it.
  LabView& view = *w.labView();
  QListWidget* models = view.modelList();
  QListWidgetItem* architecture = models->item(models->count() - 1);
  ASSERT_TRUE(architecture->text().contains(QStringLiteral("Architecture"))) << architecture->text().toStdString();
  const QString folder = test::temp_root() + QStringLiteral("/lab-tab");
  view.setFolder(folder);
  tinyForm(view, {QStringLiteral("mqar:vocab=32,pairs=2,context=16")}, {}, 2);
  architecture->setCheckState(Qt::Checked);
  ASSERT_EQ(view.formGrid().models.size(), 1u);
  EXPECT_EQ(QString::fromStdString(view.formGrid().models[0]), QDir(folder).filePath(QStringLiteral("models/architecture.json")));
  bool finished = false;
  QObject::connect(&view, &LabView::labFinished, [&](bool) { finished = true; });
  ASSERT_TRUE(view.runLab()) << view.status().toStdString();
  ASSERT_TRUE(test::wait_for([&] { return finished; }, 120000));
  EXPECT_TRUE(QFileInfo::exists(folder + QStringLiteral("/models/architecture.json")));
  EXPECT_EQ(view.grid()->verticalHeaderItem(0)->text(), QStringLiteral("architecture"));
  const QString run = view.cellRun(0, 0);
  ASSERT_FALSE(run.isEmpty());
  emit view.grid()->cellDoubleClicked(0, 0);
  const RunEntry* opened = w.runs()->currentRun();
  ASSERT_NE(opened, nullptr);
  EXPECT_EQ(QFileInfo(opened->dir).canonicalFilePath(), QFileInfo(run).canonicalFilePath());
  EXPECT_EQ(w.tabs()->currentIndex(), MainWindow::kDiagnostics);
}

// Issue 48, no stale view: a new lab (another folder) run in the same view shows nothing of the
// previous one while it runs: its cell-training plot and its log are the new lab's from the
// start, never the last lab's curve under the new lab's grid.
TEST(LabView, ANewLabShowsNothingOfThePreviousOneWhileItRuns) {
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  bool finished = false;
  QObject::connect(&view, &LabView::labFinished, [&](bool) { finished = true; });
  const QString a = test::temp_root() + QStringLiteral("/lab-stale-a"), b = test::temp_root() + QStringLiteral("/lab-stale-b");
  auto* log = view.findChild<QPlainTextEdit*>(QStringLiteral("lab_log"));
  auto xLabel = [&] { return view.cellPlot()->xLabel(); };
  view.setFolder(a);
  tinyForm(view, {QStringLiteral("mqar:vocab=32,pairs=2,context=16")}, {QStringLiteral("gpt")}, 3);
  ASSERT_TRUE(view.runLab()) << view.status().toStdString();
  ASSERT_TRUE(test::wait_for([&] { return finished && !view.isReading(); }, 120000));
  ASSERT_EQ(view.cellPlot()->series().size(), 2);  // lab A's one seed and chance
  EXPECT_TRUE(xLabel().contains(QStringLiteral("gpt"))) << xLabel().toStdString();
  EXPECT_TRUE(log->toPlainText().contains(QStringLiteral("lab-stale-a"))) << log->toPlainText().toStdString();

  // Lab B (another model, a long budget) starts: nothing of A is left in the plot or the log.
  finished = false;
  view.setFolder(b);
  tinyForm(view, {QStringLiteral("mqar:vocab=32,pairs=2,context=16")}, {QStringLiteral("hsm_ab")}, 100000);
  ASSERT_TRUE(view.runLab()) << view.status().toStdString();
  EXPECT_TRUE(view.cellPlot()->series().isEmpty()) << view.cellPlot()->series().front().name.toStdString();
  EXPECT_FALSE(xLabel().contains(QStringLiteral("gpt"))) << xLabel().toStdString();
  EXPECT_TRUE(xLabel().contains(QStringLiteral("lab-stale-b"))) << xLabel().toStdString();
  EXPECT_FALSE(log->toPlainText().contains(QStringLiteral("lab-stale-a"))) << log->toPlainText().toStdString();
  EXPECT_TRUE(log->toPlainText().contains(QStringLiteral("lab-stale-b"))) << log->toPlainText().toStdString();
  ASSERT_TRUE(test::wait_for([&] { return view.progress()->value() > 0; }, 60000)) << view.status().toStdString();
  EXPECT_TRUE(view.cellPlot()->series().isEmpty());  // B has no scored cell while it trains
  view.cancelLab();
  ASSERT_TRUE(test::wait_for([&] { return finished; }, 60000));
  EXPECT_FALSE(log->toPlainText().contains(QStringLiteral("lab-stale-a")));

  // Lab A reopened: its curve again, and nothing of B's log.
  ASSERT_TRUE(openAndRead(view, a)) << view.status().toStdString();
  ASSERT_EQ(view.cellPlot()->series().size(), 2);
  EXPECT_TRUE(xLabel().contains(QStringLiteral("gpt"))) << xLabel().toStdString();
  EXPECT_FALSE(log->toPlainText().contains(QStringLiteral("lab-stale-b"))) << log->toPlainText().toStdString();
}

// The difficulty plot draws the lab report's panels (hsm/lab_report.h), from the same cells: one
// choice per distance panel and per MAD panel, each curve the report's series (its label, its
// points without the unscored ones), the reach and chance lines the report's. A lab whose points
// are scored by hand (no training): MQAR at 2 and 4 pairs (a change of one setting: MAD's panel),
// two models, the second seed's scores lower.
TEST(LabView, TheDifficultyPlotDrawsTheLabReportsPanels) {
  const QString dir = test::temp_root() + QStringLiteral("/lab-panels");
  hsm::LabGrid grid = hsm::default_lab_grid();
  grid.tasks = {"mqar:vocab=32,pairs=2,context=16", "mqar:vocab=32,pairs=4,context=16"};
  grid.models = {"gpt", "hsm_ab"};
  grid.lrs = {0.003};
  grid.weight_decays = {};
  grid.seeds = 2;
  std::vector<hsm::LabCell> cells;
  {
    const hsm::Lab lab(dir.toStdString(), grid);
    int k = 0;
    for (const hsm::SweepPoint& p : lab.sweep().points) {
      if (k++ == 5) continue;  // one run not scored yet: its cell has one seed
      hsm::PointState s;
      s.state = "done";
      s.scored = true;
      s.score.answer_accuracy = 0.3 + 0.05 * k;
      s.score.sequence_accuracy = 0.1;
      s.score.answers = 40;
      s.score.examples = 10;
      s.score.by_difficulty = {{1, {8 + k, 10}}, {5, {k, 10}}, {9, {1, 10}}, {13, {0, 10}}};
      hsm::write_point_state(dir.toStdString(), p, s);
    }
    cells = lab.table();
  }
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  ASSERT_TRUE(openAndRead(view, dir)) << view.status().toStdString();
  const hsm::Lab lab(dir.toStdString(), grid);
  const std::vector<hsm::LabDistancePanel> distance = hsm::lab_distance_panels(lab, cells, lab.results());
  const std::vector<hsm::LabDifficultyPanel> mad = hsm::lab_difficulty_panels(lab, cells);
  ASSERT_EQ(distance.size(), 2u);
  ASSERT_EQ(mad.size(), 1u);  // mqar: pairs
  ASSERT_EQ(view.difficultyAxis()->count(), 3);
  std::vector<std::pair<QString, const hsm::SvgPanel*>> choices = {
      {QStringLiteral("distance:") + QString::fromStdString(distance[0].task), &distance[0].panel},
      {QStringLiteral("distance:") + QString::fromStdString(distance[1].task), &distance[1].panel},
      {QStringLiteral("setting:mqar:pairs"), &mad[0].panel}};
  for (const auto& [data, panel] : choices) {
    SCOPED_TRACE(data.toStdString());
    const int at = view.difficultyAxis()->findData(data);
    ASSERT_GE(at, 0);
    view.difficultyAxis()->setCurrentIndex(at);
    const QVector<PlotSeries>& shown = view.difficultyPlot()->series();
    ASSERT_EQ(shown.size(), static_cast<int>(panel->series.size() + panel->vlines.size() + panel->lines.size()));
    for (size_t i = 0; i < panel->series.size(); ++i) {
      const hsm::SvgSeries& expected = panel->series[i];
      const PlotSeries& curve = shown[static_cast<int>(i)];
      EXPECT_EQ(curve.name, QString::fromStdString(expected.label));
      QVector<double> x, y;
      for (size_t j = 0; j < expected.x.size(); ++j)
        if (std::isfinite(expected.y[j])) x << expected.x[j], y << expected.y[j];
      EXPECT_EQ(curve.x, x) << curve.name.toStdString();
      ASSERT_EQ(curve.y.size(), y.size()) << curve.name.toStdString();
      for (int j = 0; j < y.size(); ++j) EXPECT_NEAR(curve.y[j], y[j], 1e-7) << curve.name.toStdString();
    }
    for (size_t i = 0; i < panel->vlines.size(); ++i) {
      const PlotSeries& line = shown[static_cast<int>(panel->series.size() + i)];
      EXPECT_EQ(line.name, QString::fromStdString(panel->vlines[i].label));
      EXPECT_EQ(line.x, (QVector<double>{panel->vlines[i].x, panel->vlines[i].x}));
    }
    const PlotSeries& chance = shown.back();
    EXPECT_EQ(chance.name, QString::fromStdString(panel->lines.back().label));
    EXPECT_EQ(chance.style, PlotSeries::Style::kDashedLine);
    ASSERT_FALSE(chance.y.isEmpty());
    EXPECT_EQ(chance.y.front(), panel->lines.back().y);
  }
  // MAD's panel: x the pairs, y each cell's mean answer accuracy (the report's, not a mean the
  // view makes of its own).
  view.difficultyAxis()->setCurrentIndex(view.difficultyAxis()->findData(QStringLiteral("setting:mqar:pairs")));
  EXPECT_EQ(view.difficultyPlot()->series()[0].x, (QVector<double>{2, 4}));
  ASSERT_EQ(view.difficultyPlot()->series()[1].y.size(), 2);
  EXPECT_NEAR(view.difficultyPlot()->series()[1].y[1], cells[1 * 2 + 1].answer_accuracy, 1e-7);
}

// Closing the studio while a lab runs asks first (Cancel: it goes on); Yes stops every worker
// at its step with its checkpoint and closes.
TEST(LabView, ClosingWhileALabRunsAsksThenStopsItsWorkers) {
  MainWindow w;
  w.show();
  LabView& view = *w.labView();
  const QString folder = test::temp_root() + QStringLiteral("/lab-close");
  view.setFolder(folder);
  tinyForm(view, {QStringLiteral("mqar:vocab=32,pairs=2,context=16")}, {QStringLiteral("gpt")}, 100000);
  ASSERT_TRUE(view.runLab()) << view.status().toStdString();
  ASSERT_TRUE(test::wait_for([&] { return view.progress()->value() > 0; }, 60000));
  auto answer = [](QMessageBox::StandardButton button) {
    QTimer::singleShot(100, [button] {
      if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) box->button(button)->click();
    });
  };
  answer(QMessageBox::Cancel);
  EXPECT_FALSE(w.close());
  EXPECT_TRUE(view.isRunning());
  answer(QMessageBox::Yes);
  EXPECT_TRUE(w.close());
  ASSERT_TRUE(test::wait_for([&] { return !view.isRunning(); }, 60000));
  const QStringList runs = QDir(folder + QStringLiteral("/runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  ASSERT_EQ(runs.size(), 1);
  expectStoppedWithACheckpoint(folder + QStringLiteral("/runs/") + runs[0]);
}

// The studio's one grid runner (issue 47) reports what the workers' structured events say and
// nothing its log text says: a stand-in launcher whose lines on stderr claim runs scored (the
// older runner counted "answer accuracy" lines) and whose stdout holds an older progress line
// and the events. The runner's counts, fractions and failures are the events' alone; the text
// reaches line() for people, unparsed. It starts the one launcher: `hsm sweep --out DIR --jobs
// N --events`.
TEST(GridRunner, ProgressComesFromTheWorkersEventsNeverTheirLogText) {
  const QString dir = test::temp_root() + QStringLiteral("/grid-runner");
  QDir().mkpath(dir);
  const QString script = dir + QStringLiteral("/fake-hsm");
  {
    QFile f(script);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(R"SH(#!/bin/sh
echo "$@" > "$(dirname "$0")/args"
echo "[1/4] t0_mqar: answer accuracy 0.900, sequence accuracy 0.500 (1.0 s)" >&2
echo 'hsm-grid-event {"event":"grid","points":4,"done":1,"jobs":1}'
echo 'hsm-grid-event {"event":"started","point":1,"name":"b","resumed":true}'
echo 'hsm-grid-event {"event":"step","point":1,"name":"b","fraction":0.5}'
printf 'progress\t0.9000\tb\n'
echo "[2/4] b: answer accuracy 0.800, sequence accuracy 0.500 (1.0 s)" >&2
sleep 0.3
echo 'hsm-grid-event {"event":"finished","point":1,"name":"b","state":"done","answer_accuracy":0.25}'
echo 'hsm-grid-event {"event":"started","point":2,"name":"c","resumed":false}'
echo 'hsm-grid-event {"event":"finished","point":2,"name":"c","state":"failed","error":"boom"}'
echo "[3/4] c: answer accuracy 0.700, sequence accuracy 0.500 (1.0 s)" >&2
exit 1
)SH");
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  }
  setHsmExecutable(script);
  GridRunner runner;
  int points = -1, doneAtStart = -1;
  bool resumed = false;
  QStringList finishedPoints, lines;
  QList<double> fractions;
  bool ended = false, cancelled = true;
  QString failures;
  QObject::connect(&runner, &GridRunner::started, [&](int p, int d) { points = p, doneAtStart = d; });
  QObject::connect(&runner, &GridRunner::pointStarted, [&](int, const QString& name, bool r) {
    if (name == QLatin1String("b")) resumed = r;
  });
  QObject::connect(&runner, &GridRunner::progress, [&](double f) { fractions << f; });
  QObject::connect(&runner, &GridRunner::pointFinished,
                   [&](int, const QString& name, const QString& state, const QJsonObject& e) {
                     finishedPoints << name + QLatin1Char(':') + state + QLatin1Char(':') +
                                           QString::number(e.value(QStringLiteral("answer_accuracy")).toDouble());
                   });
  QObject::connect(&runner, &GridRunner::line, [&](const QString& l) { lines << l; });
  QObject::connect(&runner, &GridRunner::finished, [&](bool c, const QString& f) { ended = true, cancelled = c, failures = f; });
  QString error;
  ASSERT_TRUE(runner.start(dir, 3, &error)) << error.toStdString();
  ASSERT_TRUE(test::wait_for([&] { return ended; }, 30000));
  setHsmExecutable(QString());
  QFile args(dir + QStringLiteral("/args"));
  ASSERT_TRUE(args.open(QIODevice::ReadOnly));
  EXPECT_EQ(QString::fromUtf8(args.readAll()).trimmed(),
            QStringLiteral("sweep --out %1 --jobs 3 --events").arg(QFileInfo(dir).absoluteFilePath()));
  EXPECT_EQ(points, 4);
  EXPECT_EQ(doneAtStart, 1);
  EXPECT_TRUE(resumed);
  EXPECT_EQ(finishedPoints, (QStringList{QStringLiteral("b:done:0.25"), QStringLiteral("c:failed:0")}));
  EXPECT_EQ(runner.done(), 2) << "the log's three 'answer accuracy' lines are no scored runs";
  EXPECT_EQ(runner.points(), 4);
  EXPECT_TRUE(runner.inTraining().isEmpty());
  // 1 done of 4, then b half-way (the older "progress 0.9" line is no event), then b done.
  ASSERT_GE(fractions.size(), 3);
  EXPECT_DOUBLE_EQ(fractions[0], 0.25);
  EXPECT_DOUBLE_EQ(*std::max_element(fractions.begin(), fractions.end()), 0.5);
  EXPECT_TRUE(fractions.contains(0.375)) << "b at half its run: (1 + 0.5) / 4";
  EXPECT_FALSE(cancelled);
  EXPECT_EQ(failures, QStringLiteral("c: boom"));
  EXPECT_EQ(lines.size(), 3);  // shown to people as they are
  EXPECT_TRUE(lines.value(0).contains(QStringLiteral("answer accuracy 0.900")));
}

// A cell whose runs stopped on a plateau (or still rose at the end) says so in the grid and names
// the evidence in its tooltip: its accuracy is no capability answer (issue 68, lab68's mark).
TEST(LabView, ACellThatDidNotConvergeSaysSoWithItsEvidence) {
  hsm::LabCell c;
  c.task = "mqar:vocab=128,pairs=4,context=16";
  c.model = "gpt";
  c.answer_accuracy = 0.368;
  c.answer_sd = 0.002;
  c.n = 2;
  c.seed_accuracy = {0.367, 0.369};
  c.chance = 1.0 / 64;
  EXPECT_FALSE(LabView::cellText(c).contains(QStringLiteral("not converged")));
  EXPECT_FALSE(LabView::cellToolTip(c).contains(QStringLiteral("not converged")));
  c.not_converged = true;
  c.not_converged_evidence = {"seed 1: stopped by the stall rule at step 1200", "seed 2: still rising (+0.03 over its last window)"};
  EXPECT_TRUE(LabView::cellText(c).contains(QStringLiteral("\nnot converged"))) << LabView::cellText(c).toStdString();
  const QString tip = LabView::cellToolTip(c);
  EXPECT_TRUE(tip.contains(QStringLiteral("not converged: no capability answer"))) << tip.toStdString();
  EXPECT_TRUE(tip.contains(QStringLiteral("seed 1: stopped by the stall rule at step 1200"))) << tip.toStdString();
  EXPECT_TRUE(tip.contains(QStringLiteral("seed 2: still rising"))) << tip.toStdString();
}

namespace {

// A lab of one task (MQAR at context 16), two models and two seeds, nothing trained: its folder
// and grid (sweep.json) alone.
hsm::LabGrid handMadeGrid() {
  hsm::LabGrid grid = hsm::default_lab_grid();
  grid.tasks = {"mqar:vocab=32,pairs=2,context=16"};
  grid.models = {"gpt", "hsm_ab"};
  grid.lrs = {0.003};
  grid.weight_decays = {};
  grid.seeds = 2;
  return grid;
}

hsm::TaskScore handMadeScore(int k) {
  hsm::TaskScore s;
  s.answer_accuracy = 0.25 + 0.125 * k;
  s.sequence_accuracy = 0.0625 * k;
  s.loss = 2 - 0.25 * k;
  s.answers = 64;
  s.examples = 32;
  s.by_difficulty = {{1, {10 + k, 16}}, {5, {4 + k, 16}}, {9, {k, 16}}, {13, {0, 16}}};
  return s;
}

}  // namespace

// Issue 66, the LabState: while the studio trains a lab, each worker's "finished" event carries
// its run's score, and the cells and the distance panel follow the events without reading the
// folder. A stand-in launcher reports the four points scored (the first three's state files are
// never written, so a view that read the folder would show no cell of theirs): the grid, the
// tooltips and the difficulty plot are the table and the report's panel of the runs the events
// carry. The fourth event has no score (an older worker's, or a score too long for one line):
// its point's state file, written just before it, is read for it.
TEST(LabView, TheCellsFollowTheWorkersEventsWithoutReadingTheFolder) {
  const QString dir = test::temp_root() + QStringLiteral("/lab-events");
  const hsm::LabGrid grid = handMadeGrid();
  const hsm::Lab lab(dir.toStdString(), grid);
  QString script = QStringLiteral("#!/bin/sh\necho 'hsm-grid-event {\"event\":\"grid\",\"points\":4,\"done\":0,\"jobs\":1}'\n");
  std::vector<hsm::LabRun> expected;
  const QString staging = test::temp_root() + QStringLiteral("/lab-events-staging");
  int k = 0;
  for (const hsm::SweepPoint& p : lab.sweep().points) {
    if (k == 3) {
      hsm::PointState s;
      s.state = "done";
      s.scored = true;
      s.score = handMadeScore(k);
      s.wall_s = 1.5;
      hsm::write_point_state(staging.toStdString(), p, s);
      script += QStringLiteral("mkdir -p '%1/points' && cp '%2/points/%3.json' '%1/points/'\n")
                    .arg(dir, staging, QString::fromStdString(p.name));
      script += QStringLiteral("echo 'hsm-grid-event {\"event\":\"finished\",\"point\":%1,\"name\":\"%2\",\"state\":\"done\"}'\n")
                    .arg(p.index).arg(QString::fromStdString(p.name));
      break;
    }
    hsm::RunConvergence c;
    c.state = k == 2 ? "rising" : "converged";
    c.last_step = 300;
    c.last_accuracy = 0.5;
    c.last_slope = k == 2 ? 0.2 : 0;
    c.evidence = k == 2 ? "still rising at step 300 (+0.200 per 1,000 steps)" : "";
    const std::string event = QJsonDocument(QJsonObject{
        {QStringLiteral("event"), QStringLiteral("finished")},
        {QStringLiteral("point"), static_cast<int>(p.index)},
        {QStringLiteral("name"), QString::fromStdString(p.name)},
        {QStringLiteral("state"), QStringLiteral("done")},
        {QStringLiteral("answer_accuracy"), handMadeScore(k).answer_accuracy},
        {QStringLiteral("wall_s"), 1.5},
        {QStringLiteral("score"), QJsonDocument::fromJson(QByteArray::fromStdString(hsm::task_score_json(handMadeScore(k)))).object()},
        {QStringLiteral("convergence"), QJsonDocument::fromJson(QByteArray::fromStdString(hsm::run_convergence_json(c))).object()},
    }).toJson(QJsonDocument::Compact).toStdString();
    const std::optional<hsm::LabRun> run = lab.run_of_event(event);
    ASSERT_TRUE(run.has_value()) << event;
    expected.push_back(*run);
    script += QStringLiteral("echo 'hsm-grid-event {\"event\":\"started\",\"point\":%1,\"name\":\"%2\",\"resumed\":false}'\n")
                  .arg(p.index).arg(QString::fromStdString(p.name));
    script += QStringLiteral("echo 'hsm-grid-event %1'\nsleep 1\n").arg(QString::fromStdString(event));
    ++k;
  }
  const QString fake = test::temp_root() + QStringLiteral("/lab-events-hsm");
  {
    QFile f(fake);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(script.toUtf8());
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  }
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  ASSERT_TRUE(openAndRead(view, dir)) << view.status().toStdString();
  EXPECT_TRUE(view.cells().size() == 2 && !std::isfinite(view.cells()[0].answer_accuracy));
  setHsmExecutable(fake);
  bool finished = false;
  QObject::connect(&view, &LabView::labFinished, [&](bool) { finished = true; });
  // After the first event: its cell alone, from the event (the table of one run).
  ASSERT_TRUE(view.runLab()) << view.status().toStdString();
  ASSERT_TRUE(test::wait_for([&] { return std::isfinite(view.cells()[0].answer_accuracy); }, 30000));
  EXPECT_EQ(hsm::Lab::table_csv(view.cells()), hsm::Lab::table_csv(hsm::lab_cells(grid, {expected[0]})));
  ASSERT_TRUE(test::wait_for([&] { return finished && !view.isReading(); }, 30000));
  setHsmExecutable(QString());
  // The fourth run, read from its state file: the folder's one scored run.
  EXPECT_EQ(QDir(dir + QStringLiteral("/points")).entryList({QStringLiteral("*.json")}).size(), 1)
      << "the first three's cells can only be the events'";
  const std::vector<hsm::LabRun> fourth = lab.results();
  ASSERT_EQ(fourth.size(), 1u);
  expected.push_back(fourth[0]);
  const std::vector<hsm::LabCell> cells = hsm::lab_cells(grid, expected);
  EXPECT_EQ(hsm::Lab::table_csv(view.cells()), hsm::Lab::table_csv(cells));
  for (int r = 0; r < 2; ++r) {
    QTableWidgetItem* item = view.grid()->item(r, 0);
    ASSERT_NE(item, nullptr);
    EXPECT_TRUE(item->text().startsWith(QString::number(cells[static_cast<size_t>(r)].answer_accuracy, 'f', 3)))
        << item->text().toStdString();
  }
  // Point 2's run still rose at its last step (its event says so): its cell is not converged.
  const hsm::LabCell& unsettled = cells[expected[2].model == grid.models[0] ? 0 : 1];
  ASSERT_TRUE(unsettled.not_converged);
  EXPECT_TRUE(view.grid()->item(expected[2].model == grid.models[0] ? 0 : 1, 0)->text().contains(QStringLiteral("not converged")));
  // The difficulty plot is the report's distance panel of the runs the events carried.
  const std::vector<hsm::LabDistancePanel> panels = hsm::lab_distance_panels(lab, cells, expected);
  ASSERT_EQ(panels.size(), 1u);
  const QVector<PlotSeries> shown = view.difficultyPlot()->series();
  ASSERT_GE(shown.size(), 2);
  for (size_t m = 0; m < 2; ++m) {
    ASSERT_EQ(static_cast<size_t>(shown[static_cast<int>(m)].y.size()), panels[0].panel.series[m].y.size());
    for (size_t i = 0; i < panels[0].panel.series[m].y.size(); ++i)
      EXPECT_NEAR(shown[static_cast<int>(m)].y[static_cast<int>(i)], panels[0].panel.series[m].y[i], 1e-7);
  }
  EXPECT_TRUE(view.status().contains(QStringLiteral("4 run(s) scored"))) << view.status().toStdString();
}

// Issue 67 in the Lab: a cell's tooltip says, per run at its best setting, when its mechanism
// formed (hsm::run_formation of the traces the run recorded while it trained, read off the GUI
// thread), and "–" for a run that recorded none.
TEST(LabView, ACellsTooltipSaysWhenEachRunsMechanismFormed) {
  const QString dir = test::temp_root() + QStringLiteral("/lab-formation");
  const hsm::LabGrid grid = handMadeGrid();
  std::string traced;  // the first run of gpt's cell: traces; its second seed: none
  {
    const hsm::Lab lab(dir.toStdString(), grid);
    int k = 0;
    for (const hsm::SweepPoint& p : lab.sweep().points) {
      hsm::PointState s;
      s.state = "done";
      s.scored = true;
      s.score = handMadeScore(k++);
      hsm::write_point_state(dir.toStdString(), p, s);
    }
    traced = hsm::sweep_run_dir(dir.toStdString(), lab.sweep().points[0]);
    ASSERT_EQ(lab.sweep().points[0].model_source, "gpt");
    QDir().mkpath(QString::fromStdString(traced));
    QFile f(QString::fromStdString(traced) + QStringLiteral("/traces.jsonl"));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    const std::vector<double> shares = {0.01, 0.05, 0.3, 0.4}, accuracy = {0.1, 0.2, 0.7, 0.9};
    for (size_t i = 0; i < shares.size(); ++i) {
      hsm::TraceRecord r;
      r.step = 100 * static_cast<int64_t>(i + 1);
      r.route_share = shares[i];
      r.accuracy = accuracy[i];
      r.val_loss = 2 - accuracy[i];
      r.example = "test example 0 of mqar";
      r.clean = {1};
      r.corrupt = {2};
      r.clean_labels = {"a"};
      r.corrupt_labels = {"b"};
      r.positions = 1;
      r.layers = 1;
      r.mixer_effect = {shares[i]};
      f.write(QByteArray::fromStdString(hsm::trace_record_to_json_line(r) + "\n"));
    }
  }
  const hsm::Formation formation = hsm::run_formation(traced);
  ASSERT_EQ(formation.formed_step, 300);
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  ASSERT_TRUE(openAndRead(view, dir)) << view.status().toStdString();
  QTableWidgetItem* gpt = view.grid()->item(0, 0);
  ASSERT_NE(gpt, nullptr);
  const QString tip = gpt->toolTip();
  EXPECT_TRUE(tip.contains(QStringLiteral("mechanism (from the traces recorded while it trained):"))) << tip.toStdString();
  EXPECT_TRUE(tip.contains(QStringLiteral("seed 1: ") + QString::fromStdString(formation.summary()))) << tip.toStdString();
  EXPECT_TRUE(tip.contains(QStringLiteral("formed at step 300"))) << tip.toStdString();
  EXPECT_TRUE(tip.contains(QStringLiteral("seed 2: –"))) << tip.toStdString();
  const QString other = view.grid()->item(1, 0)->toolTip();
  EXPECT_TRUE(other.contains(QStringLiteral("seed 1: –")) && other.contains(QStringLiteral("seed 2: –"))) << other.toStdString();
}

namespace {

// Every file under `dir` with its bytes (and so its size), and every folder.
std::map<QString, QByteArray> treeOf(const QString& dir) {
  std::map<QString, QByteArray> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.toStdString())) {
    const QString path = QString::fromStdString(e.path().string());
    QFile f(path);
    out[path] = e.is_regular_file() && f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<folder>");
  }
  return out;
}

void setWritable(const QString& dir, bool writable) {
  namespace fs = std::filesystem;
  const auto opts = writable ? fs::perm_options::add : fs::perm_options::remove;
  const auto bits = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  for (const auto& e : fs::recursive_directory_iterator(dir.toStdString())) fs::permissions(e.path(), bits, opts);
  fs::permissions(dir.toStdString(), bits, opts);
}

}  // namespace

// Issue 68/69: a first start opens the finished lab that ships with the studio
// (<resources>/labs/default), marked as bundled with the command, machine and date of its
// BUNDLED.json; a later start does not; Run never writes into it (here read-only, as installed)
// but continues it in a writable copy in the user's labs folder, which the view then shows. The
// resources are a folder of this test's (HSM_RESOURCES) holding the real presets and a tiny
// hand-made bundled lab (three of its four runs scored).
TEST(LabView, ABundledLabOpensOnAFirstStartMarkedAndIsContinuedInACopy) {
  const QString resources = test::temp_root() + QStringLiteral("/resources");
  const QString bundled = resources + QStringLiteral("/labs/default");
  QDir().mkpath(resources + QStringLiteral("/labs"));
  ASSERT_TRUE(QFile::link(QStringLiteral(HSM_RESOURCES_PATH "/presets"), resources + QStringLiteral("/presets")));
  const hsm::LabGrid grid = handMadeGrid();
  {
    const hsm::Lab lab(bundled.toStdString(), grid);
    for (int k = 0; k < 3; ++k) {
      hsm::PointState s;
      s.state = "done";
      s.scored = true;
      s.score = handMadeScore(k);
      hsm::write_point_state(bundled.toStdString(), lab.sweep().points[static_cast<size_t>(k)], s);
    }
    QFile f(bundled + QStringLiteral("/BUNDLED.json"));
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(R"({"command": "hsm lab --out default --seeds 2", "machine": "AMD EPYC, 2 cores", "date": "2026-12-07"})");
  }
  setWritable(bundled, false);
  const std::map<QString, QByteArray> before = treeOf(bundled);
  qputenv("HSM_RESOURCES", resources.toUtf8());
  QSettings().remove(QStringLiteral("lab/bundled_opened"));
  const QString fake = test::temp_root() + QStringLiteral("/bundled-hsm");
  {
    QFile f(fake);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/bundled-args\"\n"
            "echo 'hsm-grid-event {\"event\":\"grid\",\"points\":4,\"done\":3,\"jobs\":1}'\n");
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  }
  {
    EXPECT_EQ(LabState::bundledLabFolder(), bundled);
    EXPECT_TRUE(LabState::isBundledLab(bundled));
    RunList runs;
    EngineHost engine;
    LabView view(&runs, &engine);
    view.show();
    ASSERT_TRUE(test::wait_for([&] { return view.showsLab() && !view.isReading(); }, 30000)) << view.status().toStdString();
    EXPECT_EQ(view.folder(), bundled);
    auto* mark = view.findChild<QLabel*>(QStringLiteral("lab_bundled"));
    ASSERT_NE(mark, nullptr);
    EXPECT_TRUE(mark->isVisibleTo(&view));
    for (const char* said : {"hsm lab --out default --seeds 2", "AMD EPYC, 2 cores", "2026-12-07", "read-only"})
      EXPECT_TRUE(mark->text().contains(QString::fromUtf8(said))) << said << ": " << mark->text().toStdString();
    ASSERT_EQ(view.cells().size(), 2u);
    EXPECT_EQ(view.cells()[0].n, 2);
    EXPECT_EQ(view.cells()[1].n, 1);
    {
      // A later start: the empty Lab stays empty (it was opened once).
      RunList runs2;
      EngineHost engine2;
      LabView later(&runs2, &engine2);
      later.show();
      test::wait_for([] { return false; }, 300);  // events processed for 0.3 s
      EXPECT_FALSE(later.showsLab());
    }
    // Run: the bundled folder is copied, and the copy runs.
    setHsmExecutable(fake);
    bool finished = false;
    QObject::connect(&view, &LabView::labFinished, [&](bool) { finished = true; });
    ASSERT_TRUE(view.runLab()) << view.status().toStdString();
    const QString copy = view.folder();
    EXPECT_NE(copy, bundled);
    EXPECT_EQ(QFileInfo(copy).absolutePath(), QFileInfo(LabView::defaultFolder()).absolutePath());
    EXPECT_TRUE(QFileInfo(copy).fileName().startsWith(QStringLiteral("default-"))) << copy.toStdString();
    ASSERT_TRUE(test::wait_for([&] { return finished && !view.isReading(); }, 30000));
    setHsmExecutable(QString());
    QFile args(test::temp_root() + QStringLiteral("/bundled-args"));
    ASSERT_TRUE(args.open(QIODevice::ReadOnly));
    EXPECT_TRUE(args.readAll().contains(QFileInfo(copy).absoluteFilePath().toUtf8())) << "the launcher trains the copy";
    EXPECT_FALSE(QFileInfo::exists(copy + QStringLiteral("/BUNDLED.json")));
    EXPECT_TRUE(QFileInfo(copy + QStringLiteral("/sweep.json")).isWritable());
    EXPECT_TRUE(QFileInfo(copy + QStringLiteral("/points")).isWritable());
    EXPECT_FALSE(mark->isVisibleTo(&view)) << "the copy is the user's lab";
    EXPECT_EQ(view.cells()[0].n, 2);  // the copy's three scored runs
    EXPECT_EQ(view.cells()[1].n, 1);
    EXPECT_FALSE(LabState::isBundledLab(copy));
  }
  qunsetenv("HSM_RESOURCES");
  EXPECT_TRUE(treeOf(bundled) == before) << "the bundled lab was written into";
  setWritable(bundled, true);
}

// A first start shows the bundled lab, read off the GUI thread; its grid went into the form when
// the read arrived, whatever the user had begun meanwhile: a task they had unticked came back
// ticked, and an item they were editing was deleted under its editor (the crash
// TasksAreShownByTitleAndRunByTheirSpec met, 28 runs of 40). A form the user has changed stays theirs.
TEST(LabView, AFirstStartsBundledLabLeavesTheFormTheUserHasBegun) {
  ASSERT_FALSE(LabState::bundledLabFolder().isEmpty()) << "the source tree's resources/labs/default";
  QSettings().remove(QStringLiteral("lab/bundled_opened"));
  RunList runs;
  EngineHost engine;
  LabView view(&runs, &engine);
  view.resize(1024, 600);
  view.show();
  // The first start's read has begun; its answer cannot arrive before the next events are run.
  ASSERT_TRUE(test::wait_for([&] { return view.isReading(); }, 10000));
  QListWidgetItem* first = view.taskList()->item(0);
  const QString spec = first->data(Qt::UserRole).toString();
  ASSERT_EQ(first->checkState(), Qt::Checked);
  first->setCheckState(Qt::Unchecked);  // as a click on its box does
  ASSERT_TRUE(test::wait_for([&] { return !view.isReading(); }, 60000));
  EXPECT_TRUE(view.showsLab()) << "the bundled lab is shown";
  int found = 0;
  for (int i = 0; i < view.taskList()->count(); ++i) {
    const QListWidgetItem* it = view.taskList()->item(i);
    if (it->data(Qt::UserRole).toString() != spec) continue;
    ++found;
    EXPECT_EQ(it->checkState(), Qt::Unchecked) << spec.toStdString() << ": ticked again by the bundled lab's grid";
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ(view.formGrid().tasks.size(), hsm::default_lab_grid().tasks.size() - 1);
  QSettings().remove(QStringLiteral("lab/bundled_opened"));
}
