#include "gui/views/weights_view.h"

#include <qcustomplot.h>

#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHash>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "gui/widgets/glossary.h"
#include "gui/engine/engine_host.h"
#include "gui/run_evaluation.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/views/what_if_editor.h"
#include "hsm/knock_out.h"
#include "hsm/what_if.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/notice_bar.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/receptive_field_diagram.h"
#include "gui/widgets/colour_maps.h"
#include "hsm/evaluator.h"
#include "hsm/mixer_kind.h"
#include "hsm/presets.h"

namespace studio {
namespace {

// A multihead cell's tint by b's share t of |a| + |b| (0: white, 1: blue).
QColor headTint(double t) { return colours::whiteToBlue(t, 0.45, 0.25); }

QString same_dir(const QString& dir) { return QDir(dir).absolutePath(); }

// "layer 3", "layers 0–6", "layers 1, 3–5": the layers' numbers, runs of neighbours as ranges.
QString layer_numbers(const QVector<int64_t>& layers) {
  QStringList parts;
  for (int i = 0; i < layers.size();) {
    int j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    parts << (j == i ? QString::number(layers[i])
                     : QStringLiteral("%1%2%3").arg(layers[i]).arg(j == i + 1 ? QStringLiteral(", ") : QStringLiteral("–")).arg(layers[j]));
    i = j + 1;
  }
  return (layers.size() == 1 ? QObject::tr("layer %1") : QObject::tr("layers %1")).arg(parts.join(QStringLiteral(", ")));
}

// The layers without a/b weights, one sentence per mixer (issue 69: seven attention layers gave
// the same sentence seven times).
QStringList layers_without_weights(const std::vector<hsm::MixerWeights>& layers) {
  QStringList mixers;
  QHash<QString, QVector<int64_t>> numbers;
  for (const hsm::MixerWeights& w : layers) {
    if (w.has_weights() || !w.lag_weights.empty()) continue;
    const QString mixer = QString::fromStdString(w.mixer);
    if (!numbers.contains(mixer)) mixers << mixer;
    numbers[mixer] << w.layer;
  }
  QStringList without;
  for (const QString& mixer : mixers) {
    const std::string id = mixer.toStdString();
    const bool attention = hsm::is_mixer_id(id) && hsm::mixer_info(id).family == hsm::MixerFamily::kAttention;
    without << (attention ? QObject::tr("%1 (%2): attention has no learned a/b; its mixing depends on the input "
                                        "(see Diagnostics)")
                          : QObject::tr("%1 (%2): mixes through matrices or gates, not a/b weights (see Diagnostics "
                                        "for its effective mixing matrix)"))
                   .arg(layer_numbers(numbers[mixer]), mixer);
  }
  return without;
}

}  // namespace

WeightsView::WeightsView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent), state_(new WeightsState(engine, this)) {
  build();
  connectSignals();
  drawBars();
  drawOffsets();
  drawVectors();
  fillHeadTable();
}

