#include "gui/views/diagnostics_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QTextStream>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/widgets/glossary.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/views/diagnosis_state.h"
#include "gui/views/diagnostics_timeline.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/layout_helpers.h"
#include "gui/widgets/radar_chart.h"
#include "gui/widgets/task_example_bar.h"
#include "gui/widgets/widget_export.h"
#include "hsm/diagnostics_log.h"
#include "hsm/prober.h"

namespace studio {
namespace {

// The indicator columns of the table: raw, with the normalised value next to the three
// the paper normalises (DA footnote 3).
struct IndicatorColumn {
  const char* title;
  int index;        // 0 entropy, 1 conc, 2 headdiv, 3 sink, 4.. locfoc N
  bool normalised;  // read from LayerDiagnostics::normalised
};
const IndicatorColumn kColumns[] = {{"ENTROPY", 0, false},    {"ENTROPY (norm)", 0, true}, {"CONC", 1, false},
                                    {"CONC (norm)", 1, true}, {"HEADDIV", 2, false},       {"HEADDIV (norm)", 2, true},
                                    {"SINK", 3, false},       {"LocFoc0", 4, false},       {"LocFoc1", 5, false},
                                    {"LocFoc2", 6, false},    {"LocFoc3", 7, false}};
constexpr int kFixedColumns = 3;  // layer, mixer, matrix

QString kind_text(hsm::MatrixKind k, const std::string& mixer) {
  switch (k) {
    case hsm::MatrixKind::kAttention:
      // A mixer whose weights are not a softmax says so in its registry entry (DA's taylor).
      if (hsm::is_mixer_id(mixer) && *hsm::mixer_info(mixer).matrix_note)
        return QObject::tr("attention weights (%1; rows sum to 1)").arg(QString::fromUtf8(hsm::mixer_info(mixer).matrix_note));
      return QObject::tr("attention weights (softmax; rows sum to 1)");
    case hsm::MatrixKind::kLinear:
      return QObject::tr("exact linear map of the mixer, each row scaled to sum to 1");
    case hsm::MatrixKind::kJacobian:
      return QObject::tr("Jacobian norm ‖∂y_i/∂x_k‖ at this prompt, each row scaled to sum to 1");
  }
  return {};
}

QString token_label(const std::string& piece) {
  QString s = QString::fromStdString(piece);
  s.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
  return s;
}

QString quote(QString s) { return QStringLiteral("\"%1\"").arg(s.replace('"', QLatin1String("\"\""))); }

}  // namespace

QStringList DiagnosticsView::indicatorNames() {
  return {QStringLiteral("ENTROPY"), QStringLiteral("CONC"),    QStringLiteral("HEADDIV"), QStringLiteral("SINK"),
          QStringLiteral("LocFoc0"), QStringLiteral("LocFoc1"), QStringLiteral("LocFoc2"), QStringLiteral("LocFoc3")};
}

DiagnosticsView::DiagnosticsView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent) {
  for (Column& c : columns_) c.state = new DiagnosisState(engine, this);
  build();
  connectSignals();
  refreshRunChoices();
  leaveRun();
  followCurrentRun();
}

void DiagnosticsView::build() {
  buildControls();
  QWidget* rows = buildRows();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(buildPromptBar());
  layout->addLayout(buildChoiceBar());
  layout->addWidget(status_);
  // The plots and tables scroll when the window is short; the prompt's Run and Export stay (issue 48).
  layout->addWidget(scrollWhenShort(rows), 1);
}

