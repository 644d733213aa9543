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
  s_ = Session{};
  StallMonitor stalls;
  stalls_ = &stalls;
  auto* app = dynamic_cast<StudioApplication*>(QCoreApplication::instance());
  if (app) app->setEventObserver(&stalls);
  QTemporaryDir tmp(QDir::temp().filePath(QStringLiteral("hsm-smoke-XXXXXX")));
  s_.out = options_.out.isEmpty() ? tmp.path() : QDir(options_.out).absolutePath();
  QDir().mkpath(s_.out);
  EngineHost* engine = window_->engine();
  QObject::connect(engine, &EngineHost::trainingFinished, window_,
                   [this](const hsm::TrainSummary& s) { stepsTrained_ += s.steps; });
  QObject::connect(engine, &EngineHost::trainingFailed, window_,
                   [this](const QString&, const QString& message) { s_.trainError = message; });
  try {
    runPhases();
  } catch (const std::exception& e) {
    s_.error = QString::fromStdString(hsm::error_text(e));
  }
  if (!s_.error.isEmpty()) s_.failed << s_.error;  // the phase the session stopped at, last
  s_.error = s_.failed.join(QStringLiteral("; "));
  if (!s_.error.isEmpty() && engine->isTraining()) {
    engine->stopTraining();
    engine->waitIdle(120000);
  }
  stalls.stop();
  if (app) app->setEventObserver(nullptr);
  QJsonObject report = this->report(clock.elapsed() / 1000.0);
  stalls_ = nullptr;
  if (options_.out.isEmpty()) tmp.setAutoRemove(true);
  return report;
}

// The session's phases, in order; the first that cannot go on ends it (its reason in s_.error).
bool SmokeDriver::runPhases() {
  return openWindow() && firstModel() && generateWhileTraining() && showTraining() && showArchitectureAndWeights() &&
         diagnose() && probe() && trace() && lab() && experiments() && exportPlots();
}

bool SmokeDriver::openWindow() {
  if (!options_.screenshots.isEmpty()) window_->resize(1500, 950);
  window_->show();
  QCoreApplication::processEvents();
  screenshot(QStringLiteral("start-page"));
  stalls_->start();
  stalls_->setPhase(QStringLiteral("train_a"));
  if (options_.data.isEmpty() || !QFileInfo::exists(options_.data)) {
    s_.error = QStringLiteral("--data: corpus '%1' does not exist").arg(options_.data);
    return false;
  }
  return true;
}

// 1. A model to generate from: the given run folder, or one trained here first.
bool SmokeDriver::firstModel() {
  s_.model = options_.target;
  if (QFileInfo(options_.target).isDir() && !hsm::is_run_folder(options_.target.toStdString())) {
    s_.error = QStringLiteral("'%1' is a folder but not a run folder (no run's config.json in it): --smoke takes a run "
                              "folder, a preset name or a model config file (a lab's folder opens in the Lab view)")
                   .arg(options_.target);
    return false;
  }
  if (hsm::is_run_folder(options_.target.toStdString())) {
    s_.source = options_.target;
    const QString config = QDir(s_.out).filePath(QStringLiteral("model.json"));
    hsm::save_config(hsm::read_run_info(s_.source.toStdString()).model, config.toStdString());
    s_.model = config;
  } else {
    s_.source = QDir(s_.out).filePath(QStringLiteral("run-a"));
    if (!train(s_.source, s_.model, QString(), s_.error)) return false;
    if (!waitFor([&] { return !window_->engine()->isTraining(); }, s_.error)) return false;
    if (!noTrainingFailure()) return false;
    s_.runs.append(s_.source);
  }
  const QString openError = window_->openRun(s_.source, true);
  if (!openError.isEmpty()) {
    s_.error = openError;
    return false;
  }
  return true;
}

// False, saying so, when the last training failed.
bool SmokeDriver::noTrainingFailure() {
  if (s_.trainError.isEmpty()) return true;
  s_.error = QStringLiteral("training failed: %1").arg(s_.trainError);
  return false;
}

// 2. Another model trains while the first one generates in the Playground.
bool SmokeDriver::generateWhileTraining() {
  stalls_->setPhase(QStringLiteral("train_b_and_generate"));
  s_.second = QDir(s_.out).filePath(QStringLiteral("run-b"));
  // (with the first model's tokenizer, as a user comparing two models on one corpus would)
  const QString tokenizer = QString::fromStdString(hsm::RunFolder(s_.source.toStdString()).tokenizer);
  if (!train(s_.second, s_.model, tokenizer, s_.error)) return false;
  s_.runs.append(s_.second);
  window_->runs()->setCurrent(window_->runs()->indexOf(s_.source));
  window_->showView(MainWindow::kPlayground);
  PlaygroundView* play = window_->playgroundView();
  play->setCompare(false);
  play->setPrompt(options_.prompt);
  play->setSeed(options_.seed);
  if (auto* maxTokens = play->findChild<QWidget*>(QStringLiteral("max_tokens")))
    maxTokens->setProperty("value", options_.max_tokens);
  if (!play->generate()) {
    s_.error = QStringLiteral("generation did not start: %1").arg(play->lastError());
    return false;
  }
  if (!waitFor([&] { return !play->isGenerating(); }, s_.error)) return false;
  if (!play->lastError().isEmpty()) {
    s_.error = QStringLiteral("generation failed: %1").arg(play->lastError());
    return false;
  }
  screenshot(QStringLiteral("playground"));
  s_.generated = play->output(0)->tokenCount();
  s_.text = play->output(0)->generatedText();
  if (!waitFor([&] { return !window_->engine()->isTraining(); }, s_.error)) return false;
  return noTrainingFailure();
}