void WeightsView::build() {
  header_ = new QLabel(tr("No run open."));
  header_->setObjectName(QStringLiteral("weights_header"));
  notes_ = new QLabel;
  notes_->setObjectName(QStringLiteral("weights_notes"));
  notes_->setWordWrap(true);
  notes_->setStyleSheet(QStringLiteral("color: #444;"));
  buildAbPlot();
  buildLowerPlots();
  QWidget* editorBox = buildWhatIfEditor();
  buildWhatIfBanner();
  QWidget* rowsScroll = buildRows();
  auto* sides = new QSplitter(Qt::Horizontal);
  sides->addWidget(rowsScroll);
  sides->addWidget(editorBox);
  sides->setStretchFactor(0, 3);
  sides->setStretchFactor(1, 1);
  auto* headerRow = new QHBoxLayout;
  headerRow->addWidget(header_, 1);
  headerRow->addWidget(loss_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(headerRow);
  layout->addWidget(bannerBox_);
  layout->addWidget(sides, 1);
  layout->addWidget(notes_);
}

void WeightsView::buildAbPlot() {
  // Each layer's shift under its name as a bare number: "s=8s=16s=32s=64" ran together at 1024x600.
  abPlot_ = new PlotPanel(tr("Learned a and b per layer"), tr("layer, its shift s below"), tr("weight"));
  abPlot_->setObjectName(QStringLiteral("ab_plot"));
  abPlot_->setLogOptionVisible(false);
  QCustomPlot* p = abPlot_->plot();
  barsA_ = new QCPBars(p->xAxis, p->yAxis);
  barsB_ = new QCPBars(p->xAxis, p->yAxis);
  barsA_->setName(tr("a (identity)"));
  barsB_->setName(tr("b (shifted)"));
  barsA_->setBrush(colours::withAlpha(colours::category10(0), 200));
  barsA_->setPen(QPen(colours::category10(0).darker(120)));
  barsB_->setBrush(colours::withAlpha(colours::category10(1), 200));
  barsB_->setPen(QPen(colours::category10(1).darker(120)));
  auto* group = new QCPBarsGroup(p);
  barsA_->setBarsGroup(group);
  barsB_->setBarsGroup(group);
  barsA_->setWidth(0.35);
  barsB_->setWidth(0.35);
  p->legend->setVisible(true);
  // The legend in a row under the axes: inside them it covered the bars of the last layers.
  p->axisRect()->insetLayout()->take(p->legend);
  p->plotLayout()->addElement(1, 0, p->legend);
  p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  p->plotLayout()->setRowStretchFactor(1, 0.001);
  p->yAxis->grid()->setZeroLinePen(QPen(QColor(80, 80, 80)));
  setUpBarDragging();
}

void WeightsView::setUpBarDragging() {
  QCustomPlot* p = abPlot_->plot();
  p->setToolTip(tr("Drag a bar up or down to set that layer's a or b (what-if); the editor on the right shows it") +
                QStringLiteral("\n\n") + help::termToolTip(help::Term::kWeightA) + QLatin1Char('\n') +
                help::termToolTip(help::Term::kWeightB) + QLatin1Char('\n') + help::termToolTip(help::Term::kShift));
  connect(p, &QCustomPlot::mousePress, this, &WeightsView::pressBar);
  connect(p, &QCustomPlot::mouseMove, this, &WeightsView::dragBar);
  connect(p, &QCustomPlot::mouseRelease, this, [this] { releaseBar(); });
  abPlot_->setCsvWriter([this] {
    QString out = QStringLiteral("layer,mixer,shift,a,b\n");
    for (const hsm::MixerWeights& w : weights_)
      if (w.a.size() == 1)
        out += QStringLiteral("%1,%2,%3,%4,%5\n")
                   .arg(w.layer)
                   .arg(QString::fromStdString(w.mixer))
                   .arg(w.shifts.empty() ? 0 : w.shifts[0])
                   .arg(QString::number(w.a[0], 'g', 9), QString::number(w.b[0], 'g', 9));
    return out;
  });
}

void WeightsView::buildLowerPlots() {
  offsetPlot_ = new PlotPanel(tr("End-to-end offset weights"), tr("offset k"), tr("path weight"));
  offsetPlot_->setObjectName(QStringLiteral("offset_plot"));
  offsetPlot_->setToolTip(
      tr("Weight of the single path from input t−k to output t through every (a,b) layer "
         "(layer norms and FFNs ignored, HSM §3): b where the path shifts, 1 + a where it does not. The 1 is the "
         "residual path (a block adds its mixer's output to its input), which is why these weights exceed 1 "
         "while every a and b is below 1. “Log y” shows |w|."));
  connect(offsetPlot_, &PlotPanel::logYToggled, this, [this] { drawOffsets(); });

  vectorMap_ = new HeatmapPanel(tr("Vector a and b per channel"), tr("channel"), tr("layer"));
  vectorMap_->setObjectName(QStringLiteral("vector_heatmap"));
  vectorMap_->setScaleLabel(tr("weight"));

  headTable_ = new QTableWidget;
  headTable_->setObjectName(QStringLiteral("head_table"));
  headTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  headTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  headTable_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  headNote_ = new QLabel;
  headNote_->setWordWrap(true);
  headBox_ = new QWidget;
  auto* headBox = headBox_;
  auto* hl = new QVBoxLayout(headBox);
  hl->setContentsMargins(4, 2, 4, 0);
  hl->addWidget(new QLabel(tr("<b>Multihead: shift, a and b per layer and head</b>")));
  hl->addWidget(headNote_);
  hl->addWidget(headTable_, 1);
}

QWidget* WeightsView::buildWhatIfEditor() {
  // What-if: the editor on the right, the banner with the loss above the plots.
  editor_ = new WhatIfEditor;
  editor_->setObjectName(QStringLiteral("whatif_editor"));
  auto* editorScroll = new QScrollArea;
  editorScroll->setWidget(editor_);
  editorScroll->setWidgetResizable(true);
  editorScroll->setMinimumWidth(390);
  auto* editorBox = new QWidget;
  auto* el = new QVBoxLayout(editorBox);
  el->setContentsMargins(2, 0, 2, 0);
  el->addWidget(new QLabel(tr("<b>What if…</b> edit a and b, knock out a layer or a head")));
  windows_ = new QSpinBox;
  windows_->setObjectName(QStringLiteral("whatif_windows"));
  windows_->setRange(1, 100000);
  windows_->setValue(32);
  windows_->setToolTip(tr("Validation windows the loss is computed on (the first N, windows as the run trained)"));
  windowsRow_ = new QWidget;  // a task run is scored on its test examples instead (evaluateTask)
  auto* wl = new QHBoxLayout(windowsRow_);
  wl->setContentsMargins(0, 0, 0, 0);
  wl->addWidget(new QLabel(tr("Loss on the first")));
  wl->addWidget(windows_);
  wl->addWidget(new QLabel(tr("validation windows")));
  wl->addStretch(1);
  el->addWidget(windowsRow_);
  el->addWidget(editorScroll, 1);
  return editorBox;
}

void WeightsView::buildWhatIfBanner() {
  diagram_ = new ReceptiveFieldDiagram;
  diagram_->setObjectName(QStringLiteral("whatif_receptive_field"));
  diagram_->setToolTip(tr("Receptive field with the what-if knock-outs: a knocked-out layer keeps only its residual path"));

  banner_ = new QLabel;
  banner_->setObjectName(QStringLiteral("whatif_banner"));
  banner_->setWordWrap(true);
  loss_ = new QLabel;
  loss_->setObjectName(QStringLiteral("whatif_loss"));
  resetButton_ = new QPushButton(tr("Reset"));
  resetButton_->setObjectName(QStringLiteral("whatif_reset"));
  resetButton_->setToolTip(tr("Back to the trained values"));
  saveButton_ = new QPushButton(tr("Save as…"));
  saveButton_->setObjectName(QStringLiteral("whatif_save"));
  saveButton_->setToolTip(tr("Write the edited model as a new run folder (this run's folder is never written)"));
  openSaved_ = new QPushButton;
  openSaved_->setObjectName(QStringLiteral("whatif_open_saved"));
  openSaved_->hide();
  bannerBox_ = new NoticeBar(QStringLiteral("whatif_banner_box"), banner_, {resetButton_, saveButton_, openSaved_});
  // The banner's row is kept while it is hidden, so the first edit does not move the plots and
  // the editor under the pointer; one line (the full text in its tooltip) keeps its height.
  QSizePolicy keep = bannerBox_->sizePolicy();
  keep.setRetainSizeWhenHidden(true);
  bannerBox_->setSizePolicy(keep);
  banner_->setWordWrap(false);
  banner_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
}

QWidget* WeightsView::buildRows() {
  auto* top = new QSplitter(Qt::Horizontal);
  top->addWidget(abPlot_);
  top->addWidget(offsetPlot_);
  bottom_ = new QSplitter(Qt::Horizontal);
  auto* bottom = bottom_;
  bottom->addWidget(vectorMap_);
  bottom->addWidget(headBox_);
  auto* rows = new QSplitter(Qt::Vertical);
  rows->addWidget(top);
  rows->addWidget(diagram_);
  rows->addWidget(bottom);
  bottom->hide();  // until the weights say there are vectors or heads to show
  // The plots about as tall as the diagram (its size hint alone took most of the height).
  rows->setSizes({300, 380, 300});
  // On a short screen (1024x600) with a vector or multihead model the three rows scroll
  // rather than make the window taller than the screen.
  auto* rowsScroll = new QScrollArea;
  rowsScroll->setWidget(rows);
  rowsScroll->setWidgetResizable(true);
  rowsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  rowsScroll->setFrameShape(QFrame::NoFrame);
  return rowsScroll;
}

void WeightsView::connectSignals() {
  connect(editor_, &WhatIfEditor::editsChanged, this, &WeightsView::onEdits);
  connect(resetButton_, &QPushButton::clicked, this, &WeightsView::resetEdits);
  connect(saveButton_, &QPushButton::clicked, this, [this] { saveAs(); });
  connect(windows_, &QSpinBox::valueChanged, this, [this] {
    if (!edits().empty()) evaluate();
  });
  connect(openSaved_, &QPushButton::clicked, this, [this] {
    try {
      runs_->setCurrent(runs_->open(state_->savedRun()));
    } catch (const std::exception& e) {
      state_->setLastError(QString::fromStdString(e.what()));
      banner_->setText(state_->lastError());
    }
  });
  connect(runs_, &RunList::infoChanged, this, [this](int row) {
    if (row == runs_->current()) onCurrentChanged();  // a new checkpoint
  });
  connect(engine_, &EngineHost::trainingWeights, this,
          [this](const QString& dir, qint64 step, const std::vector<hsm::MixerWeights>& w) {
            const RunEntry* run = runs_->currentRun();
            if (run && same_dir(run->dir) == same_dir(dir)) showWeights(dir, step, w);
          });
  connectState();
}

void WeightsView::connectState() {
  connect(state_, &WeightsState::weightsRead, this, &WeightsView::onWeightsRead);
  connect(state_, &WeightsState::readFailed, this,
          [this](const QString& message) { header_->setText(tr("Cannot read the weights: %1").arg(message)); });
  connect(state_, &WeightsState::editRefused, this,
          [this](const QString& message) { banner_->setText(tr("The engine refused the edit: %1").arg(message)); });
  connect(state_, &WeightsState::evaluated, this, &WeightsView::showEvaluation);
  connect(state_, &WeightsState::evaluationFailed, this,
          [this](const QString& message) { showEvaluationFailure(tr("val loss: %1"), message); });
  connect(state_, &WeightsState::taskEvaluated, this, &WeightsView::showTaskEvaluation);
  connect(state_, &WeightsState::taskEvaluationFailed, this,
          [this](const QString& message) { showEvaluationFailure(tr("test accuracy: %1"), message); });
  connect(state_, &WeightsState::saved, this, &WeightsView::showSaved);
  connect(state_, &WeightsState::saveFailed, this, [this](const QString& message) {
    banner_->setText(tr("Save as failed: %1").arg(message));
    emit saveFinished(false);
  });
}

void WeightsView::leaveRun() {
  dirty_ = true;
  if (same_dir(state_->shownRun()) == currentRunDir() && !state_->shownRun().isEmpty()) return;
  // Another run: its weights go at once (the current run's are read when the view is shown),
  // and the what-if controls, which are of the run left, wait for the new run's.
  state_->forget();
  weights_.clear();
  const RunEntry* run = currentRun();
  header_->setText(!run ? tr("No run open.")
                   : run->has_info
                       ? tr("%1: the weights are read when this view is shown…").arg(run->name())
                       : tr("%1: no checkpoint yet; the weights appear at the first validation.").arg(run->name()));
  notes_->clear();
  loss_->clear();
  editor_->setEnabled(false);
  drawBars();
  drawOffsets();
  drawVectors();
  fillHeadTable();
}

void WeightsView::showRun() {
  if (dirty_) refresh();
}

void WeightsView::applyEdits() { onEdits(editor_->edits()); }

void WeightsView::onEdits(const hsm::WhatIf& edits) {
  if (state_->editorRun().isEmpty()) return;
  state_->setEdits(edits);
  redrawWeights();
  diagram_->setKnockOuts(edits.knock_out);
  updateBanner();
  evaluate();
}

void WeightsView::redrawWeights() {
  weights_ = edits().empty() ? state_->trained() : editor_->editedWeights();
  drawBars();
  drawOffsets();
  drawVectors();
  fillHeadTable();
}

QDoubleSpinBox* WeightsView::barUnder(const QPointF& pos) const {
  for (QCPBars* bars : {barsA_, barsB_}) {
    QVariant details;
    if (bars->selectTest(pos, false, &details) < 0) continue;
    const int index = details.value<QCPDataSelection>().dataRange().begin();
    if (index < 0 || index >= bars->data()->size()) continue;
    return editor_->spinBox(bars == barsA_ ? 'a' : 'b', static_cast<int>(bars->data()->at(index)->key));
  }
  return nullptr;
}

void WeightsView::pressBar(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || state_->editorRun().isEmpty()) return;
  dragged_ = barUnder(event->position());
  if (!dragged_) return;
  abPlot_->plot()->setInteraction(QCP::iRangeDrag, false);  // the press moves the bar, not the axes
  dragFrom_ = dragged_->value();
  dragFromY_ = abPlot_->plot()->yAxis->pixelToCoord(event->position().y());
}

