#include "gui/views/probe_view.h"

#include <qcustomplot.h>

#include <algorithm>

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSlider>
#include <QSpinBox>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QTextStream>
#include <QVBoxLayout>
#include <functional>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/views/probe_state.h"
#include "gui/studio_settings.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/notice_bar.h"
#include "gui/widgets/task_example_bar.h"
#include "gui/widgets/token_text.h"
#include "gui/widgets/widget_export.h"
#include "gui/widgets/colour_maps.h"
#include "hsm/prober.h"
#include "hsm/run_folder.h"

namespace studio {
namespace {

QString stream_name(int layer) { return layer < 0 ? QObject::tr("embedding") : QObject::tr("layer %1").arg(layer); }

QString quote(QString s) { return QStringLiteral("\"%1\"").arg(s.replace('"', QLatin1String("\"\""))); }

}  // namespace

// The ablation plot's height per bar, and around them (title, axis, margins).
constexpr int kAblationBarHeight = 16, kAblationPlotMargin = 110, kAblationMinHeight = 200;
// The rollout's slanted token names, axis label and margins under and beside its axes.
constexpr int kRolloutLabelsHeight = 95;

// A word-wrapped label whose smallest height is its lines' at its width: a splitter counts a
// wrapped label's one line, and the rollout under it gave up the rest (issue 69's walk: the
// rollout's axis label under its hover line at 1024x600).
namespace {
class WrappedLabel : public QLabel {
 public:
  using QLabel::QLabel;
  void fit() {
    const int needed = heightForWidth(width());
    if (needed > 0 && minimumHeight() != needed) setMinimumHeight(needed);
  }

 protected:
  void resizeEvent(QResizeEvent* e) override {
    QLabel::resizeEvent(e);
    fit();
  }
};
}  // namespace

QString rollout_kind_text(const std::vector<hsm::MatrixKind>& kinds) {
  QStringList parts;
  for (hsm::MatrixKind k : {hsm::MatrixKind::kAttention, hsm::MatrixKind::kLinear, hsm::MatrixKind::kJacobian}) {
    QStringList layers;
    for (size_t l = 0; l < kinds.size(); ++l)
      if (kinds[l] == k) layers << QString::number(l);
    if (layers.isEmpty()) continue;
    const QString what = k == hsm::MatrixKind::kAttention ? QObject::tr("attention weights")
                         : k == hsm::MatrixKind::kLinear  ? QObject::tr("the exact linear map, each row scaled to sum to 1")
                                                          : QObject::tr("Jacobian norms, each row scaled to sum to 1");
    parts << QObject::tr("%1 (layer %2)").arg(what, layers.join(QStringLiteral(", ")));
  }
  // Issue 69: in words, not "R_l = (½A_l + ½I)·R_{l−1}" (the formula is in the help and the SPEC).
  return QObject::tr("Rollout: each layer's mixing, half kept and half passed straight on (the residual path), "
                     "multiplied through the layers below, from %1.")
      .arg(parts.join(QStringLiteral("; ")));
}

ProbeView::ProbeView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent), state_(new ProbeState(engine, this)) {
  build();
  connectSignals();
  leaveRun();
  updateButtons();
}

void ProbeView::build() {
  QWidget* lensBox = buildLens();
  QWidget* rolloutBox = buildRollout();
  QWidget* ablationBox = buildAblation();
  auto* lower = new QSplitter(Qt::Horizontal);
  lower->addWidget(rolloutBox);
  lower->addWidget(ablationBox);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 2);
  auto* rows = new QSplitter(Qt::Vertical);
  rows->addWidget(lensBox);
  rows->addWidget(lower);
  rows->setStretchFactor(0, 2);
  rows->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(buildPromptBar());
  layout->addWidget(makeWhatIfNotice(
      QStringLiteral("probe_whatif_box"),
      tr("The lens, the rollout and the ablation are of the edited model (what it knocks out is in the base loss); "
         "Reset it in the Weights view.")));
  layout->addWidget(status_);
  // Issue 69: at 1024x600 the rollout was a strip of 35 px under its token names; it keeps its
  // rows apart (kRolloutAxesHeight) and the lens and rollout scroll together where the screen is
  // shorter than they need.
  auto* scroll = new QScrollArea;
  scroll->setObjectName(QStringLiteral("probe_scroll"));
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setWidget(rows);
  layout->addWidget(scroll, 1);
}