// 3. The curves of both runs (exported at the end, as a user would from File › Export plots).
bool SmokeDriver::showTraining() {
  window_->runs()->poll();
  if (!waitFor([&] { return !window_->runs()->loading(); }, s_.error)) return false;
  stalls_->setPhase(QStringLiteral("training_view"));
  window_->showView(MainWindow::kTraining);
  settle();
  screenshot(QStringLiteral("training"));
  return true;
}

// 4. The analysis views on the first model: its architecture, learned weights and a diagnosis of
//    the prompt. (Before the export at the end: the export writes files on the GUI thread, a
//    blocking user action the stall monitor does not count.)
bool SmokeDriver::showArchitectureAndWeights() {
  window_->runs()->setCurrent(window_->runs()->indexOf(s_.source));
  stalls_->setPhase(QStringLiteral("architecture"));
  window_->architectureView()->setConfig(window_->runs()->currentRun()->model);
  window_->showView(MainWindow::kArchitecture);
  settle();  // its first paint counts in its own phase
  screenshot(QStringLiteral("architecture"));
  stalls_->setPhase(QStringLiteral("weights"));
  WeightsView* weights = window_->weightsView();
  window_->showView(MainWindow::kWeights);
  weights->refresh();
  if (!waitFor([&] { return !weights->isWaiting(); }, s_.error)) return false;
  s_.weightLayers = static_cast<int>(weights->weights().size());
  if (s_.weightLayers == 0) s_.failed << QStringLiteral("weights: the Weights view shows no layer");
  screenshot(QStringLiteral("weights"));
  return true;
}

bool SmokeDriver::diagnose() {
  stalls_->setPhase(QStringLiteral("diagnostics"));
  DiagnosticsView* diag = window_->diagnosticsView();
  window_->showView(MainWindow::kDiagnostics);
  diag->setPrompt(options_.prompt);
  if (!diag->run()) {
    s_.error = QStringLiteral("diagnosis did not start: %1").arg(diag->lastError());
    return false;
  }
  if (!waitFor([&] { return !diag->isRunning(); }, s_.error)) return false;
  if (!diag->lastError().isEmpty()) {
    s_.error = QStringLiteral("diagnosis failed: %1").arg(diag->lastError());
    return false;
  }
  s_.diagnosedLayers = static_cast<int>(diag->diagnosis(0).layers.size());
  if (s_.diagnosedLayers == 0) s_.failed << QStringLiteral("diagnostics: the diagnosis has no layer");
  screenshot(QStringLiteral("diagnostics"));
  return true;
}

// Probe: the lens and rollout of the prompt, and an ablation on a few windows of the corpus.
bool SmokeDriver::probe() {
  stalls_->setPhase(QStringLiteral("probe"));
  ProbeView* probe = window_->probeView();
  window_->showView(MainWindow::kProbe);
  probe->setPrompt(options_.prompt);
  probe->setDataPath(options_.data);
  probe->setMaxWindows(4);
  const bool ablate = QFileInfo::exists(options_.data);
  if (!probe->runProbe() || (ablate && !probe->runAblation())) {
    s_.error = QStringLiteral("probe did not start: %1").arg(probe->lastError());
    return false;
  }
  if (!waitFor([&] { return !probe->isProbing() && !probe->isAblating(); }, s_.error)) return false;
  if (!probe->hasProbe() || (ablate && !probe->hasAblation())) {
    // The view shows only the current run's results: say which run that is, should it not
    // be the one probed.
    const RunEntry* current = window_->runs()->currentRun();
    s_.error = QStringLiteral("probe failed: %1 (probe %2, ablation %3, current run %4, probed %5)")
                   .arg(probe->lastError())
                   .arg(probe->hasProbe() ? QStringLiteral("shown") : QStringLiteral("missing"))
                   .arg(probe->hasAblation() ? QStringLiteral("shown") : QStringLiteral("missing"))
                   .arg(current ? current->dir : QStringLiteral("none"), s_.source);
    return false;
  }
  screenshot(QStringLiteral("probe"));
  return true;
}