void WeightsView::dragBar(QMouseEvent* event) {
  QCustomPlot* p = abPlot_->plot();
  if (!dragged_) {
    if (barUnder(event->position()))
      p->setCursor(Qt::SizeVerCursor);
    else
      p->unsetCursor();
    return;
  }
  // The value follows the pointer from where the drag began; the spin box marks it an edit.
  dragged_->setValue(dragFrom_ + p->yAxis->pixelToCoord(event->position().y()) - dragFromY_);
  weights_ = editor_->editedWeights();  // drawn at once; the loss follows the debounced edit
  drawBars();
  drawOffsets();
}

void WeightsView::releaseBar() {
  if (!dragged_) return;
  dragged_ = nullptr;
  abPlot_->plot()->setInteraction(QCP::iRangeDrag, true);
  drawBars();  // the y range fits the new values now that the pointer let go
}

void WeightsView::resetEdits() {
  editor_->reset();
  onEdits({});
}

void WeightsView::setEvalWindows(int windows) { windows_->setValue(windows); }

void WeightsView::evaluateTask() {
  loss_->setText(tr("computing the test accuracy…"));
  state_->evaluateTask();
}

void WeightsView::showTaskEvaluation(const hsm::TaskScore& trained, const hsm::TaskScore& edited, bool hasEdits) {
  loss_->setText(!hasEdits ? tr("test answer accuracy %1, loss %2 (trained, %3 test examples)")
                                 .arg(trained.answer_accuracy, 0, 'f', 3)
                                 .arg(trained.loss, 0, 'f', 3)
                                 .arg(trained.examples)
                           : tr("test answer accuracy %1 → %2, loss %3 → %4 (%5 test examples)")
                                 .arg(trained.answer_accuracy, 0, 'f', 3)
                                 .arg(edited.answer_accuracy, 0, 'f', 3)
                                 .arg(trained.loss, 0, 'f', 3)
                                 .arg(edited.loss, 0, 'f', 3)
                                 .arg(edited.examples));
  emit evaluationFinished();
}