QHBoxLayout* ProbeView::buildPromptBar() {
  promptEdit_ =
      new QLineEdit(QStringLiteral("Once upon a time, there was a little girl named Lily. She loved to play."));
  promptEdit_->setObjectName(QStringLiteral("probe_prompt"));
  promptEdit_->setPlaceholderText(tr("A prompt (its first context tokens are used, as in Diagnostics)"));
  probeButton_ = new QPushButton(tr("Probe"));
  probeButton_->setObjectName(QStringLiteral("probe_run"));
  probeButton_->setDefault(true);
  exportButton_ = new QPushButton(tr("Export all…"));
  exportButton_->setToolTip(tr("The lens, rollout and ablation plots as PNG, PDF and SVG, and their numbers as CSV"));
  status_ = new QLabel(tr("Choose a run, type a prompt and press Probe."));
  status_->setObjectName(QStringLiteral("probe_status"));
  status_->setWordWrap(true);
  promptLabel_ = new QLabel(tr("Prompt"));
  exampleBar_ = new TaskExampleBar(QStringLiteral("probe"));
  exampleBar_->hide();
  auto* bar = new QHBoxLayout;
  bar->addWidget(promptLabel_);
  bar->addWidget(promptEdit_, 1);
  bar->addWidget(exampleBar_, 1);
  bar->addWidget(probeButton_);
  bar->addWidget(exportButton_);
  return bar;
}

QWidget* ProbeView::buildLens() {
  // The lens grid: one row per residual stream, one column per position.
  lensTable_ = new QTableWidget;
  lensTable_->setObjectName(QStringLiteral("lens_table"));
  lensTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  lensTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  lensTable_->setMouseTracking(true);
  // Its header and four layers in view where the rollout below takes the rest (the view scrolls).
  lensTable_->setMinimumHeight(lensTable_->horizontalHeader()->sizeHint().height() +
                               4 * lensTable_->verticalHeader()->defaultSectionSize() + 2 * lensTable_->frameWidth());
  lensExport_ = new QPushButton(tr("Export…"));
  lensExport_->setToolTip(tr("The lens grid as PNG, PDF or SVG, or its numbers as CSV"));
  auto* lensTitle = new QLabel(
      tr("<b>Logit lens</b>: each stream's most likely next token per position through the final LayerNorm and "
         "the tied output layer, tinted by its probability: %1 %2 %3 %4. Hover: top 5, KL to the last "
         "layer, rank of the actual next token.")
          .arg(colours::swatch(TokenText::tint(0.01), QStringLiteral("1%")),
               colours::swatch(TokenText::tint(0.1), QStringLiteral("10%")),
               colours::swatch(TokenText::tint(0.3), QStringLiteral("30%")),
               colours::swatch(TokenText::tint(1), QStringLiteral("100%"))));
  lensTitle->setObjectName(QStringLiteral("lens_title"));
  lensTitle->setWordWrap(true);
  auto* lensBox = new QWidget;
  auto* lensHead = new QHBoxLayout;
  lensHead->addWidget(lensTitle, 1);
  lensHead->addWidget(lensExport_);
  auto* lensLayout = new QVBoxLayout(lensBox);
  lensLayout->setContentsMargins(0, 0, 0, 0);
  lensLayout->addLayout(lensHead);
  lensLayout->addWidget(lensTable_, 1);
  return lensBox;
}

QWidget* ProbeView::buildRollout() {
  // Rollout: a heatmap and the layer it shows.
  rollout_ = new HeatmapPanel(tr("Attention rollout"), tr("input token"), tr("output position"));
  rollout_->setObjectName(QStringLiteral("rollout_heatmap"));
  rollout_->setScaleLabel(tr("share"));
  rollout_->setMinimumAxesHeight(kRolloutAxesHeight);
  // Known before the first layout: a scroll area does not follow a minimum that grows later.
  rollout_->plot()->setMinimumHeight(kRolloutAxesHeight + kRolloutLabelsHeight);
  layerSlider_ = new QSlider(Qt::Horizontal);
  layerSlider_->setObjectName(QStringLiteral("rollout_layer"));
  layerSlider_->setRange(0, 0);
  layerSlider_->setPageStep(1);
  layerSlider_->setTickPosition(QSlider::TicksBelow);
  layerLabel_ = new QLabel(tr("after layer –"));
  rolloutKind_ = new WrappedLabel;
  rolloutKind_->setObjectName(QStringLiteral("rollout_kind"));
  rolloutKind_->setWordWrap(true);
  auto* rolloutBox = new QWidget;
  auto* sliderRow = new QHBoxLayout;
  sliderRow->addWidget(new QLabel(tr("Layer")));
  sliderRow->addWidget(layerSlider_, 1);
  sliderRow->addWidget(layerLabel_);
  auto* rolloutLayout = new QVBoxLayout(rolloutBox);
  rolloutLayout->setContentsMargins(0, 0, 0, 0);
  rolloutLayout->addWidget(rolloutKind_);
  rolloutLayout->addLayout(sliderRow);
  rolloutLayout->addWidget(rollout_, 1);
  return rolloutBox;
}