// Trace (issue 51): a clean and a corrupted prompt that fit the first model (its tokenizer
// and context), the second one beside it; seconds of patching on the analysis executor while
// the GUI stays free. A trace that does not run, or shows nothing, fails the phase (issue 65:
// it was reported as trace_error alone, and the session passed).
bool SmokeDriver::trace() {
  stalls_->setPhase(QStringLiteral("trace"));
  TraceView* trace = window_->traceView();
  window_->showView(MainWindow::kTrace);
  trace->setCompareRun(s_.second);
  const RunEntry* traced = window_->runs()->currentRun();
  QString clean, corrupt, why;
  if (traced && traced->task.empty()) {
    if (fitting_trace_prompts(s_.source, clean, corrupt, why)) {
      trace->setPrompts(clean, corrupt);
      trace->setAnswer(-1);  // the token after the name: the clean run's most likely one
    } else {
      s_.traceError = why;
    }
  }
  if (s_.traceError.isEmpty()) {
    if (!trace->runTrace()) {
      s_.traceError = trace->lastError();
    } else {
      if (!waitFor([&] { return !trace->isTracing(); }, s_.error)) return false;
      s_.tracedLayers = trace->hasTrace(0) ? static_cast<int>(trace->trace(0).layers) : 0;
      s_.traceError = trace->lastError();
      if (s_.traceError.isEmpty() && s_.tracedLayers == 0) s_.traceError = QStringLiteral("no trace shown");
    }
  }
  if (!s_.traceError.isEmpty()) s_.failed << QStringLiteral("trace: %1").arg(s_.traceError);
  settle();
  screenshot(QStringLiteral("trace"));
  return true;
}

// A tiny lab (one task, one model, a few steps) through the Lab view: its worker process
// trains while the GUI thread stays free, and the grid shows the cell's accuracy.
bool SmokeDriver::lab() {
  stalls_->setPhase(QStringLiteral("lab"));
  window_->showView(MainWindow::kLab);
  LabView* lab = window_->labView();
  hsm::LabGrid grid = hsm::default_lab_grid();
  grid.tasks = {"mqar:vocab=32,pairs=2,context=16"};
  grid.models = {"hsm_ab"};
  grid.steps = 20;
  grid.batch = 8;
  lab->fillForm(grid);
  lab->setFolder(QDir(s_.out).filePath(QStringLiteral("lab")));
  if (!lab->runLab()) {
    s_.error = QStringLiteral("the lab did not start: %1").arg(lab->status());
    return false;
  }
  if (!waitFor([&] { return !lab->isRunning(); }, s_.error)) return false;
  if (lab->cells().size() != 1 || !std::isfinite(lab->cells()[0].answer_accuracy)) {
    s_.error = QStringLiteral("the lab scored nothing: %1").arg(lab->status());
    return false;
  }
  s_.labAccuracy = lab->cells()[0].answer_accuracy;
  screenshot(QStringLiteral("lab"));
  return true;
}

// The Experiments view takes the open runs (the two trained above, the bundled ones) as one
// experiment: its table is read off the GUI thread and drawn with both plots.
bool SmokeDriver::experiments() {
  stalls_->setPhase(QStringLiteral("experiments"));
  window_->showView(MainWindow::kExperiments);
  ExperimentsView* experiments = window_->experimentsView();
  if (!experiments->useOpenRuns()) {
    s_.error =
        QStringLiteral("the Experiments view did not take the open runs: %1").arg(experiments->statusLabel()->text());
    return false;
  }
  if (!waitFor([&] { return !experiments->isReading(); }, s_.error)) return false;
  s_.experimentRows = static_cast<int>(experiments->rows().size());
  settle();
  screenshot(QStringLiteral("experiments"));
  return true;
}

// The Training view's curves, exported as from File › Export plots.
bool SmokeDriver::exportPlots() {
  QString exportError;
  for (const QString& f : window_->exportPlots(QDir(s_.out).filePath(QStringLiteral("exports")), &exportError))
    s_.exports.append(f);
  if (!exportError.isEmpty()) {
    s_.error = exportError;
    return false;
  }
  return true;
}

QJsonObject SmokeDriver::report(double seconds) const {
  QJsonObject report;
  report.insert(QStringLiteral("steps"), stepsTrained_);
  report.insert(QStringLiteral("generated_tokens"), s_.generated);
  report.insert(QStringLiteral("text"), s_.text);
  report.insert(QStringLiteral("exports"), s_.exports);
  report.insert(QStringLiteral("runs"), s_.runs);
  report.insert(QStringLiteral("weight_layers"), s_.weightLayers);
  report.insert(QStringLiteral("diagnosed_layers"), s_.diagnosedLayers);
  report.insert(QStringLiteral("lab_answer_accuracy"), s_.labAccuracy);
  report.insert(QStringLiteral("experiment_rows"), s_.experimentRows);
  report.insert(QStringLiteral("traced_layers"), s_.tracedLayers);
  if (!s_.traceError.isEmpty()) report.insert(QStringLiteral("trace_error"), s_.traceError);
  insertStalls(report);
  report.insert(QStringLiteral("seconds"), seconds);
  report.insert(QStringLiteral("error"), s_.error.isEmpty() ? QJsonValue() : QJsonValue(s_.error));
  return report;
}

// The stall monitor's findings: the longest stall and busy stretch, by phase, the slowest events.
void SmokeDriver::insertStalls(QJsonObject& report) const {
  const StallMonitor& stalls = *stalls_;
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
}

}  // namespace studio