void WeightsView::showEvaluationFailure(const QString& label, const QString& message) {
  loss_->setText(label.arg(message));
  emit evaluationFinished();
}

bool WeightsView::showRecordedEvaluation() {
  // The run's own evaluation, when its record has it, stands from the start (no edit needed).
  const RunEntry* run = runs_->currentRun();
  if (!run || same_dir(run->dir) != state_->editorRun()) return false;
  const QString data = run->has_info ? QString::fromStdString(run->info.data_path) : QString();
  if (const std::optional<RunEvaluation> recorded = recorded_evaluation(*run, data)) {
    state_->setEvaluationLoss(recorded->loss);
    loss_->setText(tr("val loss, %1").arg(evaluation_text(recorded->loss, 0, QString::fromStdString(
                                                                                     run->info.training.windows))));
    return true;
  }
  return false;
}

void WeightsView::evaluate() {
  const RunEntry* run = runs_->currentRun();
  QString data = run && run->has_info ? QString::fromStdString(run->info.data_path) : QString();
  if (!run || same_dir(run->dir) != state_->editorRun()) return;
  windowsRow_->setVisible(run->task.empty());
  if (!run->task.empty()) {
    evaluateTask();
    return;
  }
  lossNote_.clear();
  if (data.isEmpty() || !QFileInfo::exists(data)) {
    // A run trained elsewhere (the bundled demo models, a copied folder) scores its edits on
    // the starter corpus, TinyStories as theirs, rather than showing no loss at all.
    const QString why = data.isEmpty() ? tr("this run records no corpus") : tr("the corpus %1 is not there").arg(data);
    data = QString::fromStdString(hsm::starter_corpus());
    if (data.isEmpty()) {
      loss_->setText(tr("val loss: %1").arg(why));
      return;
    }
    lossNote_ = tr(" · on the starter corpus (%1)").arg(why);
  }
  // The headline is the run's own evaluation on every window: its record, or computed beside
  // the what-if's windows (once per checkpoint) when it records none.
  const std::optional<RunEvaluation> recorded = lossNote_.isEmpty() ? recorded_evaluation(*run, data) : std::nullopt;
  loss_->setText(tr("computing the validation loss…"));
  state_->evaluate(data, QString::fromStdString(run->info.training.windows), windows_->value(), recorded);
}