void ProbeView::buildAblationPlot() {
  // Ablation: ranked horizontal bars, the corpus and the Run / Cancel controls.
  ablationPlot_ = new PlotPanel(tr("Importance by ablation"), tr("Δ validation loss (nats)"), QString());
  ablationPlot_->setObjectName(QStringLiteral("ablation_plot"));
  ablationPlot_->setLogOptionVisible(false);
  QCustomPlot* p = ablationPlot_->plot();
  bars_ = new QCPBars(p->yAxis, p->xAxis);  // keys down the side: one bar per knock-out
  bars_->setBrush(colours::withAlpha(colours::category10(0), 200));
  bars_->setPen(QPen(colours::category10(0).darker(120)));
  bars_->setWidth(0.7);
  p->xAxis->grid()->setZeroLinePen(QPen(QColor(80, 80, 80)));
  ablationPlot_->setCsvWriter([this] {
    QString out = QStringLiteral("layer,head,loss,delta\n");
    for (const hsm::Ablation& a : ablation().ablations)
      out += QStringLiteral("%1,%2,%3,%4\n")
                 .arg(a.knock_out.layer)
                 .arg(a.knock_out.head < 0 ? QString() : QString::number(a.knock_out.head))
                 .arg(QString::number(a.loss, 'g', 10), QString::number(a.delta, 'g', 10));
    return out;
  });
}

void ProbeView::buildAblationControls() {
  dataEdit_ = new QLineEdit;
  dataEdit_->setObjectName(QStringLiteral("ablation_data"));
  dataEdit_->setPlaceholderText(tr("Corpus (default: the run's own); its validation split is evaluated"));
  browse_ = new QPushButton(tr("…"));
  // The windows the run was trained on by default, so the base loss is the one its curves show
  // (and hsm eval's without --windows).
  windowsBox_ = new QComboBox;
  windowsBox_->setObjectName(QStringLiteral("ablation_windows"));
  windowsBox_->addItem(tr("as trained"), QString());
  windowsBox_->addItem(QStringLiteral("packed"), QStringLiteral("packed"));
  windowsBox_->addItem(QStringLiteral("story_start"), QStringLiteral("story_start"));
  windowsBox_->setToolTip(
      tr("Windows as hsm eval --windows; “as trained”: the ones the run was trained on (its "
         "curves' validation loss is on them)"));
  maxWindows_ = new QSpinBox;
  maxWindows_->setObjectName(QStringLiteral("ablation_max_windows"));
  maxWindows_->setRange(0, 1000000);
  maxWindows_->setValue(64);
  maxWindows_->setSpecialValueText(tr("all"));
  maxWindows_->setToolTip(tr("Evaluate the first N validation windows (0: all), as hsm ablate --max-windows"));
  ablateButton_ = new QPushButton(tr("Run ablation"));
  ablateButton_->setObjectName(QStringLiteral("ablation_run"));
  cancelButton_ = new QPushButton(tr("Cancel"));
  cancelButton_->setObjectName(QStringLiteral("ablation_cancel"));
  progress_ = new QProgressBar;
  progress_->setObjectName(QStringLiteral("ablation_progress"));
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setTextVisible(true);
  progress_->setFormat(tr("idle"));
}