void DiagnosticsView::buildControls() {
  promptEdit_ =
      new QLineEdit(QStringLiteral("Once upon a time, there was a little girl named Lily. She loved to play."));
  promptEdit_->setObjectName(QStringLiteral("diag_prompt"));
  promptEdit_->setPlaceholderText(tr("A prompt (its first context tokens are used)"));
  layerBox_ = new QComboBox;
  layerBox_->setObjectName(QStringLiteral("diag_layer"));
  layerBox_->setMinimumContentsLength(12);
  layerBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // "3 · hsm_ab_mh (knocked out)" whole
  headBox_ = new QComboBox;
  headBox_->setObjectName(QStringLiteral("diag_head"));
  headBox_->setMinimumContentsLength(12);
  headBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  runButton_ = new QPushButton(tr("Run"));
  runButton_->setObjectName(QStringLiteral("diag_run"));
  runButton_->setDefault(true);
  compare_ = new QCheckBox(tr("Compare with"));
  compare_->setObjectName(QStringLiteral("diag_compare"));
  compareRun_ = new QComboBox;
  compareRun_->setObjectName(QStringLiteral("diag_compare_run"));
  compareRun_->setMinimumContentsLength(16);
  compareRun_->setEnabled(false);
  exportButton_ = new QPushButton(tr("Export all…"));
  exportButton_->setObjectName(QStringLiteral("diag_export"));
  exportButton_->setToolTip(tr("Every plot as PNG, PDF and SVG, and the numbers as CSV, into a folder"));
  status_ = new QLabel(tr("Choose a run, type a prompt and press Run."));
  status_->setObjectName(QStringLiteral("diag_status"));
  status_->setWordWrap(true);
}

QHBoxLayout* DiagnosticsView::buildPromptBar() {
  promptLabel_ = new QLabel(tr("Prompt"));
  example_ = new TaskExampleBar(QStringLiteral("diag"));
  example_->hide();
  auto* bar = new QHBoxLayout;
  bar->addWidget(promptLabel_);
  bar->addWidget(promptEdit_, 1);
  bar->addWidget(example_, 1);
  bar->addWidget(runButton_);
  return bar;
}

QHBoxLayout* DiagnosticsView::buildChoiceBar() {
  auto* bar2 = new QHBoxLayout;
  bar2->addWidget(new QLabel(tr("Layer")));
  bar2->addWidget(layerBox_);
  bar2->addWidget(new QLabel(tr("Head")));
  bar2->addWidget(headBox_);
  bar2->addSpacing(16);
  bar2->addWidget(compare_);
  bar2->addWidget(compareRun_);
  bar2->addStretch(1);
  bar2->addWidget(exportButton_);
  return bar2;
}

QWidget* DiagnosticsView::buildRows() {
  timeline_ = new DiagnosticsTimeline;
  timeline_->setObjectName(QStringLiteral("diag_timeline"));
  source_ = new QLabel;
  source_->setObjectName(QStringLiteral("diag_source"));
  source_->setWordWrap(true);

  auto* sides = new QSplitter(Qt::Horizontal);
  sides->addWidget(buildColumn(columns_[0], QString()));
  sides->addWidget(buildColumn(columns_[1], QStringLiteral("-b")));
  columns_[1].box->hide();
  auto* below = new QWidget;
  auto* bl = new QVBoxLayout(below);
  bl->setContentsMargins(0, 0, 0, 0);
  bl->addWidget(source_);
  bl->addWidget(sides, 1);
  auto* rows = new QSplitter(Qt::Vertical);
  // The timeline scrolls when its pane is short (issue 48): its plot and controls, shown for a
  // run that recorded diagnoses over training, no longer add to the view's smallest height
  // (the window grew to 772 px, past a 1280x720 screen).
  QScrollArea* timelineScroll = scrollWhenShort(timeline_, Qt::ScrollBarAlwaysOff);
  timelineScroll->setMinimumWidth(0);  // the view's width is the plots' to decide, as before
  timelineScroll->setMinimumHeight(timeline_->minimumSizeHint().height());  // its message's, as before
  rows->addWidget(timelineScroll);
  rows->addWidget(below);
  rows->setStretchFactor(0, 1);
  rows->setStretchFactor(1, 3);
  // Without records the pane keeps to its message (at 1280x720 it left 100 px blank under it,
  // issue 48); a run with records gets the plot's room, a quarter of the height.
  const int message = timelineScroll->minimumHeight();
  rows->setSizes({message, 1000});
  connect(timeline_, &DiagnosticsTimeline::hasRecordsChanged, rows, [rows, message](bool has) {
    const QList<int> sizes = rows->sizes();
    const int total = sizes.value(0) + sizes.value(1);
    if (has && sizes.value(0) < 200 && total > 400) rows->setSizes({total / 4, total - total / 4});
    if (!has && sizes.value(0) > message) rows->setSizes({message, total - message});
  });
  return rows;
}