void WeightsView::showEvaluation() {
  const WhatIfEvaluation& e = state_->lastEvaluation();
  const std::optional<RunEvaluation>& recorded = state_->recordedEvaluation();
  const double d = e.edited.loss - e.trained.loss;
  // The headline (the run's own evaluation on every window), then the what-if on its fewer
  // windows, named as such (the run's own windows, the first N).
  const QString layout = QString::fromStdString(e.trained.windows);
  const QString headline = recorded ? evaluation_text(recorded->loss, 0, layout)
                                    : evaluation_text(e.evaluation.loss, e.evaluation.window_count, layout);
  const QString quick = e.edits.empty()
                            ? tr("trained: %1").arg(partial_loss_text(e.trained.loss, e.trained.window_count))
                            : tr("what-if on the first %1 windows: %2 → %3 nats (%4%5)")
                                  .arg(e.trained.window_count)
                                  .arg(e.trained.loss, 0, 'f', 3)
                                  .arg(e.edited.loss, 0, 'f', 3)
                                  .arg(d >= 0 ? QStringLiteral("+") : QString())
                                  .arg(d, 0, 'f', 3);
  loss_->setText(tr("val loss, %1 · %2").arg(headline, quick) + lossNote_);
  emit evaluationFinished();
}

QString WeightsView::lossText() const { return loss_->text(); }
QString WeightsView::bannerText() const { return banner_->text(); }

namespace {

// The edits as people read them (issue 69: the engine's label, "layer 2 a=1 b=0.31396484", is
// the CLI's exact notation): "layer 2 knocked out; layer 3: a 1.00, b 0.314".
QString whatIfText(const hsm::WhatIf& w) {
  QStringList parts;
  for (const hsm::KnockOut& k : w.knock_out)
    parts << WeightsView::tr("%1 knocked out").arg(QString::fromStdString(hsm::knock_out_label(k)));
  for (const hsm::AbEdit& e : w.ab) {
    if (e.a.size() == 1 && e.b.size() == 1)
      parts << WeightsView::tr("layer %1: a %2, b %3")
                   .arg(e.layer)
                   .arg(QString::number(e.a[0], 'g', 3), QString::number(e.b[0], 'g', 3));
    else
      parts << WeightsView::tr("layer %1: a and b edited").arg(e.layer);
  }
  return parts.join(QStringLiteral("; "));
}

}  // namespace