QWidget* ProbeView::buildAblation() {
  buildAblationPlot();
  buildAblationControls();
  auto* dataRow = new QHBoxLayout;
  dataRow->addWidget(dataEdit_, 1);
  dataRow->addWidget(browse_);
  auto* runRow = new QHBoxLayout;
  runRow->addWidget(windowsBox_);
  runRow->addWidget(new QLabel(tr("windows")));
  runRow->addWidget(maxWindows_);
  runRow->addWidget(ablateButton_);
  runRow->addWidget(cancelButton_);
  auto* ablationBox = new QWidget;
  auto* ablationLayout = new QVBoxLayout(ablationBox);
  ablationLayout->setContentsMargins(0, 0, 0, 0);
  ablationLayout->addLayout(dataRow);
  ablationLayout->addLayout(runRow);
  ablationLayout->addWidget(progress_);
  ablationOf_ = new QLabel;
  ablationOf_->setObjectName(QStringLiteral("ablation_of"));
  ablationOf_->setWordWrap(true);
  ablationLayout->addWidget(ablationOf_);
  // A bar per knock-out at a readable height: a paper-size model's 63 rows scroll rather than
  // squeeze into the pane.
  auto* ablationScroll = new QScrollArea;
  ablationScroll->setObjectName(QStringLiteral("ablation_scroll"));
  ablationScroll->setWidget(ablationPlot_);
  ablationScroll->setWidgetResizable(true);
  ablationScroll->setFrameShape(QFrame::NoFrame);
  ablationLayout->addWidget(ablationScroll, 1);
  return ablationBox;
}

void ProbeView::connectSignals() {
  connect(probeButton_, &QPushButton::clicked, this, [this] { runProbe(); });
  connect(promptEdit_, &QLineEdit::returnPressed, this, [this] { runProbe(); });
  connect(exampleBar_, &TaskExampleBar::exampleChosen, this, [this] {
    if (isProbing())
      state_->reprobeWhenAnswered();  // probed when the one under way answers
    else
      runProbe();
  });
  connect(layerSlider_, &QSlider::valueChanged, this, [this] { drawRollout(); });
  connect(ablateButton_, &QPushButton::clicked, this, [this] { runAblation(); });
  connect(cancelButton_, &QPushButton::clicked, this, &ProbeView::cancelAblation);
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Corpus"), StudioSettings::dialogFolder(dataEdit_->text()));
    if (f.isEmpty()) return;
    StudioSettings::setDialogFolder(f);
    dataEdit_->setText(f);
  });
  connect(lensExport_, &QPushButton::clicked, this, [this] {
    const RunEntry* run = runs_->currentRun();
    const QString name = export_stem(run ? run->dir : QString(), QStringLiteral("probe")) + QStringLiteral("-lens.png");
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export the logit lens"), StudioSettings::dialogPath(name),
                                     tr("Images (*.png *.pdf *.svg);;Numbers (*.csv)"));
    if (path.isEmpty()) return;
    StudioSettings::setDialogFolder(path);
    const QString error = exportLens(path);
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Export failed"), error);
  });
  connect(exportButton_, &QPushButton::clicked, this, &ProbeView::exportDialog);
  connect(lensTable_, &QTableWidget::cellEntered, this, [this](int row, int column) {
    status_->setText(lensTooltip(row, column).remove(QRegularExpression("<[^>]*>")));
  });
  connectState();
}

void ProbeView::connectState() {
  connect(state_, &ProbeState::probed, this, &ProbeView::showProbe);
  connect(state_, &ProbeState::probeDropped, this, [this] {  // the current run's, when shown
    updateButtons();
    emit probeFinished();
    if (isVisible()) showRun();
  });
  connect(state_, &ProbeState::reprobeWanted, this, [this] { runProbe(); });
  connect(state_, &ProbeState::probeFailed, this, &ProbeView::showProbeFailure);
  connect(state_, &ProbeState::ablationProgress, this, [this](const QString& stage, double f) {
    progress_->setValue(static_cast<int>(f * 1000));
    progress_->setFormat(QStringLiteral("%1 · %p%").arg(stage));
  });
  connect(state_, &ProbeState::ablated, this, &ProbeView::showAblation);
  connect(state_, &ProbeState::ablatedElsewhere, this, [this](const QString& runDir) {
    progress_->setFormat(tr("%1's ablation done").arg(runName(runDir)));
    status_->setText(tr("The ablation of %1 finished; choose that run to see it.").arg(runName(runDir)));
    updateButtons();
    emit ablationFinished();
  });
  connect(state_, &ProbeState::ablationFailed, this, &ProbeView::showAblationFailure);
}