void DiagnosticsView::connectSignals() {
  connect(runButton_, &QPushButton::clicked, this, [this] { run(); });
  connect(promptEdit_, &QLineEdit::returnPressed, this, [this] { run(); });
  connect(example_, &TaskExampleBar::exampleChosen, this, [this] {
    if (isRunning())
      rerun_ = true;  // run when the one under way answers
    else
      run();
  });
  connect(layerBox_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    refreshHeads();
    drawMatrices();
  });
  connect(headBox_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) drawMatrices();
  });
  connect(compare_, &QCheckBox::toggled, this, [this](bool on) {
    compareRun_->setEnabled(on);
    columns_[1].box->setVisible(on);
    followComparedRun();
  });
  connect(compareRun_, &QComboBox::currentIndexChanged, this, &DiagnosticsView::followComparedRun);
  connect(exportButton_, &QPushButton::clicked, this, &DiagnosticsView::exportDialog);
  connect(runs_, &RunList::runAdded, this, &DiagnosticsView::refreshRunChoices);
  connect(runs_, &RunList::runRemoved, this, &DiagnosticsView::refreshRunChoices);
  connect(runs_, &RunList::currentChanged, this, &DiagnosticsView::refreshRunChoices);
  connect(runs_, &RunList::currentChanged, this, &DiagnosticsView::followCurrentRun);
  connect(timeline_, &DiagnosticsTimeline::stepChanged, this, [this] { drawIndicators(columns_[0]); });
  for (Column& c : columns_) connectState(c);
}

void DiagnosticsView::clearColumn(Column& c, const QString& runDir) {
  c.state->clear(runDir);
  c.title->setText(runDir.isEmpty() ? QString() : tr("<b>%1</b> · no diagnosis yet").arg(runName(runDir)));
  drawIndicators(c);
}

void DiagnosticsView::showPromptKind() {
  const RunEntry* run = currentRun();
  example_->follow(run ? run->task : std::string(), {promptLabel_, promptEdit_});
}

void DiagnosticsView::leaveRun() {
  // What column 0 shows is of the current run, or nothing: another run's diagnosis never stays
  // under this one's name. (A diagnosis of the run left still under way is dropped as it comes.)
  showPromptKind();
  const QString dir = currentRunDir();
  if (columns_[0].state->runDir() != dir || dir.isEmpty()) {
    clearColumn(columns_[0], dir);
    drawMatrices();
    status_->setText(dir.isEmpty()
                         ? tr("No run open: open a run folder (Ctrl+O) or train one.")
                         : tr("No diagnosis of %1 yet: press Run (the view runs it when shown).").arg(runName(dir)));
  }
}

void DiagnosticsView::showRun() {
  const RunEntry* current = currentRun();
  if (current && current->has_info && columns_[0].state->runDir() == currentRunDir() && !columns_[0].state->has() && !columns_[0].state->isRunning())
    run();
}

void DiagnosticsView::followComparedRun() {
  // "Compare with" shows the chosen run's diagnosis of the same prompt, or says it has none:
  // computed at once when the view is shown (a diagnosis is cheap).
  const QString dir = compare_->isChecked() ? compareRun_->currentData().toString() : QString();
  if (dir.isEmpty() || columns_[1].state->runDir() == dir) return;
  clearColumn(columns_[1], dir);
  drawMatrices();
  const RunEntry* current = currentRun();
  const bool hasPrompt = (current && !current->task.empty()) || !prompt().trimmed().isEmpty();
  if (isVisible() && !columns_[1].state->isRunning() && hasPrompt) diagnose(columns_[1]);
}

void DiagnosticsView::followCurrentRun() {
  const RunEntry* run = runs_->currentRun();
  timeline_->setRun(run ? run->dir : QString());
}