void WeightsView::updateBanner() {
  const bool edited = !edits().empty();
  bannerBox_->setVisible(edited || openSaved_->isVisible());
  resetButton_->setEnabled(edited);
  saveButton_->setEnabled(edited);
  if (edited)
    banner_->setText(
        tr("<b>What-if:</b> %1 — not saved.").arg(whatIfText(edits()).toHtmlEscaped()));
  else if (!state_->savedRun().isEmpty() && openSaved_->isVisible())
    banner_->setText(tr("Saved the edited model as %1.").arg(state_->savedRun()));
  else
    banner_->clear();
  if (edited && !state_->savedRun().isEmpty() && openSaved_->isVisible())
    banner_->setText(banner_->text() +
                     tr(" (an earlier edit was saved as %1)").arg(QFileInfo(state_->savedRun()).fileName()));
  banner_->setToolTip(banner_->text());
}

bool WeightsView::saveAs() {
  state_->setLastError({});
  const QString editorRun = state_->editorRun();
  if (edits().empty() || editorRun.isEmpty()) {
    state_->setLastError(tr("Nothing to save: edit a weight or knock something out first."));
    return false;
  }
  QString folder = saveFolder_;
  if (folder.isEmpty()) {
    // In the user's folders (the run's own when it is theirs), never the bundled models'.
    const QString name = QFileInfo(editorRun).fileName() + QStringLiteral("-whatif");
    folder =
        QFileDialog::getSaveFileName(this, tr("Save the edited model as a new run folder"),
                                     QDir(StudioSettings::dialogFolder(QFileInfo(editorRun).path())).filePath(name));
    if (!folder.isEmpty()) StudioSettings::setDialogFolder(folder);
  }
  if (folder.isEmpty()) return false;
  banner_->setText(tr("Saving the edited model as %1…").arg(folder));
  state_->saveAs(folder);
  return true;
}

void WeightsView::showSaved(const QString& dir) {
  openSaved_->setText(tr("Open %1").arg(QFileInfo(dir).fileName()));
  openSaved_->show();
  updateBanner();
  emit saveFinished(true);
}

QList<PlotPanel*> WeightsView::plots() const { return {abPlot_, offsetPlot_, vectorMap_}; }

QString WeightsView::notes() const { return notes_->text(); }

void WeightsView::showEvent(QShowEvent* event) {
  StudioView::showEvent(event);
  if (dirty_) refresh();
}

void WeightsView::onCurrentChanged() {
  dirty_ = true;
  if (isVisible()) refresh();
}

void WeightsView::refresh() {
  dirty_ = false;
  const RunEntry* run = runs_->currentRun();
  if (!run) {
    header_->setText(tr("No run open."));
    return;
  }
  if (!run->has_info) {
    header_->setText(tr("%1: no checkpoint yet; the weights appear at the first validation.").arg(run->name()));
    return;
  }
  header_->setText(tr("%1: reading the weights…").arg(run->name()));
  state_->read(run->dir);
}

void WeightsView::onWeightsRead(const QString& runDir, const std::vector<hsm::MixerWeights>& w) {
  const RunEntry* current = runs_->currentRun();
  if (current && current->dir == runDir) showWeights(runDir, current->has_info ? current->info.step : -1, w);
}