void ProbeView::showPromptKind() {
  const RunEntry* run = currentRun();
  const bool task = exampleBar_->follow(run ? run->task : std::string(), {promptLabel_, promptEdit_});
  // The ablation scores a corpus's validation windows: a task run has none.
  for (QWidget* w : {static_cast<QWidget*>(dataEdit_), static_cast<QWidget*>(browse_),
                     static_cast<QWidget*>(windowsBox_), static_cast<QWidget*>(maxWindows_)})
    w->setEnabled(!task);
  updateButtons();
}

void ProbeView::leaveRun() {
  // The lens and rollout shown are of the current run or gone; the ablation shown is the
  // current run's last one (kept per run while the studio runs) or none, and says whose.
  showPromptKind();
  const QString dir = currentRunDir();
  if (state_->probeRun() != dir) {
    state_->dropProbe(dir);
    exampleBar_->clearAnswers();
    drawLens();
    drawRollout();
    if (!isProbing())
      status_->setText(dir.isEmpty() ? tr("No run open.") : tr("No probe of %1 yet: press Probe.").arg(runName(dir)));
  }
  state_->showAblationOf(dir);
  if (!isAblating()) {
    progress_->setValue(hasAblation() ? 1000 : 0);
    progress_->setFormat(hasAblation() ? tr("done") : tr("idle"));
  }
  drawAblation();
}

void ProbeView::showRun() {
  // The lens and rollout of the prompt are cheap: computed for the run at once.
  const RunEntry* run = currentRun();
  if (run && run->has_info && !hasProbe() && !isProbing() && (!run->task.empty() || !promptEdit_->text().trimmed().isEmpty()))
    runProbe();
}

void ProbeView::setPrompt(const QString& prompt) { promptEdit_->setText(prompt); }
QString ProbeView::prompt() const { return promptEdit_->text(); }
void ProbeView::setDataPath(const QString& path) { dataEdit_->setText(path); }
void ProbeView::setMaxWindows(int windows) { maxWindows_->setValue(windows); }

void ProbeView::updateButtons() {
  const RunEntry* run = currentRun();
  probeButton_->setEnabled(!isProbing());
  ablateButton_->setEnabled(!isAblating() && !(run && !run->task.empty()));
  cancelButton_->setEnabled(isAblating());
}

bool ProbeView::runProbe() {
  const RunEntry* run = runs_->currentRun();
  const QString error = isProbing() ? tr("A probe is already running.") : prompt_run_refusal(run, promptEdit_->text());
  state_->setLastError(error);
  if (!error.isEmpty()) {
    status_->setText(error);
    return false;
  }
  state_->startProbe(*run, promptEdit_->text(), exampleBar_->example());
  status_->setText(tr("Reading every layer's prediction…"));
  updateButtons();
  return true;
}

bool ProbeView::runAblation() {
  QString error;
  const RunEntry* run = runs_->currentRun();
  QString data = dataEdit_->text().trimmed();
  QString instead;
  if (data.isEmpty() && run && run->has_info) {
    // A bundled model whose corpus is not on this machine is scored on the starter corpus
    // (hsm::scoring_corpus), said in the status; the field stays empty so that the next run
    // is scored on its own corpus.
    const hsm::ScoringCorpus corpus = hsm::scoring_corpus(run->dir.toStdString(), run->info.data_path);
    data = QString::fromStdString(corpus.path);
    if (!corpus.instead_of.empty()) {
      instead = tr(" (its corpus %1 is not on this machine: the TinyStories starter corpus instead)")
                    .arg(QString::fromStdString(corpus.instead_of));
    }
  }
  if (isAblating())
    error = tr("An ablation is already running.");
  else if (!run)
    error = tr("Open a run first.");
  else if (!run->has_info)
    error = tr("%1 has no checkpoint yet.").arg(run->name());
  else if (!run->task.empty())
    error = tr("The ablation scores a corpus's validation windows; %1 was trained on a task (%2) and has none. "
               "Its test accuracy: hsm eval %1, or the Lab view.")
                .arg(run->name(), QString::fromStdString(run->task));
  else if (data.isEmpty() || !QFileInfo::exists(data))
    error = tr("Choose a corpus: %1").arg(data.isEmpty() ? tr("the run records none") : tr("%1 does not exist").arg(data));
  state_->setLastError(error);
  if (!error.isEmpty()) {
    status_->setText(error);
    return false;
  }
  QString windows = windowsBox_->currentData().toString();
  if (windows.isEmpty()) windows = QString::fromStdString(run->info.training.windows);
  state_->startAblation(*run, data, windows, maxWindows_->value());
  progress_->setValue(0);
  progress_->setFormat(tr("starting · %p%"));
  status_->setText(tr("Evaluating with each layer and head knocked out on %1…").arg(QFileInfo(data).fileName()) + instead);
  updateButtons();
  return true;
}