QString DiagnosticsView::indicatorSource() const { return source_->text(); }

QWidget* DiagnosticsView::buildColumn(Column& c, const QString& suffix) {
  buildColumnWidgets(c, suffix);
  auto* top = new QSplitter(Qt::Horizontal);
  top->addWidget(c.matrix);
  top->addWidget(c.radar);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 2);
  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(c.overview);
  bottom->addWidget(c.table);
  bottom->setStretchFactor(0, 2);
  bottom->setStretchFactor(1, 3);
  auto* rows = new QSplitter(Qt::Vertical);
  rows->addWidget(top);
  rows->addWidget(bottom);
  rows->setStretchFactor(0, 3);
  rows->setStretchFactor(1, 2);
  rows->setSizes({480, 320});  // the overview's layer rows stay readable
  auto* l = new QVBoxLayout(c.box);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(c.title);
  l->addWidget(c.kind);
  l->addWidget(rows, 1);
  return c.box;
}

void DiagnosticsView::buildColumnWidgets(Column& c, const QString& suffix) {
  c.box = new QWidget;
  c.title = new QLabel;
  c.title->setObjectName(QStringLiteral("diag_title") + suffix);
  c.kind = new QLabel;
  c.kind->setObjectName(QStringLiteral("matrix_kind") + suffix);
  c.kind->setWordWrap(true);
  c.matrix = new HeatmapPanel(tr("Mixing matrix") + (suffix.isEmpty() ? QString() : tr(" (compared)")), tr("key"),
                              tr("query"));
  c.matrix->setObjectName(QStringLiteral("matrix_heatmap") + suffix);
  c.matrix->setScaleLabel(tr("weight"));
  c.radar = new RadarChart;
  c.radar->setObjectName(QStringLiteral("radar") + suffix);
  c.radar->setAxes(indicatorNames());
  c.radar->setToolTip(help::indicatorsToolTip());
  c.radar->setTitle(tr("Indicators per layer (normalised)"));
  c.overview = new HeatmapPanel(tr("Indicators overview") + (suffix.isEmpty() ? QString() : tr(" (compared)")),
                                tr("indicator"), tr("layer"));
  c.overview->setObjectName(QStringLiteral("overview_heatmap") + suffix);
  c.overview->setScaleLabel(tr("normalised"));
  c.table = new QTableWidget(0, kFixedColumns + static_cast<int>(std::size(kColumns)));
  c.table->setObjectName(QStringLiteral("indicator_table") + suffix);
  QStringList headers = {tr("Layer"), tr("Mixer"), tr("Matrix")};
  for (const IndicatorColumn& ic : kColumns) headers << QString::fromLatin1(ic.title);
  c.table->setHorizontalHeaderLabels(headers);
  help::setIndicatorToolTips(c.table);
  c.table->verticalHeader()->setVisible(false);
  c.table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  c.table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
}

void DiagnosticsView::refreshRunChoices() {
  const QString keep = compareRun_->currentData().toString();
  compareRun_->clear();
  for (int i = 0; i < runs_->count(); ++i) compareRun_->addItem(runs_->at(i).name(), runs_->at(i).dir);
  // The run chosen before, unless it is the current run (issue 69: the first run opened was
  // kept as its own comparison, hsm_ab against hsm_ab): then another open run.
  const int i = compareRun_->findData(keep);
  if (i >= 0 && (i != runs_->current() || runs_->count() == 1))
    compareRun_->setCurrentIndex(i);
  else if (runs_->count() > 1)
    compareRun_->setCurrentIndex(runs_->current() == 0 ? 1 : 0);
}

void DiagnosticsView::setPrompt(const QString& prompt) { promptEdit_->setText(prompt); }
QString DiagnosticsView::prompt() const { return promptEdit_->text(); }

void DiagnosticsView::setCompare(bool on, const QString& runDir) {
  if (!runDir.isEmpty()) {
    const int i = compareRun_->findData(QDir(runDir).absolutePath());
    if (i >= 0) compareRun_->setCurrentIndex(i);
  }
  compare_->setChecked(on);
}