void WeightsView::showWeights(const QString& runDir, qint64 step, const std::vector<hsm::MixerWeights>& layers) {
  const qint64 shownStep = state_->step();
  state_->setShown(runDir, step, layers);
  editor_->setEnabled(true);
  const RunEntry* run = runs_->currentRun();
  if (same_dir(runDir) != state_->editorRun() || editor_->editedWeights().size() != layers.size()) {
    // Another run: the editor shows the edits the engine host keeps for it while the studio
    // runs (none for a run not edited yet), and the run left keeps its own. Another model in
    // the same folder (trained anew) drops the old model's edits.
    const QString dir = same_dir(runDir);
    if (dir == state_->editorRun() && !edits().empty()) state_->setEdits({});
    state_->setEditorRun(dir);
    loss_->clear();
    showRecordedEvaluation();
    openSaved_->hide();
    const hsm::ModelConfig config = run && same_dir(run->dir) == dir ? run->model : hsm::ModelConfig{};
    editor_->setModel(config, layers);
    const hsm::WhatIf kept = edits();
    editor_->setEdits(kept);
    if (!(editor_->edits() == kept)) state_->setEdits(editor_->edits());  // what the controls could not hold goes
    diagram_->setConfig(config);
    diagram_->setLength(std::clamp(static_cast<int>(config.context), 8, 64));
    diagram_->setKnockOuts(edits().knock_out);
    diagram_->select(diagram_->length() - 1, diagram_->layerCount() - 1);  // the last output's field
    updateBanner();
    if (!edits().empty()) evaluate();
  } else {
    // A new checkpoint of the run shown (it trains): the editor's trained values follow, and
    // an edit is applied again over the new weights and scored again.
    editor_->updateTrained(layers);
    if (!edits().empty() && step != shownStep) onEdits(editor_->edits());
  }
  weights_ = edits().empty() ? layers : editor_->editedWeights();
  const bool live = engine_->isTraining() && same_dir(engine_->trainingRunDir()) == same_dir(runDir);
  // Issue 69: a run whose record holds no evaluation of every window at its checkpoint (the
  // starter run validates on 20 batches) has its headline computed once its training is over,
  // off the GUI thread, by the evaluation an edit asks for: an edit made meanwhile supersedes
  // it (only the newest answers the view), and its answer carries the headline as well.
  const QString asked = same_dir(runDir) + QLatin1Char('@') + QString::number(step);
  if (!live && edits().empty() && run && run->task.empty() && same_dir(run->dir) == same_dir(runDir) &&
      headlineAsked_ != asked) {
    headlineAsked_ = asked;
    if (!showRecordedEvaluation()) evaluate();
  }
  header_->setText(
      tr("<b>%1</b> · %2 layers · step %3%4")
          .arg(QFileInfo(runDir).fileName())
          .arg(layers.size())
          .arg(step)
          .arg(live ? tr(" · <span style='color:#0a7d20'>live: updates at every validation</span>") : QString()));
  QStringList without = layers_without_weights(layers);
  drawBars();
  drawOffsets();
  drawVectors();
  fillHeadTable();
  // Panels with nothing to show are hidden and named in the notes instead.
  const bool vectors = vectorMap_->rows() > 0, heads = headTable_->rowCount() > 0;
  vectorMap_->setVisible(vectors);
  headBox_->setVisible(heads);
  bottom_->setVisible(vectors || heads);
  if (!vectors) without << tr("no layers with per-channel a/b vectors (no per-channel heatmap)");
  if (!heads) without << tr("no multihead (a,b) layers (no per-head table)");
  notes_->setText(tr("Not shown: ") + without.join(QStringLiteral("; ")) + QLatin1Char('.'));
}

void WeightsView::drawBars() {
  QVector<double> keys, a, b;
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (const hsm::MixerWeights& w : weights_) {
    if (w.a.size() != 1 || w.b.size() != 1) continue;
    keys << w.layer;
    a << w.a[0];
    b << w.b[0];
    ticker->addTick(w.layer, tr("L%1\n%2").arg(w.layer).arg(w.shifts.empty() ? 0 : w.shifts[0]));
  }
  barsA_->setData(keys, a, true);
  barsB_->setData(keys, b, true);
  QCustomPlot* p = abPlot_->plot();
  p->xAxis->setTicker(ticker);
  // Items are children of the plot: remove the previous message, if any.
  for (int i = p->itemCount() - 1; i >= 0; --i) p->removeItem(i);
  if (keys.isEmpty()) {
    auto* text = new QCPItemText(p);
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(weights_.empty() ? tr("No weights loaded.") : tr("No scalar (a,b) layers in this model."));
    text->setColor(QColor(90, 90, 90));
    p->xAxis->setRange(0, 1);
    p->yAxis->setRange(0, 1);
  } else if (!dragged_) {  // while a bar is dragged the axes stay put under the pointer
    p->xAxis->setRange(keys.first() - 0.7, keys.last() + 0.7);
    double lo = 0, hi = 0;
    for (double v : a + b) lo = std::min(lo, v), hi = std::max(hi, v);
    const double pad = 0.08 * std::max(hi - lo, 1e-6);
    p->yAxis->setRange(lo - pad, hi + pad);
  }
  p->replot(QCustomPlot::rpQueuedReplot);
}

void WeightsView::drawOffsets() {
  QCustomPlot* p = offsetPlot_->plot();
  for (int i = p->itemCount() - 1; i >= 0; --i) p->removeItem(i);
  if (drawLagWeights()) return;
  offsetPlot_->setXLabel(tr("offset k"));
  std::vector<double> w;
  try {
    w = hsm::offset_weights(weights_);
  } catch (const std::exception&) {
  }
  PlotSeries s{offsetPlot_->logY() ? tr("|w|") : tr("w"), QColor(44, 140, 44), {}, {}, PlotSeries::Style::kScatter};
  for (size_t k = 0; k < w.size(); ++k) {
    s.x << double(k);
    s.y << (offsetPlot_->logY() ? std::abs(w[k]) : w[k]);
  }
  offsetPlot_->setSeries(w.empty() ? QVector<PlotSeries>{} : QVector<PlotSeries>{s});
  if (w.empty()) {
    auto* text = new QCPItemText(p);
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(weights_.empty() ? tr("No weights loaded.")
                                   : tr("Offset weights need every layer to be a single-shift layer with scalar a and b\n"
                                        "(HSM §3); this model mixes other layers in."));
    text->setColor(QColor(90, 90, 90));
    p->replot(QCustomPlot::rpQueuedReplot);
  }
}

