#include "gui/smoke_driver.h"

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTimer>
#include <cmath>
#include <functional>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/stall_monitor.h"
#include "gui/studio_application.h"
#include "gui/views/architecture_view.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/experiments_view.h"
#include "gui/views/lab_view.h"
#include "gui/views/playground_view.h"
#include "gui/views/probe_view.h"
#include "gui/views/trace_view.h"
#include "gui/views/training_view.h"
#include "gui/views/weights_view.h"
#include "gui/widgets/token_text.h"
#include "hsm/errors.h"
#include "hsm/run_folder.h"
#include "hsm/tokenizer.h"

namespace studio {

SmokeDriver::SmokeDriver(MainWindow* window, SmokeOptions options) : window_(window), options_(std::move(options)) {}

namespace {

// The Trace phase's clean and corrupted prompts for a corpus run: a sentence that ends in a name,
// and the same with another name that the run's tokenizer splits into as many tokens, within the
// model's context. (The view's own pair, "... named Lily. One day," and Sue, was 31 tokens against
// 32 with a tokenizer trained on a small corpus, and the engine refuses a pair of two lengths; the
// next token after the name depends on it even in a model trained for a few steps, where the
// answer after "One day," did not.) False, saying why, when no pair fits.
bool fitting_trace_prompts(const QString& runDir, QString& clean, QString& corrupt, QString& why) {
  const hsm::RunFolder folder(runDir.toStdString());
  if (folder.tokenizer.empty() || !QFileInfo::exists(QString::fromStdString(folder.tokenizer))) {
    why = QStringLiteral("%1 has no tokenizer.model").arg(runDir);
    return false;
  }
  const hsm::Tokenizer tokenizer = hsm::Tokenizer::load(folder.tokenizer);
  const int64_t context = hsm::read_run_info(runDir.toStdString()).model.context;
  const QStringList sentences = {QStringLiteral("Once upon a time, there was a girl named %1"),
                                 QStringLiteral("There was a girl named %1"), QStringLiteral("A girl named %1")};
  const QStringList names = {QStringLiteral("Lily"), QStringLiteral("Sue"), QStringLiteral("Tom"),
                             QStringLiteral("Mia"),  QStringLiteral("Ben"), QStringLiteral("Amy"),
                             QStringLiteral("Max"),  QStringLiteral("Sam"), QStringLiteral("Tim")};
  for (const QString& sentence : sentences) {
    std::vector<size_t> lengths;
    for (const QString& name : names) lengths.push_back(tokenizer.encode(sentence.arg(name).toStdString()).size());
    for (int i = 0; i < names.size(); ++i)
      for (int j = i + 1; j < names.size(); ++j)
        if (lengths[i] == lengths[j] && static_cast<int64_t>(lengths[i]) <= context) {
          clean = sentence.arg(names[i]);
          corrupt = sentence.arg(names[j]);
          return true;
        }
  }
  why = QStringLiteral("no two of the names %1 take as many tokens of this run's tokenizer in a prompt within its "
                       "context of %2 tokens")
            .arg(names.join(QStringLiteral(", ")))
            .arg(context);
  return false;
}

}  // namespace

// Runs the event loop for up to `ms` as exec() would, sleeping while there is nothing to do.
// (processEvents with a time limit returns at once when no event is pending: a loop of those
// kept the GUI thread spinning, its own spinning then counted as busy time and taken from
// the training threads' cores.)
void SmokeDriver::runEventLoopFor(int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
}

bool SmokeDriver::waitFor(const std::function<bool()>& done, QString& error) {
  while (!done()) {
    if (QDateTime::currentMSecsSinceEpoch() > deadlineMs_) {
      error = QStringLiteral("timed out after %1 s").arg(options_.timeout_s);
      return false;
    }
    runEventLoopFor(20);
  }
  return true;
}

void SmokeDriver::screenshot(const QString& name) {
  if (options_.screenshots.isEmpty()) return;
  QDir().mkpath(options_.screenshots);
  // Let queued replots and layouts settle before grabbing.
  runEventLoopFor(100);
  window_->grab().save(QDir(options_.screenshots).filePath(name + QStringLiteral(".png")));
}

void SmokeDriver::settle(int ms) { runEventLoopFor(ms); }

// Fills the Training view's form through its widgets and presses Start; with a tokenizer, the
// form reuses it instead of training one.
bool SmokeDriver::train(const QString& runDir, const QString& model, const QString& tokenizer, QString& error) {
  TrainingView* view = window_->trainingView();
  window_->showView(MainWindow::kTraining);
  if (!view->setModel(model)) {
    const QString why = view->lastError().isEmpty()
                            ? QStringLiteral("not a preset name, a model config file or a run folder")
                            : view->lastError();
    error = QStringLiteral("model '%1': %2").arg(model, why);
    return false;
  }
  view->setCorpus(options_.data);
  view->setField(QStringLiteral("steps"), QString::number(options_.steps));
  view->setField(QStringLiteral("batch_size"), QString::number(options_.batch));
  view->setField(QStringLiteral("eval_every"), QString::number(std::max(1, options_.steps / 2)));
  view->setField(QStringLiteral("checkpoint_every"), QString::number(options_.steps));
  view->setField(QStringLiteral("threads"), QString::number(options_.threads));
  view->setField(QStringLiteral("device"), QStringLiteral("cpu"));
  view->setField(QStringLiteral("run_dir"), runDir);
  view->setField(QStringLiteral("tokenizer"), tokenizer);
  view->startButton()->click();
  if (!window_->engine()->isTraining()) {
    error = QStringLiteral("training did not start: %1").arg(view->lastError());
    return false;
  }
  return true;
}

QJsonObject SmokeDriver::run() {
  QElapsedTimer clock;
  clock.start();
  deadlineMs_ = QDateTime::currentMSecsSinceEpoch() + qint64(options_.timeout_s) * 1000;
  QJsonObject report;
  QString error;
  QJsonArray exports, runs;
  QString text;
  int generated = 0;
  int weightLayers = 0, diagnosedLayers = 0;
  double labAccuracy = -1;  // the smoke lab's one cell (-1: not reached)
  int experimentRows = 0;   // the Experiments view's rows for the open runs
  int tracedLayers = 0;     // the Trace view's layers of the first run (0: no trace shown)
  QString traceError;       // what the engine refused of the trace
  QStringList failed;       // the phases that failed and the session went on past: each in "error"
  StallMonitor stalls;
  auto* app = dynamic_cast<StudioApplication*>(QCoreApplication::instance());
  if (app) app->setEventObserver(&stalls);

  QTemporaryDir tmp(QDir::temp().filePath(QStringLiteral("hsm-smoke-XXXXXX")));
  const QString out = options_.out.isEmpty() ? tmp.path() : QDir(options_.out).absolutePath();
  QDir().mkpath(out);
  EngineHost* engine = window_->engine();
  hsm::TrainSummary last{};
  QObject::connect(engine, &EngineHost::trainingFinished, window_,
                   [&](const hsm::TrainSummary& s) { last = s, stepsTrained_ += s.steps; });
  QString trainError;
  QObject::connect(engine, &EngineHost::trainingFailed, window_,
                   [&](const QString&, const QString& message) { trainError = message; });

  auto body = [&]() -> bool {
    if (!options_.screenshots.isEmpty()) window_->resize(1500, 950);
    window_->show();
    QCoreApplication::processEvents();
    screenshot(QStringLiteral("start-page"));
    stalls.start();
    stalls.setPhase(QStringLiteral("train_a"));
    if (options_.data.isEmpty() || !QFileInfo::exists(options_.data)) {
      error = QStringLiteral("--data: corpus '%1' does not exist").arg(options_.data);
      return false;
    }
    // 1. A model to generate from: the given run folder, or one trained here first.
    QString model = options_.target, source;
    if (QFileInfo(options_.target).isDir() && !hsm::is_run_folder(options_.target.toStdString())) {
      error = QStringLiteral("'%1' is a folder but not a run folder (no run's config.json in it): --smoke takes a run "
                             "folder, a preset name or a model config file (a lab's folder opens in the Lab view)")
                  .arg(options_.target);
      return false;
    }
    if (hsm::is_run_folder(options_.target.toStdString())) {
      source = options_.target;
      const QString config = QDir(out).filePath(QStringLiteral("model.json"));
      hsm::save_config(hsm::read_run_info(source.toStdString()).model, config.toStdString());
      model = config;
    } else {
      source = QDir(out).filePath(QStringLiteral("run-a"));
      if (!train(source, model, QString(), error)) return false;
      if (!waitFor([&] { return !engine->isTraining(); }, error)) return false;
      if (!trainError.isEmpty()) {
        error = QStringLiteral("training failed: %1").arg(trainError);
        return false;
      }
      runs.append(source);
    }
    const QString openError = window_->openRun(source, true);
    if (!openError.isEmpty()) {
      error = openError;
      return false;
    }
    // 2. Another model trains while the first one generates in the Playground.
    stalls.setPhase(QStringLiteral("train_b_and_generate"));
    const QString second = QDir(out).filePath(QStringLiteral("run-b"));
    // (with the first model's tokenizer, as a user comparing two models on one corpus would)
    if (!train(second, model, QString::fromStdString(hsm::RunFolder(source.toStdString()).tokenizer), error)) return false;
    runs.append(second);
    window_->runs()->setCurrent(window_->runs()->indexOf(source));
    window_->showView(MainWindow::kPlayground);
    PlaygroundView* play = window_->playgroundView();
    play->setCompare(false);
    play->setPrompt(options_.prompt);
    play->setSeed(options_.seed);
    if (auto* maxTokens = play->findChild<QWidget*>(QStringLiteral("max_tokens")))
      maxTokens->setProperty("value", options_.max_tokens);
    if (!play->generate()) {
      error = QStringLiteral("generation did not start: %1").arg(play->lastError());
      return false;
    }
    if (!waitFor([&] { return !play->isGenerating(); }, error)) return false;
    if (!play->lastError().isEmpty()) {
      error = QStringLiteral("generation failed: %1").arg(play->lastError());
      return false;
    }
    screenshot(QStringLiteral("playground"));
    generated = play->output(0)->tokenCount();
    text = play->output(0)->generatedText();
    if (!waitFor([&] { return !engine->isTraining(); }, error)) return false;
    if (!trainError.isEmpty()) {
      error = QStringLiteral("training failed: %1").arg(trainError);
      return false;
    }
    // 3. The curves of both runs (exported at the end, as a user would from File › Export plots).
    window_->runs()->poll();
    if (!waitFor([&] { return !window_->runs()->loading(); }, error)) return false;
    stalls.setPhase(QStringLiteral("training_view"));
    window_->showView(MainWindow::kTraining);
    settle();
    screenshot(QStringLiteral("training"));
    // 4. The analysis views on the first model: its architecture, learned weights and a
    //    diagnosis of the prompt. (Before the export below: the export writes files on the
    //    GUI thread, a blocking user action the stall monitor does not count.)
    window_->runs()->setCurrent(window_->runs()->indexOf(source));
    stalls.setPhase(QStringLiteral("architecture"));
    window_->architectureView()->setConfig(window_->runs()->currentRun()->model);
    window_->showView(MainWindow::kArchitecture);
    settle();  // its first paint counts in its own phase
    screenshot(QStringLiteral("architecture"));
    stalls.setPhase(QStringLiteral("weights"));
    WeightsView* weights = window_->weightsView();
    window_->showView(MainWindow::kWeights);
    weights->refresh();
    if (!waitFor([&] { return !weights->isWaiting(); }, error)) return false;
    weightLayers = static_cast<int>(weights->weights().size());
    if (weightLayers == 0) failed << QStringLiteral("weights: the Weights view shows no layer");
    screenshot(QStringLiteral("weights"));
    stalls.setPhase(QStringLiteral("diagnostics"));
    DiagnosticsView* diag = window_->diagnosticsView();
    window_->showView(MainWindow::kDiagnostics);
    diag->setPrompt(options_.prompt);
    if (!diag->run()) {
      error = QStringLiteral("diagnosis did not start: %1").arg(diag->lastError());
      return false;
    }
    if (!waitFor([&] { return !diag->isRunning(); }, error)) return false;
    if (!diag->lastError().isEmpty()) {
      error = QStringLiteral("diagnosis failed: %1").arg(diag->lastError());
      return false;
    }
    diagnosedLayers = static_cast<int>(diag->diagnosis(0).layers.size());
    if (diagnosedLayers == 0) failed << QStringLiteral("diagnostics: the diagnosis has no layer");
    screenshot(QStringLiteral("diagnostics"));
    // Probe: the lens and rollout of the prompt, and an ablation on a few windows of the corpus.
    stalls.setPhase(QStringLiteral("probe"));
    ProbeView* probe = window_->probeView();
    window_->showView(MainWindow::kProbe);
    probe->setPrompt(options_.prompt);
    probe->setDataPath(options_.data);
    probe->setMaxWindows(4);
    const bool ablate = QFileInfo::exists(options_.data);
    if (!probe->runProbe() || (ablate && !probe->runAblation())) {
      error = QStringLiteral("probe did not start: %1").arg(probe->lastError());
      return false;
    }
    if (!waitFor([&] { return !probe->isProbing() && !probe->isAblating(); }, error)) return false;
    if (!probe->hasProbe() || (ablate && !probe->hasAblation())) {
      // The view shows only the current run's results: say which run that is, should it not
      // be the one probed.
      const RunEntry* current = window_->runs()->currentRun();
      error = QStringLiteral("probe failed: %1 (probe %2, ablation %3, current run %4, probed %5)")
                  .arg(probe->lastError())
                  .arg(probe->hasProbe() ? QStringLiteral("shown") : QStringLiteral("missing"))
                  .arg(probe->hasAblation() ? QStringLiteral("shown") : QStringLiteral("missing"))
                  .arg(current ? current->dir : QStringLiteral("none"), source);
      return false;
    }
    screenshot(QStringLiteral("probe"));
    // Trace (issue 51): a clean and a corrupted prompt that fit the first model (its tokenizer
    // and context), the second one beside it; seconds of patching on the analysis executor while
    // the GUI stays free. A trace that does not run, or shows nothing, fails the phase (issue 65:
    // it was reported as trace_error alone, and the session passed).
    stalls.setPhase(QStringLiteral("trace"));
    TraceView* trace = window_->traceView();
    window_->showView(MainWindow::kTrace);
    trace->setCompareRun(second);
    const RunEntry* traced = window_->runs()->currentRun();
    QString clean, corrupt, why;
    if (traced && traced->task.empty()) {
      if (fitting_trace_prompts(source, clean, corrupt, why)) {
        trace->setPrompts(clean, corrupt);
        trace->setAnswer(-1);  // the token after the name: the clean run's most likely one
      } else {
        traceError = why;
      }
    }
    if (traceError.isEmpty()) {
      if (!trace->runTrace()) {
        traceError = trace->lastError();
      } else {
        if (!waitFor([&] { return !trace->isTracing(); }, error)) return false;
        tracedLayers = trace->hasTrace(0) ? static_cast<int>(trace->trace(0).layers) : 0;
        traceError = trace->lastError();
        if (traceError.isEmpty() && tracedLayers == 0) traceError = QStringLiteral("no trace shown");
      }
    }
    if (!traceError.isEmpty()) failed << QStringLiteral("trace: %1").arg(traceError);
    settle();
    screenshot(QStringLiteral("trace"));
    // A tiny lab (one task, one model, a few steps) through the Lab view: its worker process
    // trains while the GUI thread stays free, and the grid shows the cell's accuracy.
    stalls.setPhase(QStringLiteral("lab"));
    window_->showView(MainWindow::kLab);
    LabView* lab = window_->labView();
    hsm::LabGrid grid = hsm::default_lab_grid();
    grid.tasks = {"mqar:vocab=32,pairs=2,context=16"};
    grid.models = {"hsm_ab"};
    grid.steps = 20;
    grid.batch = 8;
    lab->fillForm(grid);
    lab->setFolder(QDir(out).filePath(QStringLiteral("lab")));
    if (!lab->runLab()) {
      error = QStringLiteral("the lab did not start: %1").arg(lab->status());
      return false;
    }
    if (!waitFor([&] { return !lab->isRunning(); }, error)) return false;
    if (lab->cells().size() != 1 || !std::isfinite(lab->cells()[0].answer_accuracy)) {
      error = QStringLiteral("the lab scored nothing: %1").arg(lab->status());
      return false;
    }
    labAccuracy = lab->cells()[0].answer_accuracy;
    screenshot(QStringLiteral("lab"));
    // The Experiments view takes the open runs (the two trained above, the bundled ones) as one
    // experiment: its table is read off the GUI thread and drawn with both plots.
    stalls.setPhase(QStringLiteral("experiments"));
    window_->showView(MainWindow::kExperiments);
    ExperimentsView* experiments = window_->experimentsView();
    if (!experiments->useOpenRuns()) {
      error = QStringLiteral("the Experiments view did not take the open runs: %1").arg(experiments->statusLabel()->text());
      return false;
    }
    if (!waitFor([&] { return !experiments->isReading(); }, error)) return false;
    experimentRows = static_cast<int>(experiments->rows().size());
    settle();
    screenshot(QStringLiteral("experiments"));
    // The Training view's curves, exported as from File › Export plots.
    QString exportError;
    for (const QString& f : window_->exportPlots(QDir(out).filePath(QStringLiteral("exports")), &exportError))
      exports.append(f);
    if (!exportError.isEmpty()) {
      error = exportError;
      return false;
    }
    return true;
  };
  try {
    body();
  } catch (const std::exception& e) {
    error = QString::fromStdString(hsm::error_text(e));
  }
  if (!error.isEmpty()) failed << error;  // the phase the session stopped at, last
  error = failed.join(QStringLiteral("; "));
  if (!error.isEmpty() && engine->isTraining()) {
    engine->stopTraining();
    engine->waitIdle(120000);
  }
  stalls.stop();
  if (app) app->setEventObserver(nullptr);
  report.insert(QStringLiteral("steps"), stepsTrained_);
  report.insert(QStringLiteral("generated_tokens"), generated);
  report.insert(QStringLiteral("text"), text);
  report.insert(QStringLiteral("exports"), exports);
  report.insert(QStringLiteral("runs"), runs);
  report.insert(QStringLiteral("weight_layers"), weightLayers);
  report.insert(QStringLiteral("diagnosed_layers"), diagnosedLayers);
  report.insert(QStringLiteral("lab_answer_accuracy"), labAccuracy);
  report.insert(QStringLiteral("experiment_rows"), experimentRows);
  report.insert(QStringLiteral("traced_layers"), tracedLayers);
  if (!traceError.isEmpty()) report.insert(QStringLiteral("trace_error"), traceError);
  report.insert(QStringLiteral("max_stall_ms"), stalls.maxStallMs());
  report.insert(QStringLiteral("max_busy_ms"), stalls.maxBusyMs());
  auto by_phase = [](const QMap<QString, double>& values) {
    QJsonObject o;
    for (auto it = values.begin(); it != values.end(); ++it) o.insert(it.key(), it.value());
    return o;
  };
  report.insert(QStringLiteral("max_stall_ms_by_phase"), by_phase(stalls.maxStallByPhase()));
  report.insert(QStringLiteral("max_busy_ms_by_phase"), by_phase(stalls.maxBusyByPhase()));
  report.insert(QStringLiteral("busy_budget_ms"), kBusyBudgetMs);
  QJsonArray slowest;
  for (const StallMonitor::SlowEvent& e : stalls.slowestEvents())
    slowest.append(QJsonObject{{QStringLiteral("ms"), e.ms},
                               {QStringLiteral("phase"), e.phase},
                               {QStringLiteral("event"), e.event},
                               {QStringLiteral("receiver"), e.receiver},
                               {QStringLiteral("depth"), e.depth}});
  report.insert(QStringLiteral("slowest_events"), slowest);
  report.insert(QStringLiteral("mean_gap_ms"), stalls.meanGapMs());
  report.insert(QStringLiteral("heartbeats"), stalls.beats());
  report.insert(QStringLiteral("seconds"), clock.elapsed() / 1000.0);
  report.insert(QStringLiteral("error"), error.isEmpty() ? QJsonValue() : QJsonValue(error));
  if (options_.out.isEmpty()) tmp.setAutoRemove(true);
  return report;
}

}  // namespace studio