bool DiagnosticsView::isRunning() const { return columns_[0].state->isRunning() || columns_[1].state->isRunning(); }

bool DiagnosticsView::run() {
  const RunEntry* run = runs_->currentRun();
  lastError_ = isRunning() ? tr("A diagnosis is already running.") : prompt_run_refusal(run, promptEdit_->text());
  if (!lastError_.isEmpty()) {
    status_->setText(lastError_);
    return false;
  }
  columns_[0].state->setRunDir(currentRunDir());
  diagnose(columns_[0]);
  if (compare_->isChecked() && compareRun_->currentIndex() >= 0) {
    columns_[1].state->setRunDir(compareRun_->currentData().toString());
    diagnose(columns_[1]);
  }
  runButton_->setEnabled(false);
  status_->setText(tr("Running the prompt through the model…"));
  return true;
}

void DiagnosticsView::diagnose(Column& c) {
  // The current run's kind says what the prompt is: its text, or a task run's test example.
  const RunEntry* current = currentRun();
  c.state->start(sstr(promptEdit_->text()), current ? current->task : std::string(), example_->example());
}

void DiagnosticsView::connectState(Column& c) {
  connect(c.state, &DiagnosisState::diagnosed, this, [this, &c] { onDiagnosed(c); });
  connect(c.state, &DiagnosisState::answeredForARunLeft, this, [this, &c] {
    // The column follows another run now: diagnosed again when it is to be shown.
    if (&c == &columns_[0] ? isVisible() : c.state->runDir() == compareRun_->currentData().toString()) diagnose(c);
    finishRound();
  });
  connect(c.state, &DiagnosisState::failed, this, [this, &c](const QString& message) { onFailed(c, message); });
}

void DiagnosticsView::onDiagnosed(Column& c) {
  const hsm::Diagnosis& d = c.state->diagnosis();
  const hsm::TaskPrompt& example = c.state->example();
  if (&c == &columns_[0]) example_->showAnswers(example);
  // A run with a what-if edit (the Weights view) is diagnosed as edited: say so.
  const hsm::WhatIf edits = engine_->whatIf(c.state->runDir());
  c.title->setText(
      tr("<b>%1</b> · %2%3 tokens · %4 layers")
          .arg(QFileInfo(c.state->runDir()).fileName())
          .arg(example.task.empty() ? QString() : tr("test example %1 · ").arg(example.index))
          .arg(d.length)
          .arg(d.layers.size()) +
      (edits.empty() ? QString()
                     : tr(" · <span style='color:#a05a00'>edited model (what-if: %1)</span>")
                           .arg(QString::fromStdString(hsm::what_if_label(edits)).toHtmlEscaped())));
  drawIndicators(c);
  finishRound();
}

void DiagnosticsView::finishRound() {
  if (isRunning()) return;
  runButton_->setEnabled(true);
  if (columns_[0].state->has())
    status_->setText(
        tr("Hover a cell for its exact value. Layer and head choose the matrix; the table, radar and "
           "overview show every layer.") +
        (columns_[0].state->example().task.empty()
             ? QString()
             : tr(" ▸ marks the answer positions: the row of each is where the model looks to answer.")));
  refreshSelectors();
  drawMatrices();
  emit finished();
  if (rerun_) {
    rerun_ = false;
    run();
  }
}

void DiagnosticsView::onFailed(Column& c, const QString& message) {
  lastError_ = message;
  status_->setText(tr("Diagnosis failed: %1").arg(message));
  if (&c == &columns_[0]) example_->clearAnswers();
  if (!isRunning()) {
    runButton_->setEnabled(true);
    emit finished();
    if (rerun_) {
      rerun_ = false;
      run();
    }
  }
}

void DiagnosticsView::refreshSelectors() {
  updating_ = true;
  const int keep = std::max(0, layerBox_->currentIndex());
  layerBox_->clear();
  const hsm::Diagnosis& d = columns_[0].state->diagnosis();
  for (const hsm::LayerDiagnostics& l : d.layers)
    layerBox_->addItem(tr("%1 · %2").arg(l.layer).arg(QString::fromStdString(l.mixer)) +
                       (l.knocked_out ? tr(" (knocked out)") : QString()));
  layerBox_->setCurrentIndex(std::min(keep, layerBox_->count() - 1));
  updating_ = false;
  refreshHeads();
}