bool WeightsView::drawLagWeights() {
  // The extractors (EX §5) weight each earlier input by its lag: one curve per layer.
  QVector<PlotSeries> series;
  for (const hsm::MixerWeights& w : weights_) {
    if (w.lag_weights.empty()) continue;
    PlotSeries s{tr("L%1 %2").arg(w.layer).arg(QString::fromStdString(w.mixer)),
                 colours::category10(static_cast<int>(series.size()), 8),
                 {},
                 {}};
    for (size_t k = 0; k < w.lag_weights.size(); ++k) {
      s.x << double(k + 1);
      s.y << (offsetPlot_->logY() ? std::abs(w.lag_weights[k]) : w.lag_weights[k]);
    }
    series << s;
  }
  if (series.isEmpty()) return false;
  offsetPlot_->setXLabel(tr("lag k (ME: w_k · WE, HE: mean |w_k| · SHE: RMS entry of W_k)"));
  offsetPlot_->setSeries(series);
  return true;
}

void WeightsView::drawVectors() {
  QStringList rows;
  std::vector<double> values;
  int d = 0;
  for (const hsm::MixerWeights& w : weights_) {
    // Per-channel a and b (one per channel, not one per head): HSM (a,b) vector, eq. 2.
    if (w.a.size() <= std::max<size_t>(1, w.shifts.size())) continue;
    d = static_cast<int>(w.a.size());
    rows << tr("L%1 a").arg(w.layer) << tr("L%1 b").arg(w.layer);
    values.insert(values.end(), w.a.begin(), w.a.end());
    values.insert(values.end(), w.b.begin(), w.b.end());
  }
  if (rows.isEmpty())
    vectorMap_->clearWithMessage(weights_.empty() ? tr("No weights loaded.")
                                                  : tr("No layers with per-channel a/b vectors in this model."));
  else
    vectorMap_->setMatrix(static_cast<int>(rows.size()), d, values, rows, {}, HeatmapPanel::Palette::kDiverging);
}

void WeightsView::fillHeadTable() {
  int heads = 0;
  QVector<const hsm::MixerWeights*> mh;
  for (const hsm::MixerWeights& w : weights_)
    if (w.shifts.size() > 1 && !w.a.empty()) {
      mh << &w;
      heads = std::max(heads, static_cast<int>(w.a.size()));
    }
  headTable_->clear();
  headTable_->setRowCount(static_cast<int>(mh.size()));
  headTable_->setColumnCount(heads);
  QStringList headLabels, rowLabels;
  for (int j = 0; j < heads; ++j) headLabels << tr("head %1").arg(j);
  headTable_->setHorizontalHeaderLabels(headLabels);
  for (int r = 0; r < mh.size(); ++r) {
    const hsm::MixerWeights& w = *mh[r];
    rowLabels << tr("L%1 %2").arg(w.layer).arg(QString::fromStdString(w.mixer));
    for (int j = 0; j < static_cast<int>(w.a.size()); ++j) {
      auto* item = new QTableWidgetItem(tr("shift %1\na %2\nb %3")
                                            .arg(j < int(w.shifts.size()) ? w.shifts[j] : 0)
                                            .arg(w.a[j], 0, 'f', 3)
                                            .arg(w.b[j], 0, 'f', 3));
      // Tint by |b|: how much the head mixes in its shifted input.
      const double t =
          std::min(1.0, std::abs(double(w.b[j])) / std::max(1e-6, std::abs(double(w.a[j])) + std::abs(double(w.b[j]))));
      item->setBackground(headTint(t));
      item->setData(Qt::UserRole, double(w.a[j]));
      item->setData(Qt::UserRole + 1, double(w.b[j]));
      headTable_->setItem(r, j, item);
    }
  }
  headTable_->setVerticalHeaderLabels(rowLabels);
  headNote_->setText(
      mh.isEmpty() ? (weights_.empty() ? tr("No weights loaded.") : tr("No multihead (a,b) layers in this model."))
                   : tr("Cells tinted by b's share |b|/(|a|+|b|), how much the head mixes in its shifted input: "
                        "%1 %2 %3")
                         .arg(colours::swatch(headTint(0), QStringLiteral("0")),
                              colours::swatch(headTint(0.5), QStringLiteral("0.5")),
                              colours::swatch(headTint(1), QStringLiteral("1"))));
}

}  // namespace studio