void ProbeView::cancelAblation() { state_->cancelAblation(); }

void ProbeView::showProbe() {
  const hsm::Probe& p = probe();
  const hsm::TaskPrompt& example = state_->example();
  if (example.task.empty())
    exampleBar_->clearAnswers();
  else
    exampleBar_->showAnswers(example);
  const int layers = static_cast<int>(p.rollout.size());
  layerSlider_->blockSignals(true);
  layerSlider_->setRange(0, std::max(0, layers - 1));
  layerSlider_->setValue(std::max(0, layers - 1));  // the whole model first
  layerSlider_->blockSignals(false);
  drawLens();
  drawRollout();
  status_->setText(tr("%1 tokens. Hover a lens cell for its top 5; move the slider to see the rollout build up.")
                       .arg(p.length) +
                   (example.task.empty() ? QString()
                                         : tr(" ▸ marks the answer positions; there the lens ranks the right answer.")));
  updateButtons();
  emit probeFinished();
}

void ProbeView::showAblation(const QString& runDir) {
  const hsm::AblationReport& r = ablation();
  progress_->setValue(1000);
  progress_->setFormat(tr("done · %1 evaluations · %2 s").arg(r.ablations.size() + 1).arg(r.seconds, 0, 'f', 1));
  status_->setText(tr("%1: base loss %2 on %3 tokens (%4 %5 windows) of the %6 split; the bars show how much "
                       "each knock-out raises it.")
                       .arg(runName(runDir))
                       .arg(r.base_loss, 0, 'f', 4)
                       .arg(r.tokens)
                       .arg(r.window_count)
                       .arg(QString::fromStdString(r.windows), QString::fromStdString(r.split)));
  drawAblation();
  updateButtons();
  emit ablationFinished();
}

void ProbeView::showProbeFailure(const QString& message, bool reprobe) {
  status_->setText(tr("Probe failed: %1").arg(message));
  exampleBar_->clearAnswers();
  updateButtons();
  emit probeFinished();
  if (reprobe) runProbe();
}

void ProbeView::showAblationFailure(const QString& message, bool cancelled) {
  progress_->setFormat(cancelled ? tr("cancelled") : tr("failed"));
  status_->setText(cancelled ? tr("Ablation cancelled.") : tr("Ablation failed: %1").arg(message));
  updateButtons();
  emit ablationFinished();
}

QString ProbeView::lensTooltip(int row, int column) const {
  if (!hasProbe() || row < 0 || row >= static_cast<int>(probe().lens.size()) || column < 0 || column >= probe().length)
    return {};
  const hsm::LensLayer& l = probe().lens[static_cast<size_t>(row)];
  const auto c = static_cast<size_t>(column);
  QString html = tr("<b>%1</b>, after “%2” (position %3)<br>KL to the last layer %4 nats")
                     .arg(stream_name(l.layer), pieceLabel(probe().tokens[c]).toHtmlEscaped())
                     .arg(column)
                     .arg(l.kl_to_final[c], 0, 'f', 4);
  const bool answer = std::count(state_->example().answers.begin(), state_->example().answers.end(), column) > 0;
  if (l.target_rank[c] > 0 && answer)  // a task example's answer: the lens ranks the right one
    html += tr("<br>right answer “%1”: rank %2")
                .arg(pieceLabel(state_->example().answer_labels[static_cast<size_t>(
                                     std::find(state_->example().answers.begin(), state_->example().answers.end(), column) -
                                     state_->example().answers.begin())])
                         .toHtmlEscaped())
                .arg(l.target_rank[c]);
  else if (l.target_rank[c] > 0 && c + 1 < probe().tokens.size())
    html += tr("<br>actual next “%1”: rank %2")
                .arg(pieceLabel(probe().tokens[c + 1]).toHtmlEscaped())
                .arg(l.target_rank[c]);
  html += QStringLiteral("<table>");
  for (size_t j = 0; j < std::min<size_t>(5, l.top[c].size()); ++j)
    html += QStringLiteral("<tr><td>%1</td><td align=right>&nbsp;%2</td></tr>")
                .arg(pieceLabel(l.top[c][j].piece).toHtmlEscaped())
                .arg(l.top[c][j].prob, 0, 'f', 3);
  return html + QStringLiteral("</table>");
}