void DiagnosticsView::refreshHeads() {
  updating_ = true;
  const int keep = std::max(0, headBox_->currentIndex());
  headBox_->clear();
  const hsm::Diagnosis& d = columns_[0].state->diagnosis();
  const int l = layerBox_->currentIndex();
  if (l >= 0 && l < static_cast<int>(d.layers.size()))
    for (const hsm::HeadDiagnostics& h : d.layers[l].heads)
      headBox_->addItem((h.shift >= 0 ? tr("head %1 (shift %2)").arg(h.head).arg(h.shift) : tr("head %1").arg(h.head)) +
                        (h.knocked_out && !d.layers[l].knocked_out ? tr(" (knocked out)") : QString()));
  headBox_->setCurrentIndex(std::min(keep, headBox_->count() - 1));
  updating_ = false;
}

void DiagnosticsView::setLayer(int layer) { layerBox_->setCurrentIndex(layer); }
void DiagnosticsView::setHead(int head) { headBox_->setCurrentIndex(head); }
int DiagnosticsView::layer() const { return layerBox_->currentIndex(); }
int DiagnosticsView::head() const { return headBox_->currentIndex(); }

QString DiagnosticsView::matrixKindText(int side) const { return columns_[side].kind->text(); }

void DiagnosticsView::drawMatrices() {
  for (int side = 0; side < 2; ++side) {
    Column& c = columns_[side];
    if (!c.state->has()) {
      c.matrix->clearWithMessage(c.state->runDir().isEmpty() ? tr("No diagnosis yet.")
                                                    : tr("No diagnosis of %1 yet.").arg(runName(c.state->runDir())));
      c.kind->clear();
      continue;
    }
    const hsm::Diagnosis& d = c.state->diagnosis();
    const int l = layer(), h = head();
    if (l < 0 || l >= static_cast<int>(d.layers.size()) || h < 0 || h >= static_cast<int>(d.layers[l].heads.size())) {
      c.matrix->clearWithMessage(tr("This model has no layer %1 head %2.").arg(l).arg(h));
      c.kind->setText(QString());
      continue;
    }
    const hsm::LayerDiagnostics& ld = d.layers[l];
    const hsm::HeadDiagnostics& hd = ld.heads[h];
    QStringList tokens;
    for (const std::string& t : d.tokens) tokens << token_label(t);
    // A task example's answer positions are marked on the query axis: their rows are where the
    // model looks to answer.
    const QStringList queries =
        c.state->example().task.empty() ? tokens : TaskExampleBar::markedLabels(c.state->example(), c.state->diagnosis().tokens);
    const int L = static_cast<int>(d.length);
    c.matrix->setPinnedRows(TaskExampleBar::answerRows(c.state->example()));
    c.matrix->setMatrix(L, L, std::vector<double>(hd.matrix.begin(), hd.matrix.end()), queries, tokens);
    c.kind->setText(tr("Layer %1 (%2), head %3%4 — <b>%5</b>: %6")
                        .arg(l)
                        .arg(QString::fromStdString(ld.mixer))
                        .arg(h)
                        .arg(hd.shift >= 0 ? tr(", shift %1").arg(hd.shift) : QString())
                        .arg(QString::fromLatin1(hsm::matrix_kind_name(ld.kind)), kind_text(ld.kind, ld.mixer)) +
                    (hd.knocked_out ? tr("<br><span style='color:#a05a00'><b>Knocked out</b> (what-if): its output "
                                         "is replaced by zero, so none of this reaches the residual stream; the "
                                         "matrix shows what it would mix.</span>")
                                    : QString()));
  }
}

