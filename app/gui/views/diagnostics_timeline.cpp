#include "gui/views/diagnostics_timeline.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/widgets/glossary.h"
#include "gui/views/diagnostics_view.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/radar_chart.h"
#include "hsm/task_run.h"

namespace studio {

QStringList DiagnosticsTimeline::indicatorChoices() {
  return DiagnosticsView::indicatorNames() << QStringLiteral("lens KL");
}

double indicator_value(const hsm::Indicators& i, int index) {
  switch (index) {
    case 0:
      return i.entropy;
    case 1:
      return i.conc;
    case 2:
      return i.headdiv;
    case 3:
      return i.sink;
    default:
      return i.locfoc[static_cast<size_t>(index - 4)];
  }
}

double DiagnosticsTimeline::value(const hsm::DiagnosticsLayerRecord& layer, int indicator) {
  return indicator == 8 ? layer.lens_kl : indicator_value(layer.indicators, indicator);
}

DiagnosticsTimeline::DiagnosticsTimeline(QWidget* parent) : QWidget(parent) {
  buildControls();
  layOut();
  connectSignals();
  setRun(QString());
}

void DiagnosticsTimeline::buildControls() {
  indicatorBox_ = new QComboBox;
  indicatorBox_->setObjectName(QStringLiteral("timeline_indicator"));
  indicatorBox_->addItems(indicatorChoices());
  help::setIndicatorToolTips(indicatorBox_);
  indicatorBox_->setToolTip(
      tr("The indicator drawn against step (raw values, DA §4.4); lens KL: how far each layer's logit-lens "
         "prediction is from the final one (nats)"));
  plot_ = new PlotPanel(tr("Indicators over training (recorded probe text)"), tr("step"), tr("ENTROPY"));
  plot_->setObjectName(QStringLiteral("timeline_plot"));
  // Tall enough for its axis to hold the indicator's name ("ENTROPY" needed 37 px of a 31 px
  // axis at 1024x600 once the bundled models carried a record, issue 69); its pane scrolls.
  plot_->plot()->setMinimumHeight(160);
  marker_ = new QCPItemStraightLine(plot_->plot());
  marker_->setPen(QPen(QColor(120, 120, 120), 1, Qt::DashLine));
  marker_->setVisible(false);
  slider_ = new QSlider(Qt::Horizontal);
  slider_->setObjectName(QStringLiteral("timeline_slider"));
  slider_->setRange(0, 0);
  slider_->setPageStep(1);
  stepLabel_ = new QLabel;
  stepLabel_->setObjectName(QStringLiteral("timeline_step"));
  stepLabel_->setMinimumWidth(150);
  atStep_ = new QCheckBox(tr("Table, radar and overview at this step"));
  atStep_->setObjectName(QStringLiteral("timeline_at_step"));
  atStep_->setToolTip(
      tr("Ticked: they show the probe text's diagnosis recorded at the chosen step. Unticked: the prompt's "
         "diagnosis of the current checkpoint. The matrix heatmap always shows the prompt's diagnosis."));
  message_ = new QLabel;
  message_->setObjectName(QStringLiteral("timeline_message"));
  message_->setWordWrap(true);
  message_->setStyleSheet(QStringLiteral("color: #555;"));
}

void DiagnosticsTimeline::layOut() {
  body_ = new QWidget;
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Indicator")));
  controls->addWidget(indicatorBox_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("Step")));
  controls->addWidget(slider_, 1);
  controls->addWidget(stepLabel_);
  controls->addWidget(atStep_);
  auto* bl = new QVBoxLayout(body_);
  bl->setContentsMargins(0, 0, 0, 0);
  bl->addLayout(controls);
  bl->addWidget(plot_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(message_);
  layout->addWidget(body_, 1);
}

void DiagnosticsTimeline::connectSignals() {
  timer_ = new QTimer(this);
  timer_->setInterval(kPollMs);
  connect(timer_, &QTimer::timeout, this, &DiagnosticsTimeline::poll);
  connect(indicatorBox_, &QComboBox::currentIndexChanged, this, [this] { redraw(); });
  connect(slider_, &QSlider::valueChanged, this, [this] {
    markStep();
    updateLabels();
    if (!atStep_->isChecked())
      atStep_->setChecked(true);  // emits stepChanged through toggled
    else
      emit stepChanged();
  });
  connect(atStep_, &QCheckBox::toggled, this, [this] {
    updateLabels();
    emit stepChanged();
  });
}

DiagnosticsTimeline::~DiagnosticsTimeline() = default;

void DiagnosticsTimeline::setRun(const QString& runDir) {
  if (reader_ && runDir == runDir_) return;
  runDir_ = runDir;
  task_.clear();
  try {
    if (!runDir.isEmpty()) task_ = QString::fromStdString(hsm::run_task(runDir.toStdString()));
  } catch (const std::exception&) {
    // a damaged task.json: the run's other views say so
  }
  records_.clear();
  reader_ = runDir.isEmpty() ? nullptr : std::make_unique<hsm::DiagnosticsLogReader>(runDir.toStdString());
  {
    const QSignalBlocker block(atStep_);
    atStep_->setChecked(false);
  }
  redraw();
  if (reader_) {
    timer_->start();
    poll();
  } else {
    timer_->stop();
  }
  emit stepChanged();
}

void DiagnosticsTimeline::poll() {
  sliceQueued_ = false;
  if (!reader_) return;
  std::vector<hsm::DiagnosticsRecord> fresh = reader_->poll(kSliceBytes);
  if (reader_->reset()) records_.clear();  // a resume dropped lines: start over
  if (fresh.empty() && !reader_->reset()) {
    if (records_.empty()) updateLabels();  // the message follows the file's appearance
    return;
  }
  const bool atEnd = records_.empty() || slider_->value() == static_cast<int>(records_.size()) - 1;
  for (hsm::DiagnosticsRecord& r : fresh) records_.push_back(std::move(r));
  redraw();
  // Live: a slider on the last record follows the new ones.
  if (atEnd && !records_.empty()) {
    const QSignalBlocker block(slider_);
    slider_->setValue(static_cast<int>(records_.size()) - 1);
    markStep();
    updateLabels();
    if (atStep_->isChecked()) emit stepChanged();
  }
  if (reader_->more() && !sliceQueued_) {
    sliceQueued_ = true;
    QTimer::singleShot(0, this, &DiagnosticsTimeline::poll);
  }
}

int DiagnosticsTimeline::currentIndex() const { return records_.empty() ? -1 : slider_->value(); }

void DiagnosticsTimeline::setCurrentIndex(int index) { slider_->setValue(index); }

const hsm::DiagnosticsRecord* DiagnosticsTimeline::currentRecord() const {
  const int i = currentIndex();
  return i >= 0 && i < static_cast<int>(records_.size()) ? &records_[static_cast<size_t>(i)] : nullptr;
}

bool DiagnosticsTimeline::showsStep() const { return atStep_->isChecked() && currentRecord(); }
void DiagnosticsTimeline::setShowsStep(bool on) { atStep_->setChecked(on); }

void DiagnosticsTimeline::setIndicator(int index) { indicatorBox_->setCurrentIndex(index); }
int DiagnosticsTimeline::indicator() const { return indicatorBox_->currentIndex(); }

QString DiagnosticsTimeline::message() const { return message_->text(); }

void DiagnosticsTimeline::redraw() {
  const int ind = indicator();
  // One line per layer (layers as the first record has them; a later record of the same run
  // has the same layers).
  QVector<PlotSeries> series;
  const int n = records_.empty() ? 0 : static_cast<int>(records_.front().layers.size());
  for (int l = 0; l < n; ++l) {
    const hsm::DiagnosticsLayerRecord& first = records_.front().layers[static_cast<size_t>(l)];
    PlotSeries s{tr("L%1 %2").arg(first.layer).arg(QString::fromStdString(first.mixer)), RadarChart::layerColor(l, n),
                 {}, {}};
    for (const hsm::DiagnosticsRecord& r : records_) {
      if (l >= static_cast<int>(r.layers.size())) continue;
      s.x << double(r.step);
      s.y << value(r.layers[static_cast<size_t>(l)], ind);
    }
    series << s;
  }
  plot_->setYLabel(indicatorBox_->currentText());
  plot_->setSeries(series);
  {
    const QSignalBlocker block(slider_);
    const int keep = slider_->value();
    slider_->setRange(0, std::max(0, static_cast<int>(records_.size()) - 1));
    slider_->setValue(std::min(keep, slider_->maximum()));
  }
  slider_->setEnabled(records_.size() > 1);
  markStep();
  updateLabels();
}

void DiagnosticsTimeline::markStep() {
  const hsm::DiagnosticsRecord* r = currentRecord();
  marker_->setVisible(r != nullptr);
  if (r) {
    marker_->point1->setCoords(double(r->step), 0);
    marker_->point2->setCoords(double(r->step), 1);
  }
  plot_->plot()->replot(QCustomPlot::rpQueuedReplot);
}

void DiagnosticsTimeline::updateLabels() {
  const hsm::DiagnosticsRecord* r = currentRecord();
  body_->setVisible(!records_.empty());
  // Without records only the message shows: its pane is as tall as three lines of it, not as the
  // plot would be, so the matrices below get the room (a splitter keeps to a maximum height).
  setMaximumHeight(records_.empty() ? message_->fontMetrics().lineSpacing() * 3 + 8 : QWIDGETSIZE_MAX);
  if (hadRecords_ != !records_.empty()) {
    hadRecords_ = !records_.empty();
    emit hasRecordsChanged(hadRecords_);
  }
  if (runDir_.isEmpty())
    message_->setText(tr("Open a run to see its diagnostics over time."));
  else if (records_.empty())
    message_->setText(reader_ && reader_->exists() ? tr("Reading this run's diagnostics over time…")
                      // The trainer records them on its probe text, and a task run reads no text.
                      : !task_.isEmpty() ? tr("A task run (%1) records no diagnostics over time: they are taken on "
                                              "a probe text. Below: a test example of its task.")
                                               .arg(task_)
                                         : tr("This run has no diagnostics over time: it was trained before they "
                                              "were recorded, or with an empty probe text. Train or resume it to "
                                              "record them."));
  else {
    // Issue 69: a bundled model has one record ("Recorded at 1 validations" read wrong).
    const QString prompt = QString::fromStdString(records_.back().prompt).left(80);
    QString text = records_.size() == 1
                       ? tr("Recorded once, at step %1; probe text: “%2”").arg(records_.front().step).arg(prompt)
                       : tr("Recorded at %1 validations, steps %2 to %3; probe text: “%4”")
                             .arg(records_.size())
                             .arg(records_.front().step)
                             .arg(records_.back().step)
                             .arg(prompt);
    if (reader_ && !reader_->problems().empty())
      text += tr(" · %1 damaged lines skipped (%2)")
                  .arg(reader_->problems().size())
                  .arg(QString::fromStdString(reader_->problems().back()));
    message_->setText(text);
  }
  stepLabel_->setText(r ? tr("step %1 (%2 of %3)").arg(r->step).arg(currentIndex() + 1).arg(records_.size())
                        : QString());
}

}  // namespace studio
