#include "gui/views/training_view.h"

#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSlider>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/run_list.h"
#include "gui/views/training_form.h"
#include "gui/views/training_run_controller.h"
#include "gui/views/training_series.h"
#include "gui/widgets/layout_helpers.h"
#include "gui/widgets/plot_panel.h"

namespace studio {

TrainingView::TrainingView(RunList* runs, EngineHost* engine, QWidget* parent) : StudioView(runs, engine, parent) {
  build();
  connectSignals();
  rebuildPlots();
  showCurrentRunInForm();
}

void TrainingView::showCurrentRunInForm() {
  // A run that trains has no settings to read until its first checkpoint (the form holds them
  // already when it was started here); a task run's form is the Lab's.
  const RunEntry* run = runs_->currentRun();
  if (run && run->has_info && run->task.empty()) form_->showRun(run->info, run->name());
}

void TrainingView::build() {
  form_ = new TrainingForm;
  controller_ = new TrainingRunController(form_, runs_, engine_, this);
  QWidget* left = buildFormPane();
  QWidget* right = buildPlots();
  auto* layout = new QHBoxLayout(this);
  layout->addWidget(left);
  layout->addWidget(right, 1);
}

QWidget* TrainingView::buildFormPane() {
  QScrollArea* scroll = scrollWhenShort(form_, Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(form_->sizeHint().width() + 24);
  scroll->setMaximumWidth(520);
  // The actions stay in view below the scrolling form.
  auto* left = new QWidget;
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(scroll, 1);
  leftLayout->addWidget(controller_->actions());
  left->setMaximumWidth(520);
  return left;
}

QHBoxLayout* TrainingView::buildPlotControls() {
  smoothing_ = new QSlider(Qt::Horizontal);
  smoothing_->setObjectName(QStringLiteral("smoothing"));
  smoothing_->setRange(0, 99);
  smoothing_->setValue(60);
  smoothing_->setMaximumWidth(160);
  smoothing_->setToolTip(tr("Exponential moving average of the train loss; the raw curve stays faint behind it"));
  smoothingLabel_ = new QLabel;
  xAxis_ = new QComboBox;
  xAxis_->setObjectName(QStringLiteral("x_axis"));
  xAxis_->addItems({tr("Step"), tr("Wall time (s)")});
  overlay_ = new QCheckBox(tr("Overlay other open runs"));
  overlay_->setObjectName(QStringLiteral("overlay"));
  overlay_->setChecked(true);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Smoothing")));
  controls->addWidget(smoothing_);
  controls->addWidget(smoothingLabel_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("x axis")));
  controls->addWidget(xAxis_);
  controls->addSpacing(12);
  controls->addWidget(overlay_);
  controls->addStretch(1);
  return controls;
}

QWidget* TrainingView::buildPlots() {
  // "loss (nats)": the cross-entropy of the next token, in words short enough for the short axis
  // of a 1024x540 window, where the legend holds each run's last validation loss (issue 69).
  lossPlot_ = new PlotPanel(tr("Loss"), tr("step"), tr("loss (nats)"));
  accuracyPlot_ = new PlotPanel(tr("Validation accuracy"), tr("step"), tr("top-1 next-token accuracy"));
  speedPlot_ = new PlotPanel(tr("Throughput"), tr("step"), tr("tokens/s"));
  lrPlot_ = new PlotPanel(tr("Learning rate"), tr("step"), tr("learning rate"));
  scatterPlot_ = new PlotPanel(tr("Accuracy vs loss"), tr("validation loss"), tr("validation accuracy"));
  // The legends under the axes, where they cover no curve (issue 48); the loss's a run an entry
  // and the key of its solid (train) and dashed (validation) lines, as many a row as fit.
  lossPlot_->setLegendBelow(6, 2);
  // The second row's plots may be shorter than the loss's: the view fits a 1024x600 screen
  // under a window manager (about 540 px for the window, issue 48).
  for (PlotPanel* p : {speedPlot_, lrPlot_}) p->plot()->setMinimumHeight(90);
  auto* grid = new QWidget;
  auto* gridLayout = new QGridLayout(grid);
  gridLayout->setContentsMargins(0, 0, 0, 0);
  gridLayout->addWidget(lossPlot_, 0, 0);
  gridLayout->addWidget(accuracyPlot_, 0, 1);
  gridLayout->addWidget(speedPlot_, 1, 0);
  gridLayout->addWidget(lrPlot_, 1, 1);
  gridLayout->setRowStretch(0, 3);
  gridLayout->setRowStretch(1, 2);
  auto* plotTabs = new QTabWidget;
  plotTabs->addTab(grid, tr("Curves"));
  plotTabs->addTab(scatterPlot_, tr("Accuracy vs loss (all runs)"));

  runSummary_ = new QLabel;
  runSummary_->setObjectName(QStringLiteral("training_run_summary"));
  runSummary_->setWordWrap(true);
  runSummary_->setTextFormat(Qt::PlainText);
  auto* right = new QWidget;
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(6, 0, 0, 0);
  rightLayout->addWidget(runSummary_);
  rightLayout->addLayout(buildPlotControls());
  rightLayout->addWidget(plotTabs, 1);
  rightLayout->addWidget(controller_->status());
  return right;
}

void TrainingView::connectSignals() {
  connect(controller_, &TrainingRunController::trainingFailed, this, &TrainingView::trainingFailed);
  auto schedule = [this] {
    if (replotPending_) return;
    replotPending_ = true;
    QTimer::singleShot(0, this, [this] {
      replotPending_ = false;
      rebuildPlots();
    });
  };
  connect(smoothing_, &QSlider::valueChanged, this, schedule);
  connect(xAxis_, &QComboBox::currentIndexChanged, this, schedule);
  connect(overlay_, &QCheckBox::toggled, this, schedule);
  connect(runs_, &RunList::metricsAppended, this, schedule);
  connect(runs_, &RunList::metricsReset, this, schedule);
  connect(runs_, &RunList::currentChanged, this, schedule);
  // The form as the current run was trained: a new run starts from its settings (issue 69).
  connect(runs_, &RunList::currentChanged, this, &TrainingView::showCurrentRunInForm);
  connect(runs_, &RunList::runAdded, this, schedule);
  connect(runs_, &RunList::runRemoved, this, schedule);
}

void TrainingView::setCorpus(const QString& path) { form_->setCorpus(path); }
bool TrainingView::setModel(const QString& presetOrConfig) { return form_->setModel(presetOrConfig); }
void TrainingView::setField(const QString& name, const QString& value) { form_->setField(name, value); }
QLineEdit* TrainingView::field(const QString& name) const { return form_->field(name); }
FieldError* TrainingView::fieldError(const QString& name) const { return form_->fieldError(name); }

bool TrainingView::buildSpec(hsm::RunSpec& spec) { return controller_->buildSpec(spec); }
bool TrainingView::start() { return controller_->start(); }
bool TrainingView::continueCurrentRun() { return controller_->continueCurrentRun(); }
QPushButton* TrainingView::startButton() const { return controller_->startButton(); }
QPushButton* TrainingView::pauseButton() const { return controller_->pauseButton(); }
QPushButton* TrainingView::stopButton() const { return controller_->stopButton(); }
QString TrainingView::lastError() const { return controller_->lastError(); }

QList<PlotPanel*> TrainingView::plots() const { return {lossPlot_, accuracyPlot_, speedPlot_, lrPlot_, scatterPlot_}; }

void TrainingView::rebuildPlots() {
  QElapsedTimer timer;
  timer.start();
  const double weight = smoothing_->value() / 100.0;
  smoothingLabel_->setText(QString::number(weight, 'f', 2));
  const bool wall = xAxis_->currentIndex() == 1;
  const QString xLabel = wall ? tr("wall time (s)") : tr("step");
  for (PlotPanel* p : {lossPlot_, accuracyPlot_, speedPlot_, lrPlot_}) p->setXLabel(xLabel);

  QVector<const RunEntry*> open;
  for (int i = 0; i < runs_->count(); ++i) open << &runs_->at(i);
  const TrainingCurves curves =
      training_curves(open, runs_->current(), CurveOptions{weight, wall, overlay_->isChecked()});
  lossPlot_->setSeries(curves.loss);
  accuracyPlot_->setSeries(curves.accuracy);
  speedPlot_->setSeries(curves.speed);
  lrPlot_->setSeries(curves.lr);
  scatterPlot_->setSeries(curves.scatter);
  const RunEntry* current = runs_->currentRun();
  const QString summary = current ? runSummary(*current) : QString();
  runSummary_->setText(summary);
  runSummary_->setVisible(!summary.isEmpty());
  if (qEnvironmentVariableIsSet("HSM_STUDIO_TRACE")) qInfo("rebuildPlots: %lld ms", timer.elapsed());
}

QString TrainingView::runSummary(const RunEntry& run) {
  if (!run.has_info) return {};
  const hsm::TrainSettings& t = run.info.training;
  const qint64 steps = run.info.total_steps > 0 ? run.info.total_steps : t.steps;
  QString text = steps > 0 ? tr("%1: %2 steps of %3 windows").arg(run.name()).arg(steps).arg(t.batch_size)
                           : tr("%1: %2 epochs in batches of %3 windows").arg(run.name()).arg(t.epochs).arg(t.batch_size);
  text += tr(", learning rate %1, seed %2").arg(t.lr).arg(t.seed);
  // The step its metrics have reached, as the status bar and the progress bar say (issue 69's
  // walk: "at step 100 now", its last checkpoint's, while the bar said 170 / 600).
  const qint64 reached = std::max<qint64>(run.info.step, run.metrics.empty() ? 0 : run.metrics.back().step);
  if (reached > 0 && steps > 0 && reached < steps) text += tr(" (at step %1 now)").arg(reached);
  for (auto it = run.metrics.crbegin(); it != run.metrics.crend(); ++it)
    if (it->kind == "eval" && std::isfinite(it->val_loss)) {
      text += tr("; last validation at step %1: loss %2 nats").arg(it->step).arg(it->val_loss, 0, 'f', 3);
      if (std::isfinite(it->val_accuracy)) text += tr(", next-token accuracy %1").arg(it->val_accuracy, 0, 'f', 3);
      break;
    }
  return text + QLatin1Char('.');
}

QString TrainingView::runSummaryText() const { return runSummary_->text(); }

}  // namespace studio