void DiagnosticsView::drawIndicators(Column& c) {
  // The current run's indicators come from the recorded step the timeline is on, or from the
  // prompt's diagnosis; the matrix heatmap always shows the prompt's diagnosis.
  std::vector<hsm::LayerDiagnostics> recorded;
  const bool atStep = &c == &columns_[0] && timeline_->showsStep();
  if (atStep) recorded = hsm::layers_of(*timeline_->currentRecord());
  const std::vector<hsm::LayerDiagnostics>& layers = atStep ? recorded : c.state->diagnosis().layers;
  if (&c == &columns_[0])
    source_->setText(atStep ? tr("<b>Table, radar and overview: step %1</b> of the recorded probe text “%2”. The "
                                 "mixing matrix shows the prompt's diagnosis of the current checkpoint.")
                                  .arg(timeline_->currentRecord()->step)
                                  .arg(QString::fromStdString(timeline_->currentRecord()->prompt).left(60).toHtmlEscaped())
                            : tr("Table, radar and overview: the prompt's diagnosis of the current checkpoint."));
  const int n = static_cast<int>(layers.size());
  c.table->setRowCount(n);
  QVector<RadarChart::Series> series;
  std::vector<double> overview;
  QStringList layerNames;
  for (int r = 0; r < n; ++r) {
    const hsm::LayerDiagnostics& l = layers[static_cast<size_t>(r)];
    const QColor color = RadarChart::layerColor(r, n);
    auto* layerItem = new QTableWidgetItem(QString::number(l.layer));
    layerItem->setData(Qt::DecorationRole, color);
    c.table->setItem(r, 0, layerItem);
    c.table->setItem(r, 1, new QTableWidgetItem(QString::fromStdString(l.mixer) +
                                                (l.knocked_out ? tr(" (knocked out)") : QString())));
    c.table->setItem(r, 2, new QTableWidgetItem(QString::fromLatin1(hsm::matrix_kind_name(l.kind))));
    for (int k = 0; k < static_cast<int>(std::size(kColumns)); ++k) {
      const double v = indicator_value(kColumns[k].normalised ? l.normalised : l.indicators, kColumns[k].index);
      auto* item = new QTableWidgetItem(QString::number(v, 'f', 4));
      item->setData(Qt::UserRole, v);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (kColumns[k].normalised) item->setForeground(QColor(90, 90, 90));
      c.table->setItem(r, kFixedColumns + k, item);
    }
    RadarChart::Series s{tr("L%1 %2").arg(l.layer).arg(QString::fromStdString(l.mixer)), color, {}};
    for (int a = 0; a < 8; ++a) s.values << indicator_value(l.normalised, a);
    series << s;
    overview.insert(overview.end(), s.values.begin(), s.values.end());
    layerNames << s.name;
  }
  c.radar->setSeries(series);
  if (n == 0)
    c.overview->clearWithMessage(tr("No diagnosis yet."));
  else
    c.overview->setMatrix(n, 8, overview, layerNames, indicatorNames());
}