void ProbeView::drawLens() {
  lensTable_->clear();
  if (!hasProbe()) {
    lensTable_->setRowCount(0);
    lensTable_->setColumnCount(0);
    return;
  }
  const int rows = static_cast<int>(probe().lens.size()), cols = static_cast<int>(probe().length);
  lensTable_->setRowCount(rows);
  lensTable_->setColumnCount(cols);
  const QStringList header = tokenLabels(true);
  QStringList side;
  for (const hsm::LensLayer& l : probe().lens) side << stream_name(l.layer);
  lensTable_->setHorizontalHeaderLabels(header);
  lensTable_->setVerticalHeaderLabels(side);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const hsm::LensToken& top = probe().lens[static_cast<size_t>(r)].top[static_cast<size_t>(c)].front();
      auto* item = new QTableWidgetItem(pieceLabel(top.piece));
      item->setBackground(TokenText::tint(top.prob));
      item->setToolTip(lensTooltip(r, c));
      lensTable_->setItem(r, c, item);
    }
}

void ProbeView::setRolloutLayer(int layer) { layerSlider_->setValue(layer); }
int ProbeView::rolloutLayer() const { return layerSlider_->value(); }
QString ProbeView::rolloutKindText() const { return rolloutKind_->text(); }

void ProbeView::drawRollout() {
  if (!hasProbe() || probe().rollout.empty()) {
    rollout_->clearWithMessage(tr("Probe a prompt to see where information flows."));
    rolloutKind_->clear();
    return;
  }
  const int layer = std::clamp(layerSlider_->value(), 0, static_cast<int>(probe().rollout.size()) - 1);
  const hsm::RolloutLayer& r = probe().rollout[static_cast<size_t>(layer)];
  const int L = static_cast<int>(probe().length);
  rollout_->setPinnedRows(TaskExampleBar::answerRows(state_->example()));
  rollout_->setMatrix(L, L, std::vector<double>(r.matrix.begin(), r.matrix.end()), tokenLabels(true),
                      tokenLabels(false));
  layerLabel_->setText(tr("after layer %1 of %2").arg(r.layer).arg(probe().rollout.size()));
  rolloutKind_->setText(rollout_kind_text(probe().matrix_kinds));
  static_cast<WrappedLabel*>(rolloutKind_)->fit();
}

QStringList ProbeView::tokenLabels(bool marked) const {
  // A task example's answer positions are marked (the lens's columns, the rollout's rows).
  QStringList labels;
  for (const std::string& t : probe().tokens) labels << pieceLabel(t);
  if (marked)
    for (int64_t t : state_->example().answers)
      if (t < labels.size()) labels[static_cast<int>(t)].prepend(QStringLiteral("▸"));
  return labels;
}

QString ProbeView::ablationOf() const { return ablationOf_->text(); }

