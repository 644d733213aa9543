#include "gui/views/training_run_controller.h"

#include <QDateTime>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/views/training_form.h"
#include "gui/widgets/field_error.h"

namespace studio {

namespace {

QString format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("–");
  const qint64 t = static_cast<qint64>(s + 0.5);
  if (t >= 3600) return QStringLiteral("%1h %2m").arg(t / 3600).arg((t % 3600) / 60, 2, 10, QLatin1Char('0'));
  if (t >= 60) return QStringLiteral("%1m %2s").arg(t / 60).arg(t % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1s").arg(t);
}

}  // namespace

TrainingRunController::TrainingRunController(TrainingForm* form, RunList* runs, EngineHost* engine, QObject* parent)
    : QObject(parent), form_(form), runs_(runs), engine_(engine) {
  buildActions();
  buildStatus();
  connect(runs_, &RunList::currentChanged, this, &TrainingRunController::updateButtons);
  connect(engine_, &EngineHost::trainingStateChanged, this, &TrainingRunController::updateButtons);
  connect(engine_, &EngineHost::trainingProgress, this, &TrainingRunController::onProgress);
  connect(engine_, &EngineHost::trainingMetric, this, &TrainingRunController::onMetric);
  connect(engine_, &EngineHost::trainingLog, this, &TrainingRunController::appendLog);
  connect(engine_, &EngineHost::trainingFinished, this, &TrainingRunController::onFinished);
  connect(engine_, &EngineHost::trainingFailed, this, &TrainingRunController::onFailed);
  connect(engine_, &EngineHost::trainingPaused, this, [this](bool p) {
    stageLabel_->setText(p ? tr("Paused. Resume continues from the same step.") : tr("Training…"));
  });
  updateButtons();
}

void TrainingRunController::buildActions() {
  startButton_ = new QPushButton(tr("Start training"));
  startButton_->setObjectName(QStringLiteral("start"));
  startButton_->setDefault(true);
  pauseButton_ = new QPushButton(tr("Pause"));
  pauseButton_->setObjectName(QStringLiteral("pause"));
  stopButton_ = new QPushButton(tr("Stop"));
  stopButton_->setObjectName(QStringLiteral("stop"));
  stopButton_->setToolTip(tr("Finish the current step, write a checkpoint and stop"));
  continueButton_ = new QPushButton(tr("Continue current run"));
  continueButton_->setObjectName(QStringLiteral("continue_run"));
  continueButton_->setToolTip(tr("Resume the current run from its last checkpoint (set Steps to extend a finished run)"));
  auto* buttons = new QGridLayout;
  buttons->addWidget(startButton_, 0, 0, 1, 2);
  buttons->addWidget(pauseButton_, 1, 0);
  buttons->addWidget(stopButton_, 1, 1);
  buttons->addWidget(continueButton_, 2, 0, 1, 2);
  actions_ = new QWidget;
  actions_->setLayout(buttons);

  connect(startButton_, &QPushButton::clicked, this, [this] { start(); });
  connect(pauseButton_, &QPushButton::clicked, this, [this] {
    if (engine_->isPaused()) engine_->resumeTraining();
    else engine_->pauseTraining();
  });
  connect(stopButton_, &QPushButton::clicked, this, [this] {
    engine_->stopTraining();
    stageLabel_->setText(tr("Stopping after this step; writing a checkpoint…"));
  });
  connect(continueButton_, &QPushButton::clicked, this, [this] { continueCurrentRun(); });
}

void TrainingRunController::buildStatus() {
  stageLabel_ = new QLabel(tr("Idle. Choose a corpus and a model, then Start."));
  stageLabel_->setObjectName(QStringLiteral("stage"));
  dataProgress_ = new QProgressBar;
  dataProgress_->setObjectName(QStringLiteral("data_progress"));
  dataProgress_->setMaximumWidth(220);
  dataProgress_->setVisible(false);
  trainProgress_ = new QProgressBar;
  trainProgress_->setObjectName(QStringLiteral("train_progress"));
  trainProgress_->setRange(0, 1000);
  trainProgress_->setValue(0);
  trainProgress_->setFormat(tr("no training"));
  trainProgress_->setTextVisible(true);
  buildLog();
  // The log's toggle on the stage's row: a row less under the plots (issue 48, 1024x540).
  auto* progressRow = new QHBoxLayout;
  progressRow->addWidget(stageLabel_, 1);
  progressRow->addWidget(dataProgress_);
  progressRow->addWidget(logToggle_);
  status_ = new QWidget;
  auto* layout = new QVBoxLayout(status_);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(progressRow);
  layout->addWidget(trainProgress_);
  layout->addWidget(log_);
}

void TrainingRunController::buildLog() {
  logToggle_ = new QToolButton;
  logToggle_->setText(tr("Engine log"));
  logToggle_->setCheckable(true);
  logToggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  logToggle_->setArrowType(Qt::RightArrow);
  logToggle_->setAutoRaise(true);
  log_ = new QPlainTextEdit;
  log_->setObjectName(QStringLiteral("log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setMaximumHeight(140);
  log_->setVisible(false);
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  log_->setFont(mono);
  connect(logToggle_, &QToolButton::toggled, this, [this](bool on) {
    log_->setVisible(on);
    logToggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
  });
}

bool TrainingRunController::buildSpec(hsm::RunSpec& spec) {
  lastError_.clear();
  return form_->buildSpec(spec, &lastError_);
}

bool TrainingRunController::start() {
  if (engine_->isTraining()) {
    lastError_ = tr("a run is already training");
    return false;
  }
  hsm::RunSpec spec;
  if (!buildSpec(spec)) {
    stageLabel_->setText(tr("Some fields need attention (marked in red)."));
    return false;
  }
  StudioSettings::setLastCorpus(form_->corpus());
  const int row = runs_->addPending(qstr(spec.run_dir), spec.model);
  runs_->setCurrent(row);
  firstStep_ = -1;
  runClock_.start();
  log_->clear();
  appendLog(tr("Starting %1 on %2").arg(qstr(spec.model.name), qstr(spec.data_path)));
  engine_->startTraining(spec);
  form_->runStarted();  // the next run gets a fresh folder
  return true;
}

bool TrainingRunController::continueCurrentRun() {
  const RunEntry* run = runs_->currentRun();
  if (!run || engine_->isTraining()) return false;
  form_->clearErrors();
  lastError_.clear();
  if (run->atStep()) {  // a copy of a kept step's model: nothing trains from it (issue 67)
    lastError_ = tr("%1 is the model of %2 as it was, read-only: continue %2 itself").arg(run->name(), run->source);
    stageLabel_->setText(lastError_);
    return false;
  }
  hsm::RunSpec spec;
  spec.run_dir = sstr(run->dir);
  spec.resume = true;
  try {
    spec.train = hsm::stored_settings(spec.run_dir);
    spec.data_path = hsm::stored_data_path(spec.run_dir);
  } catch (const std::exception& e) {
    lastError_ = QString::fromUtf8(e.what());
    stageLabel_->setText(lastError_);
    return false;
  }
  bool good = false;
  const qint64 steps = form_->field(QStringLiteral("steps"))->text().toLongLong(&good);
  if (good && steps > 0) spec.train.steps = steps;
  if (run->has_info && run->info.total_steps > 0 && run->info.step >= run->info.total_steps &&
      spec.train.steps <= run->info.step) {
    FieldError* stepsError = form_->fieldError(QStringLiteral("steps"));
    stepsError->showError(tr("the run is finished at step %1: set Steps above it to continue").arg(run->info.step));
    lastError_ = stepsError->text();
    return false;
  }
  firstStep_ = -1;
  runClock_.start();
  appendLog(tr("Continuing %1").arg(run->dir));
  engine_->startTraining(spec);
  return true;
}

void TrainingRunController::updateButtons() {
  const bool training = engine_->isTraining();
  startButton_->setEnabled(!training);
  pauseButton_->setEnabled(training);
  pauseButton_->setText(engine_->isPaused() ? tr("Resume") : tr("Pause"));
  stopButton_->setEnabled(training);
  const RunEntry* run = runs_->currentRun();
  continueButton_->setEnabled(!training && run && run->has_info && !run->atStep());
}

void TrainingRunController::onProgress(const QString& stage, double fraction) {
  if (stage == QLatin1String("training")) {
    dataProgress_->setVisible(false);
    return;
  }
  stageLabel_->setText(stage + QStringLiteral("…"));
  dataProgress_->setVisible(true);
  if (fraction < 0) {
    dataProgress_->setRange(0, 0);  // busy indicator
  } else {
    dataProgress_->setRange(0, 100);
    dataProgress_->setValue(static_cast<int>(fraction * 100));
  }
}

void TrainingRunController::onMetric(const QString&, const hsm::MetricRecord& m) {
  if (firstStep_ < 0) {
    firstStep_ = m.step;
    runClock_.restart();
  }
  dataProgress_->setVisible(false);
  if (!engine_->isPaused()) stageLabel_->setText(tr("Training…"));
  const double done = m.total_steps > 0 ? static_cast<double>(m.step) / m.total_steps : 0;
  const double elapsed = runClock_.elapsed() / 1000.0;
  const int64_t stepsHere = m.step - firstStep_;
  const double eta = stepsHere > 0 ? elapsed / stepsHere * (m.total_steps - m.step) : NAN;
  trainProgress_->setValue(static_cast<int>(done * 1000));
  trainProgress_->setFormat(tr("step %1 / %2 · epoch %3 · ETA %4")
                                .arg(m.step)
                                .arg(m.total_steps)
                                .arg(QString::number(m.epoch, 'f', 2))
                                .arg(format_duration(eta)));
  // Make sure the curves are current even between poll ticks.
  runs_->poll();
}

void TrainingRunController::onFinished(const hsm::TrainSummary& s) {
  trainProgress_->setFormat(tr("%1 at step %2 / %3 · val loss %4 · accuracy %5")
                                .arg(s.stopped ? tr("stopped") : tr("finished"))
                                .arg(s.steps)
                                .arg(s.total_steps)
                                .arg(QString::number(s.val_loss, 'f', 3))
                                .arg(QString::number(s.val_accuracy, 'f', 3)));
  stageLabel_->setText(s.stopped ? tr("Stopped; the checkpoint in %1 is complete.").arg(qstr(s.run_dir))
                                 : tr("Finished; try the model in the Playground."));
  runs_->poll();
  updateButtons();
}

void TrainingRunController::onFailed(const QString& runDir, const QString& message) {
  lastError_ = message;
  stageLabel_->setText(tr("Training failed: %1").arg(message));
  appendLog(tr("error: %1").arg(message));
  dataProgress_->setVisible(false);
  if (!logToggle_->isChecked()) logToggle_->setChecked(true);
  // A run that never wrote a checkpoint is no run: take it off the list.
  const int row = runs_->indexOf(runDir);
  if (row >= 0 && !runs_->at(row).has_info) runs_->close(row);
  emit trainingFailed(message);
}

void TrainingRunController::appendLog(const QString& line) {
  log_->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + line);
}

}  // namespace studio