QStringList DiagnosticsView::exportAll(const QString& folder, QString* error) {
  QStringList written;
  QDir().mkpath(folder);
  auto note = [&](const QString& path, const QString& e) {
    if (e.isEmpty())
      written << path;
    else if (error && error->isEmpty())
      *error = e;
  };
  for (int side = 0; side < 2; ++side) {
    Column& c = columns_[side];
    if (!c.state->has()) continue;
    // Every file names its run and the view ("<run>-diagnostics-..."), the compared side too.
    const QString prefix =
        export_stem(c.state->runDir(), side == 0 ? QStringLiteral("diagnostics") : QStringLiteral("diagnostics-compared"));
    const QDir dir(folder);
    // What the files are of: the run and the prompt's tokens.
    const QString about = dir.filePath(prefix + QStringLiteral(".json"));
    {
      QJsonArray tokens;
      for (const std::string& t : c.state->diagnosis().tokens) tokens.append(QString::fromStdString(t));
      QFile f(about);
      QJsonObject what{{QStringLiteral("run"), c.state->runDir()},
                       {QStringLiteral("tokens"), tokens},
                       {QStringLiteral("layer_shown"), layer()},
                       {QStringLiteral("head_shown"), head()}};
      if (!c.state->example().task.empty()) what.insert(QStringLiteral("task_example"), TaskExampleBar::json(c.state->example()));
      const QByteArray json = QJsonDocument(what).toJson();
      note(about, f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(json) == json.size()
                      ? QString()
                      : tr("cannot write %1").arg(about));
    }
    // Every layer's and head's matrix as numbers (rows = queries, columns = keys), not only the
    // one shown.
    QStringList tokenLabels;
    for (const std::string& t : c.state->diagnosis().tokens) tokenLabels << quote(QString::fromStdString(t));
    for (const hsm::LayerDiagnostics& l : c.state->diagnosis().layers)
      for (const hsm::HeadDiagnostics& h : l.heads) {
        const QString m = dir.filePath(prefix + QStringLiteral("-matrix-L%1-H%2.csv").arg(l.layer).arg(h.head));
        QFile f(m);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
          note(m, tr("cannot write %1").arg(m));
          continue;
        }
        QTextStream out(&f);
        const auto L = static_cast<size_t>(c.state->diagnosis().length);
        out << "\"query \\ key\"," << tokenLabels.join(QLatin1Char(',')) << '\n';
        for (size_t i = 0; i < L && h.matrix.size() >= L * L; ++i) {
          out << tokenLabels.value(static_cast<int>(i));
          for (size_t k = 0; k < L; ++k) out << ',' << QString::number(h.matrix[i * L + k], 'g', 9);
          out << '\n';
        }
        note(m, QString());
      }
    for (const char* ext : {"png", "pdf", "svg", "csv"}) {
      const QString e = QLatin1String(ext);
      const QString m = dir.filePath(prefix + QStringLiteral("-matrix-L%1-H%2.").arg(layer()).arg(head()) + e);
      if (e != QLatin1String("csv")) note(m, c.matrix->exportTo(m));  // the numbers: above, for every matrix
      const QString o = dir.filePath(prefix + QStringLiteral("-overview.") + e);
      note(o, c.overview->exportTo(o));
      const QString r = dir.filePath(prefix + QStringLiteral("-radar.") + e);
      if (e == QLatin1String("csv")) {
        QFile f(r);
        if (f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
          f.write(c.radar->csv().toUtf8());
          note(r, QString());
        } else {
          note(r, tr("cannot write %1").arg(r));
        }
      } else {
        note(r, export_widget(c.radar, r));
      }
    }
    // Every indicator, raw and normalised, per layer and per head.
    const QString t = dir.filePath(prefix + QStringLiteral("-indicators.csv"));
    QFile f(t);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
      note(t, tr("cannot write %1").arg(t));
      continue;
    }
    QTextStream out(&f);
    out << "layer,head,mixer,matrix_kind,values,entropy,conc,headdiv,sink,locfoc0,locfoc1,locfoc2,locfoc3\n";
    auto row = [&](const hsm::LayerDiagnostics& l, const QString& head, const char* which, const hsm::Indicators& i) {
      out << l.layer << ',' << head << ',' << quote(QString::fromStdString(l.mixer)) << ','
          << hsm::matrix_kind_name(l.kind) << ',' << which;
      for (int k = 0; k < 8; ++k) out << ',' << QString::number(indicator_value(i, k), 'g', 17);
      out << '\n';
    };
    for (const hsm::LayerDiagnostics& l : c.state->diagnosis().layers) {
      row(l, QStringLiteral("all"), "raw", l.indicators);
      row(l, QStringLiteral("all"), "normalised", l.normalised);
      for (const hsm::HeadDiagnostics& h : l.heads) row(l, QString::number(h.head), "raw", h.indicators);
    }
    note(t, QString());
  }
  if (written.isEmpty() && error && error->isEmpty()) *error = tr("Nothing to export: run a prompt first.");
  return written;
}

void DiagnosticsView::exportDialog() {
  exportAllDialog(
      tr("Export the diagnostics to"),
      [this](const QString& folder, QString* error) { return exportAll(folder, error); }, status_);
}

}  // namespace studio