void ProbeView::drawAblation() {
  ablationOf_->setText(hasAblation() ? tr("Ablation of <b>%1</b>: base loss %2 on %3 tokens of the %4 split.")
                                          .arg(runName(state_->ablationRun()).toHtmlEscaped())
                                          .arg(ablation().base_loss, 0, 'f', 4)
                                          .arg(ablation().tokens)
                                          .arg(QString::fromStdString(ablation().split))
                                    : QString());
  QCustomPlot* p = ablationPlot_->plot();
  for (int i = p->itemCount() - 1; i >= 0; --i) p->removeItem(i);
  QVector<double> keys, values;
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  const int n = static_cast<int>(ablation().ablations.size());
  // Every bar labelled, kAblationBarHeight pixels each; the pane scrolls when they do not fit.
  ablationPlot_->setMinimumHeight(std::max(kAblationMinHeight, n * kAblationBarHeight + kAblationPlotMargin));
  for (int i = 0; i < n; ++i) {  // the largest rise at the top
    const hsm::Ablation& a = ablation().ablations[static_cast<size_t>(i)];
    keys << n - 1 - i;
    values << a.delta;
    ticker->addTick(n - 1 - i, a.knock_out.head < 0 ? tr("L%1").arg(a.knock_out.layer)
                                                  : tr("L%1 H%2").arg(a.knock_out.layer).arg(a.knock_out.head));
  }
  bars_->setData(keys, values);  // keys descend: QCustomPlot sorts them
  p->yAxis->setTicker(ticker);
  const RunEntry* run = currentRun();
  if (n == 0) {
    auto* text = new QCPItemText(p);
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(
        run && !run->task.empty()
            ? tr("The ablation scores a corpus's validation windows;\na task run has none (its test accuracy: the "
                 "Losses view, hsm eval).")
        : state_->ablationRun().isEmpty()
            ? tr("Run the ablation: each layer's mixer, and each head,\nknocked out in turn on the validation split.")
            : tr("No ablation of %1 yet. Run it: each layer's mixer, and each head,\nknocked out in turn on "
                 "the validation split.")
                  .arg(runName(state_->ablationRun())));
    text->setColor(QColor(90, 90, 90));
    p->xAxis->setRange(0, 1);
    p->yAxis->setRange(0, 1);
  } else {
    double lo = 0, hi = 0;
    for (double v : values) lo = std::min(lo, v), hi = std::max(hi, v);
    const double pad = 0.08 * std::max(hi - lo, 1e-6);
    p->xAxis->setRange(lo - pad, hi + pad);
    p->yAxis->setRange(-0.7, n - 0.3);
  }
  p->replot(QCustomPlot::rpQueuedReplot);
}

QString ProbeView::lensCsv() const {
  QString out = QStringLiteral("stream,position,token,top1,prob,kl_to_final,target_rank\n");
  for (const hsm::LensLayer& l : probe().lens)
    for (int64_t t = 0; t < probe().length; ++t) {
      const auto c = static_cast<size_t>(t);
      out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7\n")
                 .arg(l.layer)
                 .arg(t)
                 .arg(quote(QString::fromStdString(probe().tokens[c])), quote(QString::fromStdString(l.top[c][0].piece)))
                 .arg(QString::number(l.top[c][0].prob, 'g', 8), QString::number(l.kl_to_final[c], 'g', 8))
                 .arg(l.target_rank[c] > 0 ? QString::number(l.target_rank[c]) : QString());
    }
  return out;
}

QString ProbeView::exportLens(const QString& path) {
  if (!path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)) return export_widget(lensTable_, path);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text))
    return tr("cannot write %1: %2").arg(path, f.errorString());
  QTextStream(&f) << lensCsv();
  return {};
}

QStringList ProbeView::exportAll(const QString& folder, QString* error) {
  QStringList written;
  QDir().mkpath(folder);
  auto one = [&](const QString& name, const std::function<QString(const QString&)>& write) {
    for (const char* ext : {"png", "pdf", "svg", "csv"}) {
      const QString path = QDir(folder).filePath(QStringLiteral("%1.%2").arg(name, QLatin1String(ext)));
      const QString e = write(path);
      if (!e.isEmpty()) {
        if (error && error->isEmpty()) *error = e;
        continue;
      }
      written << path;
    }
  };
  // Named for the run and the view ("<run>-probe-lens.png"), so a folder of exports says what each is of.
  const RunEntry* run = runs_->currentRun();
  const QString stem = export_stem(run ? run->dir : QString(), QStringLiteral("probe"));
  one(stem + QStringLiteral("-lens"), [this](const QString& path) { return exportLens(path); });
  one(stem + QStringLiteral("-rollout"), [this](const QString& path) { return rollout_->exportTo(path); });
  one(stem + QStringLiteral("-ablation"), [this](const QString& path) { return ablationPlot_->exportTo(path); });
  if (hasProbe() && !state_->example().task.empty()) {  // what the lens and rollout are of: the task example
    const QString path = QDir(folder).filePath(stem + QStringLiteral("-example.json"));
    QFile f(path);
    const QByteArray json = QJsonDocument(TaskExampleBar::json(state_->example())).toJson();
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(json) == json.size())
      written << path;
    else if (error && error->isEmpty())
      *error = tr("cannot write %1").arg(path);
  }
  return written;
}

void ProbeView::exportDialog() {
  exportAllDialog(
      tr("Export the Probe view's plots into"),
      [this](const QString& folder, QString* error) { return exportAll(folder, error); }, status_);
}

}  // namespace studio
