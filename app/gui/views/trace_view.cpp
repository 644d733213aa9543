#include "gui/views/trace_view.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDir>
#include <QFile>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/widgets/colour_maps.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/notice_bar.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/task_example_bar.h"
#include "gui/widgets/token_text.h"
#include "gui/widgets/widget_export.h"
#include "hsm/formation.h"
#include "hsm/mixer_kind.h"
#include "hsm/tokenizer.h"

namespace studio {
namespace {

// A heatmap's smallest height: a title, a few layers' rows and the rotated token labels.
constexpr int kMapMinHeight = 190;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The routes graph's smallest height: a few layers of nodes and the rotated token labels.
constexpr int kRoutesMinHeight = 240;
// The FFN's edge is drawn beside the residual's (both go from (l, i) to (l+1, i)).
constexpr double kFfnOffset = 0.18;

QColor route_color(hsm::RouteKind kind) {
  switch (kind) {
    case hsm::RouteKind::kMixer: return QColor(31, 119, 180);
    case hsm::RouteKind::kFfn: return QColor(230, 120, 20);
    case hsm::RouteKind::kResidual: break;
  }
  return QColor(90, 90, 90);
}

// A line's colour in a key: "━━ through a mixer" drawn in it.
QString line_key(const QColor& colour, const QString& text) {
  return QStringLiteral("<span style='color:%1'><b>━━</b></span>&nbsp;%2").arg(colour.name(), text.toHtmlEscaped());
}

QString quote(QString s) { return QStringLiteral("\"%1\"").arg(s.replace('"', QLatin1String("\"\""))); }

// The engine's name of site `site` (hsm::trace_sites(): "residual", "mixer", "ffn"), by which the
// view finds its maps.
const std::string& site_name(int site) { return hsm::trace_sites().at(static_cast<size_t>(site)); }

QString site_title(int site) {
  switch (site) {
    case 0:
      return QObject::tr("residual");
    case 1:
      return QObject::tr("mixer");
    default:
      return QObject::tr("FFN");
  }
}

QString r_text(double r) { return std::isfinite(r) ? QString::number(r, 'f', 3) : QStringLiteral("–"); }

}  // namespace

TraceView::TraceView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent), state_(new TraceState(engine, this)) {
  build();
  connectSignals();
  connectState();
  leaveRun();
  updateButtons();
}

void TraceView::build() {
  buildPromptControls();
  buildActionControls();
  buildHistoryControls();
  QHBoxLayout* prompts = buildPromptRow();
  QHBoxLayout* actions = buildActionRow();
  auto* steps = new QHBoxLayout;
  steps->addWidget(new QLabel(tr("Step")));
  steps->addWidget(stepSlider_, 1);
  steps->addWidget(stepLabel_, 2);
  QScrollArea* maps = buildMaps();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(prompts);
  layout->addLayout(actions);
  layout->addLayout(steps);
  layout->addWidget(makeWhatIfNotice(QStringLiteral("trace_whatif_box"),
                                     tr("The traces are of the edited model; Reset it in the Weights view.")));
  layout->addWidget(status_);
  layout->addWidget(maps, 1);
  setColumnVisible(1, false);
}

void TraceView::buildPromptControls() {
  cleanLabel_ = new QLabel(tr("Clean"));
  cleanEdit_ = new QLineEdit(QStringLiteral("Once upon a time, there was a girl named Lily. One day,"));
  cleanEdit_->setObjectName(QStringLiteral("trace_clean"));
  cleanEdit_->setPlaceholderText(tr("The clean prompt"));
  corruptLabel_ = new QLabel(tr("Corrupted"));
  corruptEdit_ = new QLineEdit(QStringLiteral("Once upon a time, there was a girl named Sue. One day,"));
  corruptEdit_->setObjectName(QStringLiteral("trace_corrupt"));
  corruptEdit_->setPlaceholderText(tr("The clean prompt with a token replaced (the same number of tokens)"));
  exampleBar_ = new TaskExampleBar(QStringLiteral("trace"));
  exampleBar_->hide();
  answerPosition_ = new QSpinBox;
  answerPosition_->setObjectName(QStringLiteral("trace_answer_position"));
  answerPosition_->setRange(-1, 1 << 20);
  answerPosition_->setValue(-1);
  answerPosition_->setSpecialValueText(tr("last"));
  answerPosition_->setToolTip(
      tr("The position whose next-token prediction is traced (a task run: its example's last answer)"));
  answerEdit_ = new QLineEdit;
  answerEdit_->setObjectName(QStringLiteral("trace_answer_token"));
  answerEdit_->setPlaceholderText(tr("model's top"));
  answerEdit_->setMaximumWidth(120);
  answerEdit_->setToolTip(
      tr("The answer: one token of the run's vocabulary (“Lily” is read as “ Lily” when only that "
         "is one token); empty: the clean run's most likely token there"));
}

void TraceView::buildActionControls() {
  compareBox_ = new QComboBox;
  compareBox_->setObjectName(QStringLiteral("trace_compare"));
  compareBox_->setToolTip(tr("Trace a second open run on the same prompts, beside the current one"));
  compareBox_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  compareBox_->setMinimumContentsLength(10);
  threshold_ = new QDoubleSpinBox;
  threshold_->setObjectName(QStringLiteral("trace_route_threshold"));
  threshold_->setRange(0.0, 1.0);
  threshold_->setDecimals(3);
  threshold_->setSingleStep(0.01);
  threshold_->setValue(0.04);
  threshold_->setToolTip(
      tr("Routes: keep the edges that carry at least this share of the node they go into (0: every edge "
         "reaching the answer); changing it re-prunes the graph without computing anything"));
  traceButton_ = new QPushButton(tr("Trace"));
  traceButton_->setObjectName(QStringLiteral("trace_run"));
  traceButton_->setDefault(true);
  cancelButton_ = new QPushButton(tr("Cancel"));
  cancelButton_->setObjectName(QStringLiteral("trace_cancel"));
  exportButton_ = new QPushButton(tr("Export all…"));
  exportButton_->setObjectName(QStringLiteral("trace_export"));
  exportButton_->setToolTip(tr("Every map as PNG, PDF, SVG and CSV, and all of them in one CSV"));
  progress_ = new QProgressBar;
  progress_->setObjectName(QStringLiteral("trace_progress"));
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat(tr("idle"));
  progress_->setTextVisible(true);
  progress_->setMaximumWidth(220);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("trace_status"));
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::PlainText);
}

void TraceView::buildHistoryControls() {
  stepSlider_ = new QSlider(Qt::Horizontal);
  stepSlider_->setObjectName(QStringLiteral("trace_step_slider"));
  stepSlider_->setRange(0, 0);
  stepSlider_->setPageStep(1);
  stepSlider_->setEnabled(false);
  stepSlider_->setToolTip(
      tr("The steps this run recorded a trace at while it trained (traces.jsonl) or keeps a model of (snapshots): "
         "a recorded step shows its maps and routes at once; at a kept step, Trace traces the model as it was then"));
  stepLabel_ = new QLabel;
  stepLabel_->setObjectName(QStringLiteral("trace_step_label"));
  stepLabel_->setWordWrap(true);
  stepLabel_->setTextFormat(Qt::PlainText);
  buildFormationPlot();
}

// The formation pane's plot: route share and accuracy over steps, the marks of the formed,
// accuracy and slider steps, each layer's mixer effect on the right axis (and its switch).
void TraceView::buildFormationPlot() {
  formation_ = new PlotPanel(tr("Over training: route share from the corrupted token, and accuracy"), tr("step"),
                             tr("share · accuracy"));
  formation_->setObjectName(QStringLiteral("trace_formation"));
  formation_->setLogOptionVisible(false);
  formation_->setMinimumHeight(200);
  formation_->setLegendBelow(4);
  QCustomPlot* p = formation_->plot();
  auto mark = [p](const char* name, const QPen& pen) {
    auto* line = new QCPItemStraightLine(p);
    line->setProperty("mark", QString::fromLatin1(name));
    line->setPen(pen);
    line->setVisible(false);
    return line;
  };
  formedMark_ = mark("formed", QPen(QColor(0, 140, 70), 2));
  accuracyMark_ = mark("accuracy", QPen(QColor(213, 94, 0), 2, Qt::DashLine));
  sliderMark_ = mark("slider", QPen(QColor(60, 60, 60), 1.5, Qt::DotLine));
  formation_->setRightLabel(tr("mixer effect"));
  mixerEffects_ = new QCheckBox(tr("Each layer's mixer effect (right axis)"));
  mixerEffects_->setObjectName(QStringLiteral("trace_formation_mixers"));
  mixerEffects_->setChecked(true);
  mixerEffects_->setToolTip(
      tr("Per layer, the largest share of log p(answer) that restoring that layer's mixer output at one position "
         "returns (the exact mixer map's largest cell); on the plateau it can pass 1, where the corruption moves "
         "the answer little"));
  connect(mixerEffects_, &QCheckBox::toggled, this, [this] { drawFormation(); });
  formationSummary_ = new QLabel;
  formationSummary_->setObjectName(QStringLiteral("trace_formation_summary"));
  formationSummary_->setWordWrap(true);
  formationSummary_->setTextFormat(Qt::RichText);
}

QWidget* TraceView::buildFormationPane() {
  auto* pane = new QWidget;
  pane->setObjectName(QStringLiteral("trace_formation_pane"));
  pane->hide();  // until a run with records is shown
  formationPane_ = pane;
  auto* layout = new QVBoxLayout(pane);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(formation_);
  layout->addWidget(mixerEffects_);
  layout->addWidget(formationSummary_);
  return pane;
}

QHBoxLayout* TraceView::buildPromptRow() {
  // Two rows of inputs: the prompts (or the task example), then the answer and the actions.
  auto* prompts = new QHBoxLayout;
  prompts->addWidget(cleanLabel_);
  prompts->addWidget(cleanEdit_, 1);
  prompts->addWidget(corruptLabel_);
  prompts->addWidget(corruptEdit_, 1);
  prompts->addWidget(exampleBar_, 1);
  return prompts;
}

QHBoxLayout* TraceView::buildActionRow() {
  auto* actions = new QHBoxLayout;
  actions->addWidget(new QLabel(tr("Answer after position")));
  actions->addWidget(answerPosition_);
  actions->addWidget(new QLabel(tr("token")));
  actions->addWidget(answerEdit_);
  actions->addWidget(new QLabel(tr("Beside")));
  actions->addWidget(compareBox_, 1);
  actions->addWidget(new QLabel(tr("Routes ≥")));
  actions->addWidget(threshold_);
  actions->addWidget(traceButton_);
  actions->addWidget(cancelButton_);
  actions->addWidget(progress_);
  actions->addWidget(exportButton_);
  return actions;
}

QScrollArea* TraceView::buildMaps() {
  // The maps: per run two columns (exact, attribution), per site a row; scrolled when the
  // window is small.
  auto* runsRow = new QHBoxLayout;
  runsRow->setContentsMargins(0, 0, 0, 0);
  for (int c = 0; c < kColumns; ++c) runsRow->addWidget(buildColumn(c), 1);
  auto* maps = new QWidget;
  auto* mapsLayout = new QVBoxLayout(maps);
  mapsLayout->setContentsMargins(0, 0, 0, 0);
  mapsLayout->addWidget(buildFormationPane());
  mapsLayout->addLayout(runsRow, 1);
  scroll_ = new QScrollArea;
  scroll_->setObjectName(QStringLiteral("trace_scroll"));
  scroll_->setWidget(maps);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  return scroll_;
}

QWidget* TraceView::buildColumn(int c) {
  Column& col = columns_[static_cast<size_t>(c)];
  const QString prefix = c == 0 ? QStringLiteral("trace") : QStringLiteral("trace_b");
  col.box = new QWidget;
  auto* grid = new QGridLayout(col.box);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(4);
  col.summary = new QLabel;
  col.summary->setObjectName(prefix + QStringLiteral("_summary"));
  col.summary->setWordWrap(true);
  col.summary->setTextFormat(Qt::RichText);
  grid->addWidget(col.summary, 0, 0, 1, 2);
  buildSiteMaps(c, grid);
  // The information flow routes into the answer, over nodes (layer boundary, position).
  col.routes = new PlotPanel(tr("%1routes into the answer").arg(c == 0 ? QString() : tr("B: ")), tr("position"),
                             tr("layer"));
  col.routes->setObjectName(prefix + QStringLiteral("_routes"));
  col.routes->setLogOptionVisible(false);
  col.routes->setMinimumHeight(kRoutesMinHeight);
  col.routes->setCsvWriter([this, c] { return routesCsv(c); });
  grid->addWidget(col.routes, 1 + kSites, 0, 1, 2);
  // The routes' colours said in words (issue 69: the plot had no key).
  auto* key = new QLabel(tr("Each line a route: %1 %2 %3; thicker and darker, more of the prediction; %4")
                             .arg(line_key(route_color(hsm::RouteKind::kMixer), tr("through a mixer")),
                                  line_key(route_color(hsm::RouteKind::kFfn), tr("through an FFN")),
                                  line_key(route_color(hsm::RouteKind::kResidual), tr("the residual path")),
                                  tr("<span style='color:#c81e1e'>●</span> the answer")));
  key->setObjectName(prefix + QStringLiteral("_routes_key"));
  key->setWordWrap(true);
  key->setTextFormat(Qt::RichText);
  grid->addWidget(key, 2 + kSites, 0, 1, 2);
  grid->setColumnStretch(0, 1);
  grid->setColumnStretch(1, 1);
  return col.box;
}

void TraceView::buildSiteMaps(int c, QGridLayout* grid) {
  Column& col = columns_[static_cast<size_t>(c)];
  const QString prefix = c == 0 ? QStringLiteral("trace") : QStringLiteral("trace_b");
  for (int s = 0; s < kSites; ++s) {
    // The second run's titles start "B:" (the export's file names come from the titles).
    const QString which = c == 0 ? QString() : tr("B: ");
    auto* exact = new HeatmapPanel(tr("%2%1 · exact").arg(site_title(s), which), tr("position"), tr("layer"));
    exact->setObjectName(prefix + QStringLiteral("_exact_%1").arg(qstr(site_name(s))));
    exact->setScaleLabel(tr("effect"));
    exact->setMinimumHeight(kMapMinHeight);
    auto* attribution =
        new HeatmapPanel(tr("%2%1 · attribution").arg(site_title(s), which), tr("position"), tr("layer"));
    attribution->setObjectName(prefix + QStringLiteral("_attribution_%1").arg(qstr(site_name(s))));
    attribution->setScaleLabel(tr("estimate"));
    attribution->setMinimumHeight(kMapMinHeight);
    // The route over the exact map: a line through each layer's strongest position.
    QCustomPlot* p = exact->plot();
    auto* route = new QCPCurve(p->xAxis, p->yAxis);  // a curve keeps the layers' order
    route->setPen(QPen(QColor(20, 20, 20), 1.5, Qt::DashLine));
    route->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(20, 20, 20), 1.5), Qt::NoBrush, 9));
    col.exact[static_cast<size_t>(s)] = exact;
    col.attribution[static_cast<size_t>(s)] = attribution;
    col.route[static_cast<size_t>(s)] = route;
    grid->addWidget(exact, 1 + s, 0);
    grid->addWidget(attribution, 1 + s, 1);
  }
}

void TraceView::connectSignals() {
  connect(traceButton_, &QPushButton::clicked, this, [this] { runTrace(); });
  connect(cancelButton_, &QPushButton::clicked, this, &TraceView::cancelTrace);
  connect(exportButton_, &QPushButton::clicked, this, &TraceView::exportDialog);
  connect(cleanEdit_, &QLineEdit::returnPressed, this, [this] { runTrace(); });
  connect(corruptEdit_, &QLineEdit::returnPressed, this, [this] { runTrace(); });
  connect(threshold_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
    for (int c = 0; c < kColumns; ++c) drawRoutes(c);
  });
  connect(stepSlider_, &QSlider::valueChanged, this, &TraceView::onStepChosen);
  connect(compareBox_, &QComboBox::currentIndexChanged, this, [this] { state_->loadHistory(1, compareRun()); });
  connect(runs_, &RunList::runAdded, this, &TraceView::fillCompareBox);
  connect(runs_, &RunList::runRemoved, this, &TraceView::fillCompareBox);
  connect(runs_, &RunList::infoChanged, this, &TraceView::fillCompareBox);
  // A run that trains records and keeps more steps at its checkpoints: read again.
  connect(runs_, &RunList::infoChanged, this, [this](int row) {
    if (row >= 0 && row < runs_->count() && runs_->at(row).dir == currentRunDir() && !currentRunDir().isEmpty())
      state_->loadHistory(0, currentRunDir());
  });
}

void TraceView::setPrompts(const QString& clean, const QString& corrupt) {
  cleanEdit_->setText(clean);
  corruptEdit_->setText(corrupt);
}
QString TraceView::cleanPrompt() const { return cleanEdit_->text(); }
QString TraceView::corruptPrompt() const { return corruptEdit_->text(); }

void TraceView::setAnswer(int position, const QString& token) {
  answerPosition_->setValue(position);
  answerEdit_->setText(token);
}

void TraceView::setCompareRun(const QString& dir) {
  const int i = dir.isEmpty() ? 0 : compareBox_->findData(QDir(dir).absolutePath());
  compareBox_->setCurrentIndex(std::max(i, 0));
}
QString TraceView::compareRun() const { return compareBox_->currentData().toString(); }

QString TraceView::statusText() const { return status_->text(); }

HeatmapPanel* TraceView::exactPanel(int column, int site) const {
  return columns_[static_cast<size_t>(column)].exact[static_cast<size_t>(site)];
}
HeatmapPanel* TraceView::attributionPanel(int column, int site) const {
  return columns_[static_cast<size_t>(column)].attribution[static_cast<size_t>(site)];
}
QString TraceView::summary(int column) const { return columns_[static_cast<size_t>(column)].summary->text(); }

void TraceView::fillCompareBox() {
  // Every open run with a checkpoint but the current one; the choice kept while it is open.
  const QString kept = compareRun(), current = currentRunDir();
  compareBox_->blockSignals(true);
  compareBox_->clear();
  compareBox_->addItem(tr("no second run"), QString());
  for (int i = 0; i < runs_->count(); ++i) {
    const RunEntry& r = runs_->at(i);
    if (r.dir != current && r.has_info) compareBox_->addItem(r.name(), r.dir);
  }
  compareBox_->setCurrentIndex(std::max(0, compareBox_->findData(kept)));
  compareBox_->blockSignals(false);
}

void TraceView::showPromptKind() {
  const RunEntry* run = currentRun();
  const bool task =
      exampleBar_->follow(run ? run->task : std::string(), {cleanLabel_, cleanEdit_, corruptLabel_, corruptEdit_});
  // A task example chooses its own answer.
  answerPosition_->setEnabled(!task);
  answerEdit_->setEnabled(!task);
}

void TraceView::leaveRun() {
  showPromptKind();
  fillCompareBox();
  const QString dir = currentRunDir();
  if (traceRun(0) != dir) {
    state_->dropTraces();
    for (int c = 0; c < kColumns; ++c) clearColumn(c, dir.isEmpty() ? tr("No run open.") : tr("No trace yet."));
    state_->setCurrentRun(dir);
    setColumnVisible(1, false);
    chosenStep_ = -1;
    atNewest_ = true;
    state_->loadHistory(0, dir);
    state_->loadHistory(1, compareRun());
    if (!isTracing())
      status_->setText(dir.isEmpty() ? tr("No run open.")
                                     : tr("No trace of %1 yet: give a clean prompt and a corrupted copy (one token "
                                          "replaced) and press Trace.")
                                           .arg(runName(dir)));
  }
  updateButtons();
}

void TraceView::showRun() {}  // a trace takes seconds: it runs when asked (the Trace button)

void TraceView::updateButtons() {
  traceButton_->setEnabled(!isTracing());
  cancelButton_->setEnabled(isTracing());
  exportButton_->setEnabled(hasTrace(0) || hasTrace(1));
  compareBox_->setEnabled(!isTracing());
}

bool TraceView::runTrace() {
  const RunEntry* run = currentRun();
  lastError_.clear();
  const bool taskRun = run && !run->task.empty();
  if (isTracing())
    lastError_ = tr("A trace is already running.");
  else if (!run)
    lastError_ = tr("Open a run first.");
  else if (!run->has_info)
    lastError_ = tr("%1 has no checkpoint yet.").arg(run->name());
  else if (!taskRun && cleanEdit_->text().trimmed().isEmpty())
    lastError_ = tr("Type a clean prompt.");
  else if (!taskRun && corruptEdit_->text().trimmed().isEmpty())
    lastError_ = tr("Type the corrupted prompt: the clean one with a token replaced.");
  else if (!taskRun && corruptEdit_->text() == cleanEdit_->text())
    lastError_ = tr("The corrupted prompt equals the clean one: replace a token in it.");
  const QString other = compareRun();
  const int otherRow = other.isEmpty() ? -1 : runs_->indexOf(other);
  if (lastError_.isEmpty() && !other.isEmpty() && otherRow < 0)
    lastError_ = tr("%1 is no longer open.").arg(runName(other));
  if (!lastError_.isEmpty()) {
    status_->setText(lastError_);
    return false;
  }
  state_->begin();
  startColumn(0, run->dir, taskRun);
  setColumnVisible(1, otherRow >= 0);
  // The same prompts (or the same test example) for the run beside it.
  if (otherRow >= 0) startColumn(1, runs_->at(otherRow).dir, taskRun);
  progress_->setValue(0);
  progress_->setFormat(tr("tracing · %p%"));
  status_->setText(tr("Patching every layer, position and site of %1%2…")
                       .arg(runName(run->dir), otherRow >= 0 ? tr(" and of %1").arg(runName(other)) : QString()));
  updateButtons();
  return true;
}

void TraceView::startColumn(int column, const QString& runDir, bool taskRun) {
  TraceAsk ask;
  ask.task = taskRun;
  ask.clean = cleanEdit_->text().toStdString();
  ask.corrupt = corruptEdit_->text().toStdString();
  ask.example = exampleBar_->example();
  ask.position = answerPosition_->value();
  ask.answer = answerEdit_->text().toStdString();
  // The model as it was at the slider's step, where the run keeps it (the run beside: where it
  // keeps the same step); else the newest checkpoint.
  const int64_t step = sliderStep();
  const TraceHistory& h = history(column);
  if (step >= 0 && h.run == runDir && h.keeps(step) && !(h.kept.size() > 0 && h.kept.back() == step)) ask.step = step;
  state_->start(column, runDir, ask);
  clearColumn(column, tr("Tracing…"));
}

void TraceView::connectState() {
  connect(state_, &TraceState::historyLoaded, this, &TraceView::onHistoryLoaded);
  connect(state_, &TraceState::progressed, this, &TraceView::showProgress);
  connect(state_, &TraceState::traced, this, &TraceView::drawColumn);
  connect(state_, &TraceState::failed, this, [this](int column, const QString& runDir, bool cancelled) {
    clearColumn(column, cancelled ? tr("Cancelled.") : tr("No trace of %1.").arg(runName(runDir)));
  });
  connect(state_, &TraceState::finished, this, &TraceView::onFinished);
}

void TraceView::showProgress() {
  if (const int perMille = state_->progressPerMille(); perMille >= 0) progress_->setValue(perMille);
}

void TraceView::cancelTrace() {
  if (!isTracing()) return;
  state_->cancel();
  status_->setText(tr("Cancelling…"));
}

void TraceView::onFinished() {
  if (state_->cancelled()) {
    lastError_ = tr("Trace cancelled.");
    progress_->setValue(0);
    progress_->setFormat(tr("cancelled"));
    status_->setText(lastError_);
  } else if (!state_->error().isEmpty()) {
    lastError_ = state_->error();
    progress_->setFormat(tr("failed"));
    status_->setText(tr("Trace failed: %1").arg(lastError_));
  } else if (!hasTrace(0)) {  // the current run changed while it traced
    progress_->setFormat(tr("idle"));
    status_->setText(tr("No trace of %1 yet: press Trace.").arg(runName(currentRunDir())));
  } else {
    progress_->setValue(1000);
    progress_->setFormat(tr("done"));
    const hsm::Trace& t = trace(0);
    status_->setText(
        tr("Each cell: the share of log p(“%1”) that returns when that one activation of the corrupted run is the "
           "clean run's (1 all, 0 none). ○ the route: per layer the position with the largest effect; → where an HSM "
           "layer's shift carries it. Routes: the edges of at least the chosen share that lead to the answer.")
            .arg(pieceLabel(t.answer_label)));
  }
  updateButtons();
  emit traceFinished();
}

void TraceView::setColumnVisible(int column, bool visible) {
  columns_[static_cast<size_t>(column)].box->setVisible(visible);
}

void TraceView::showAttribution(int column, bool visible) {
  // A record has no attribution maps: its exact maps take the column's whole width.
  Column& col = columns_[static_cast<size_t>(column)];
  for (HeatmapPanel* panel : col.attribution) panel->setVisible(visible);
  if (auto* grid = qobject_cast<QGridLayout*>(col.box->layout())) grid->setColumnStretch(1, visible ? 1 : 0);
}

void TraceView::clearColumn(int column, const QString& message) {
  Column& col = columns_[static_cast<size_t>(column)];
  showAttribution(column, true);
  col.summary->setText(column == 0 && !traceRun(0).isEmpty()
                           ? tr("<b>%1</b>").arg(runName(traceRun(0)).toHtmlEscaped())
                           : QString());
  for (int s = 0; s < kSites; ++s) {
    col.exact[static_cast<size_t>(s)]->clearWithMessage(message);
    col.attribution[static_cast<size_t>(s)]->clearWithMessage(message);
    col.route[static_cast<size_t>(s)]->data()->clear();
    QCustomPlot* p = col.exact[static_cast<size_t>(s)]->plot();
    for (int i = p->itemCount() - 1; i >= 0; --i)
      if (p->item(i)->property("route").toBool()) p->removeItem(i);
  }
  col.shown.clear();
  QCustomPlot* r = col.routes->plot();
  r->clearItems();
  r->clearGraphs();
  r->replot(QCustomPlot::rpQueuedReplot);
}

QStringList TraceView::layerLabels(const QString& runDir, int64_t layers) const {
  // "L2 ↦4" for a shift mixer (its shift, or one per head), "L1 attn" for any other: short, so
  // the map keeps its width; the summary and the help name the mixers.
  QStringList labels;
  const int row = runs_->indexOf(runDir);
  const hsm::ModelConfig* model = row >= 0 ? &runs_->at(row).model : nullptr;
  for (int64_t l = 0; l < layers; ++l) {
    QString label = QStringLiteral("L%1").arg(l);
    if (model && l < static_cast<int64_t>(model->layers.size()) &&
        hsm::is_mixer_id(model->layers[static_cast<size_t>(l)].mixer)) {
      const hsm::LayerSpec& spec = model->layers[static_cast<size_t>(l)];
      QStringList shifts;
      for (int64_t s : hsm::layer_shifts(hsm::mixer_info(spec.mixer).kind, l, spec.heads)) shifts << QString::number(s);
      label += shifts.isEmpty() ? QLatin1Char(' ') + QString::fromStdString(spec.mixer)
                                : QStringLiteral(" ↦") + shifts.join(QLatin1Char(','));
    }
    labels << label;
  }
  return labels;
}

void TraceView::drawColumn(int column) {
  const hsm::Trace& t = trace(column);
  Column& col = columns_[static_cast<size_t>(column)];
  const QString runDir = traceRun(column);
  const int L = static_cast<int>(t.layers), T = static_cast<int>(t.positions);
  // Positions: the clean token, ✗ where the corrupted copy differs, ▸ at the answer position.
  QStringList positions;
  for (int p = 0; p < T; ++p) {
    QString label = pieceLabel(t.clean_labels[static_cast<size_t>(p)]);
    if (std::find(t.corrupted_positions.begin(), t.corrupted_positions.end(), p) != t.corrupted_positions.end())
      label.prepend(QStringLiteral("✗"));
    if (p == t.answer_position) label.prepend(QStringLiteral("▸"));
    positions << label;
  }
  const QStringList layers = layerLabels(runDir, t.layers);
  for (int s = 0; s < kSites; ++s) {
    HeatmapPanel* exact = col.exact[static_cast<size_t>(s)];
    HeatmapPanel* attribution = col.attribution[static_cast<size_t>(s)];
    if (const hsm::TraceMap* m = hsm::trace_map(t.exact, site_name(s)))
      exact->setMatrix(L, T, m->effect, layers, positions, HeatmapPanel::Palette::kDiverging);
    else if (t.no_effect)  // a record of a step where the corruption did not move the answer
      exact->clearWithMessage(tr("No effect: the corruption left log p(answer) as it was."));
    else
      exact->clearWithMessage(tr("Not computed."));
    if (const hsm::TraceMap* m = hsm::trace_map(t.attribution, site_name(s)))
      attribution->setMatrix(L, T, m->effect, layers, positions, HeatmapPanel::Palette::kDiverging);
    else
      attribution->clearWithMessage(tr("Not computed."));
    drawRoute(column, s);
  }
  drawRoutes(column);
  QStringList corrupted;
  for (int64_t p : t.corrupted_positions)
    corrupted << tr("%1 “%2”→“%3”")
                     .arg(p)
                     .arg(pieceLabel(t.clean_labels[static_cast<size_t>(p)]).toHtmlEscaped(),
                          pieceLabel(t.corrupt_labels[static_cast<size_t>(p)]).toHtmlEscaped());
  const QString at = state_->traceStep(column) < 0 ? QString() : tr(" at step %1").arg(state_->traceStep(column));
  showAttribution(column, !state_->traceRecorded(column));
  if (state_->traceRecorded(column)) {
    for (int s = 0; s < kSites; ++s)
      col.attribution[static_cast<size_t>(s)]->clearWithMessage(
          tr("Not recorded while training: press Trace for the estimate."));
    const hsm::TraceRecord* r = history(column).record(state_->traceStep(column));
    col.summary->setText(
        tr("<b>%1</b>%2, recorded while it trained (validation accuracy %3, loss %4): answer “%5” after position %6; "
           "log p clean %7, corrupted %8 nats; corrupted at %9. Exact maps and routes (edges ≥ %10) as recorded.")
            .arg(runName(runDir).toHtmlEscaped(), at, r ? r_text(r->accuracy) : QStringLiteral("–"),
                 r ? r_text(r->val_loss) : QStringLiteral("–"), pieceLabel(t.answer_label).toHtmlEscaped())
            .arg(t.answer_position)
            .arg(t.clean_logprob, 0, 'f', 4)
            .arg(t.corrupt_logprob, 0, 'f', 4)
            .arg(corrupted.join(QStringLiteral(", ")))
            .arg(hsm::kTraceRouteThreshold));
    return;
  }
  QStringList perSite;
  for (int s = 0; s < kSites; ++s)
    perSite << QStringLiteral("%1 %2").arg(qstr(site_name(s)), r_text(siteAgreement(column, s)));
  col.summary->setText(
      tr("<b>%1</b>: answer “%2” (id %3) after position %4; log p clean %5, corrupted %6 nats; corrupted at %7. "
         "Attribution vs exact: r = %8 (%9). %10 s exact, %11 s attribution.")
          .arg(runName(runDir).toHtmlEscaped() + at, pieceLabel(t.answer_label).toHtmlEscaped())
          .arg(t.answer_token)
          .arg(t.answer_position)
          .arg(t.clean_logprob, 0, 'f', 4)
          .arg(t.corrupt_logprob, 0, 'f', 4)
          .arg(corrupted.join(QStringLiteral(", ")), r_text(t.agreement), perSite.join(QStringLiteral(", ")))
          .arg(t.exact_seconds, 0, 'f', 2)
          .arg(t.attribution_seconds, 0, 'f', 2));
}

double TraceView::siteAgreement(int column, int site) const {
  if (!hasTrace(column)) return kNaN;
  const hsm::Trace& t = trace(column);
  const hsm::TraceMap* exact = hsm::trace_map(t.exact, site_name(site));
  const hsm::TraceMap* estimate = hsm::trace_map(t.attribution, site_name(site));
  return exact && estimate ? hsm::trace_agreement(*exact, *estimate) : kNaN;
}

std::vector<int> TraceView::route(int column, int site) const {
  std::vector<int> out;
  if (!hasTrace(column)) return out;
  const hsm::Trace& t = trace(column);
  const hsm::TraceMap* exact = hsm::trace_map(t.exact, site_name(site));
  if (!exact) return out;
  const hsm::TraceMap& m = *exact;
  for (int64_t l = 0; l < t.layers; ++l) {
    int best = -1;
    double largest = -1;
    for (int64_t p = 0; p <= t.answer_position; ++p) {
      const double e = m.at(l, p, t.positions);
      if (std::isfinite(e) && std::abs(e) > largest) largest = std::abs(e), best = static_cast<int>(p);
    }
    out.push_back(best);
  }
  return out;
}

void TraceView::drawRoute(int column, int site) {
  Column& col = columns_[static_cast<size_t>(column)];
  QCPCurve* curve = col.route[static_cast<size_t>(site)];
  QCustomPlot* p = col.exact[static_cast<size_t>(site)]->plot();
  for (int i = p->itemCount() - 1; i >= 0; --i)
    if (p->item(i)->property("route").toBool()) p->removeItem(i);
  const std::vector<int> r = route(column, site);
  QVector<double> order, x, y;
  for (size_t l = 0; l < r.size(); ++l)
    if (r[l] >= 0) order << static_cast<double>(l), x << r[l], y << static_cast<double>(l);
  curve->setData(order, x, y, true);
  // For a shift mixer: where its shift carries the route's position (p → p + 2^l, when that is
  // still at or before the answer).
  const hsm::Trace& t = trace(column);
  const int row = runs_->indexOf(traceRun(column));
  if (row < 0) return;
  const hsm::ModelConfig& model = runs_->at(row).model;
  for (size_t l = 0; l < r.size() && l < model.layers.size(); ++l) {
    if (r[l] < 0 || !hsm::is_mixer_id(model.layers[l].mixer)) continue;
    for (int64_t s : hsm::layer_shifts(hsm::mixer_info(model.layers[l].mixer).kind, static_cast<int64_t>(l),
                                       model.layers[l].heads)) {
      if (r[l] + s > t.answer_position) continue;
      auto* arrow = new QCPItemLine(p);
      arrow->setProperty("route", true);
      arrow->start->setCoords(r[l], static_cast<double>(l));
      arrow->end->setCoords(static_cast<double>(r[l] + s), static_cast<double>(l));
      arrow->setHead(QCPLineEnding::esSpikeArrow);
      arrow->setPen(QPen(QColor(20, 20, 20), 1.2));
    }
  }
  p->replot(QCustomPlot::rpQueuedReplot);
}

void TraceView::setRouteThreshold(double threshold) { threshold_->setValue(threshold); }
double TraceView::routeThreshold() const { return threshold_->value(); }

void TraceView::drawRoutes(int column) {
  Column& col = columns_[static_cast<size_t>(column)];
  QCustomPlot* p = col.routes->plot();
  p->clearItems();
  p->clearGraphs();
  col.shown.clear();
  if (!hasTrace(column) || trace(column).routes.positions == 0) {
    p->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const hsm::Routes& r = trace(column).routes;
  col.shown = hsm::prune_routes(r, threshold_->value());
  // Nodes: (layer boundary b, position); the output node and every source of a kept edge.
  QVector<double> nx{static_cast<double>(r.answer_position)}, ny{static_cast<double>(r.layers)};
  for (const hsm::RouteEdge& e : col.shown) {
    const double offset = e.kind == hsm::RouteKind::kFfn ? kFfnOffset : 0.0;
    auto* line = new QCPItemLine(p);
    line->setProperty("route_edge", true);
    line->start->setCoords(static_cast<double>(e.from) + offset, static_cast<double>(e.layer));
    line->end->setCoords(static_cast<double>(e.to) + offset, static_cast<double>(e.layer + 1));
    QColor color = route_color(e.kind);
    const double w = std::clamp(e.weight, 0.0, 1.0);
    color.setAlpha(static_cast<int>(50 + 205 * w));
    line->setPen(QPen(color, 0.6 + 5.0 * w));
    line->setProperty("weight", e.weight);
    nx << static_cast<double>(e.from);
    ny << static_cast<double>(e.layer);
  }
  auto* nodes = p->addGraph();
  nodes->setLineStyle(QCPGraph::lsNone);
  nodes->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(20, 20, 20), 6));
  nodes->setData(nx, ny);
  auto* output = p->addGraph();
  output->setLineStyle(QCPGraph::lsNone);
  output->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(200, 30, 30), 11));
  output->addData(static_cast<double>(r.answer_position), static_cast<double>(r.layers));
  // Axes: positions by their tokens, node levels by the layer that made them.
  QSharedPointer<QCPAxisTickerText> xt(new QCPAxisTickerText), yt(new QCPAxisTickerText);
  const int T = static_cast<int>(r.positions), step = std::max(1, T / 40);
  for (int i = 0; i < T; i += step) {
    QString label = pieceLabel(r.labels[static_cast<size_t>(i)]);
    if (i == r.answer_position) label.prepend(QStringLiteral("▸"));
    xt->addTick(i, label);
  }
  const QStringList layers = layerLabels(traceRun(column), r.layers);
  yt->addTick(0, tr("embed"));
  for (int l = 0; l < layers.size(); ++l) yt->addTick(l + 1, layers[l]);
  p->xAxis->setTicker(xt);
  p->xAxis->setTickLabelRotation(-60);
  p->yAxis->setTicker(yt);
  p->xAxis->setRange(-0.6, T - 0.4);
  p->yAxis->setRange(-0.4, static_cast<double>(r.layers) + 0.4);
  p->replot(QCustomPlot::rpQueuedReplot);
}

QString TraceView::routesCsv(int column) const {
  QString out = QStringLiteral("layer,from,to,weight,kind,from_token,to_token\n");
  if (!hasTrace(column)) return out;
  const hsm::Routes& r = trace(column).routes;
  for (const hsm::RouteEdge& e : shownRoutes(column))
    out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7\n")
               .arg(e.layer)
               .arg(e.from)
               .arg(e.to)
               .arg(e.weight, 0, 'g', 17)
               .arg(QString::fromLatin1(hsm::route_kind_name(e.kind)),
                    quote(QString::fromStdString(r.labels[static_cast<size_t>(e.from)])),
                    quote(QString::fromStdString(r.labels[static_cast<size_t>(e.to)])));
  return out;
}

QList<PlotPanel*> TraceView::plots() const {
  QList<PlotPanel*> out;
  for (int c = 0; c < kColumns; ++c) {
    if (!hasTrace(c)) continue;
    for (int s = 0; s < kSites; ++s) {
      out << exactPanel(c, s);
      if (!state_->traceRecorded(c)) out << attributionPanel(c, s);  // a record has none
    }
    out << routesPanel(c);
  }
  return out;
}

QString TraceView::mapsCsv() const {
  QString out = QStringLiteral("run,map,site,layer,position,token,effect\n");
  for (int c = 0; c < kColumns; ++c) {
    if (!hasTrace(c)) continue;
    const hsm::Trace& t = trace(c);
    const QString run = quote(runName(traceRun(c)));
    for (const auto* maps : {&t.exact, &t.attribution})
      for (const hsm::TraceMap& m : *maps)
        for (int64_t l = 0; l < t.layers; ++l)
          for (int64_t p = 0; p < t.positions; ++p) {
            const double e = m.at(l, p, t.positions);
            out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7\n")
                       .arg(run, maps == &t.exact ? QStringLiteral("exact") : QStringLiteral("attribution"),
                            QString::fromStdString(m.site))
                       .arg(l)
                       .arg(p)
                       .arg(quote(QString::fromStdString(t.clean_labels[static_cast<size_t>(p)])),
                            std::isfinite(e) ? QString::number(e, 'g', 17) : QString());
          }
  }
  return out;
}

QStringList TraceView::exportAll(const QString& folder, QString* error) {
  QStringList written = exportPlots(folder, error);
  if (!hasTrace(0) && !hasTrace(1)) {
    if (error && error->isEmpty()) *error = tr("No trace to export: press Trace first.");
    return written;
  }
  const QString path =
      QDir(folder).filePath(export_stem(currentRunDir(), QStringLiteral("trace")) + QStringLiteral("-maps.csv"));
  QSaveFile f(path);  // written whole: a temporary file renamed into place
  const QByteArray csv = mapsCsv().toUtf8();
  if (f.open(QIODevice::WriteOnly) && f.write(csv) == csv.size() && f.commit())
    written << path;
  else if (error && error->isEmpty())
    *error = tr("cannot write %1: %2").arg(path, f.errorString());
  return written;
}

// ---- over training ------------------------------------------------------------------------------

int64_t TraceView::sliderStep() const {
  const std::vector<int64_t>& steps = history(0).steps;
  const int i = stepSlider_->value();
  return stepSlider_->isEnabled() && i >= 0 && i < static_cast<int>(steps.size()) ? steps[static_cast<size_t>(i)] : -1;
}

double TraceView::markedStep(const QString& mark) const {
  for (const QCPItemStraightLine* line : {formedMark_, accuracyMark_, sliderMark_})
    if (line->property("mark").toString() == mark)
      return line->visible() ? line->point1->coords().x() : kNaN;
  return kNaN;
}

QString TraceView::formationSummary() const { return formationSummary_->text(); }
QString TraceView::stepText() const { return stepLabel_->text(); }

void TraceView::onHistoryLoaded(int column) {
  if (column == 0) {
    const TraceHistory& h = history(0);
    // The slider stays on its step when the run read again has it (a run that trains adds steps),
    // else goes to the newest.
    const int64_t was = atNewest_ ? -1 : chosenStep_;
    const QSignalBlocker block(stepSlider_);
    stepSlider_->setRange(0, std::max(0, static_cast<int>(h.steps.size()) - 1));
    const auto at = std::find(h.steps.begin(), h.steps.end(), was);
    stepSlider_->setValue(at != h.steps.end() ? static_cast<int>(at - h.steps.begin()) : stepSlider_->maximum());
    stepSlider_->setEnabled(!h.steps.empty());
    // The newest record shown at once when nothing else is (a trace asked for is not replaced).
    if (!hasTrace(0) && !isTracing() && !h.records.empty() && h.records.back().step == h.steps.back()) onStepChosen();
  }
  drawFormation();
  showStepText();
}

void TraceView::onStepChosen() {
  markSliderStep();
  showStepText();
  const int64_t step = sliderStep();
  chosenStep_ = step;
  atNewest_ = stepSlider_->value() == stepSlider_->maximum();
  if (step < 0) return;
  for (int c = 0; c < kColumns; ++c) {
    const TraceHistory& h = history(c);
    const hsm::TraceRecord* r = h.record(step);
    const QString run = c == 0 ? currentRunDir() : compareRun();
    if (run.isEmpty() || h.run != run) continue;
    if (r) {
      state_->showRecord(c, run, *r);
      setColumnVisible(c, true);
    } else if (c == 0) {
      state_->forget(0);
      clearColumn(0, h.keeps(step) ? tr("Step %1: nothing recorded; press Trace to trace the model kept at this step.")
                                         .arg(step)
                                   : tr("Step %1: nothing recorded.").arg(step));
    } else {
      setColumnVisible(1, false);  // the run beside recorded nothing at this step
    }
  }
  if (!isTracing()) {
    const TraceHistory& h = history(0);
    const hsm::TraceRecord* r = h.record(step);
    if (r)
      status_->setText(tr("Step %1 as recorded while %2 trained (%3): each cell the share of log p(“%4”) that returns "
                          "when that one activation of the corrupted run is the clean run's. %5")
                           .arg(step)
                           .arg(runName(currentRunDir()), QString::fromStdString(r->example),
                                pieceLabel(r->answer_label),
                                h.keeps(step) ? tr("Trace traces the model kept at this step (with the attribution "
                                                   "estimate, or other prompts).")
                                              : tr("No model of this step is kept: Trace traces the newest.")));
    else
      status_->setText(h.keeps(step) ? tr("Step %1: nothing recorded; Trace traces the model kept at this step.").arg(step)
                                     : tr("Step %1: nothing recorded.").arg(step));
  }
  updateButtons();
}

void TraceView::showStepText() {
  const TraceHistory& h = history(0);
  if (currentRunDir().isEmpty()) {
    stepLabel_->setText(QString());
    return;
  }
  if (h.run != currentRunDir()) {
    stepLabel_->setText(tr("reading what the run recorded while it trained…"));
    return;
  }
  if (h.steps.empty()) {
    stepLabel_->setText(h.problem.isEmpty()
                            ? tr("no traces recorded while it trained and no snapshots (train with a Trace text, and "
                                 "Snapshot every N steps to keep models: the Training form, or hsm train "
                                 "--trace-text, --snapshot-every)")
                            : tr("traces unreadable: %1").arg(h.problem));
    return;
  }
  const int64_t step = sliderStep();
  const bool recorded = h.record(step) != nullptr, kept = h.keeps(step);
  const QString what = recorded && kept ? tr("recorded; model kept")
                       : recorded       ? tr("recorded")
                                        : tr("model kept");
  stepLabel_->setText(tr("step %1 (%2) · %3 of %4 steps: %5 recorded, %6 kept")
                          .arg(step)
                          .arg(what)
                          .arg(stepSlider_->value() + 1)
                          .arg(h.steps.size())
                          .arg(h.records.size())
                          .arg(h.kept.size()));
}

void TraceView::markSliderStep() {
  const int64_t step = sliderStep();
  sliderMark_->setVisible(step >= 0 && !history(0).records.empty());
  sliderMark_->point1->setCoords(static_cast<double>(step), 0);
  sliderMark_->point2->setCoords(static_cast<double>(step), 1);
  formation_->plot()->replot(QCustomPlot::rpQueuedReplot);
}

void TraceView::drawFormation() {
  QVector<PlotSeries> series;
  for (int c = 0; c < kColumns; ++c) {
    const TraceHistory& h = history(c);
    const QString run = c == 0 ? currentRunDir() : compareRun();
    if (run.isEmpty() || h.run != run || h.records.empty()) continue;
    const QString who = c == 0 ? QString() : tr("B %1: ").arg(runName(run));
    PlotSeries share{who + tr("route share"), QColor(0, 114, 178), {}, {}};
    PlotSeries accuracy{who + tr("accuracy"), QColor(230, 159, 0), {}, {}};
    for (const hsm::FormationPoint& p : h.formation.points) {
      share.x << static_cast<double>(p.step);
      share.y << p.route_share;
      accuracy.x << static_cast<double>(p.step);
      accuracy.y << (std::isfinite(p.accuracy) ? p.accuracy : kNaN);
    }
    if (c == 1) share.style = accuracy.style = PlotSeries::Style::kDashedLine;
    share.emphasised = c == 0;
    series << share << accuracy;
    // Each layer's mixer effect (the current run's: the run beside would double the legend),
    // on the right axis: it passes 1 on the plateau, where share and accuracy stay near 0.
    if (c != 0 || !mixerEffects_->isChecked()) continue;
    // Okabe & Ito's colours without the share's blue and the accuracy's orange (0 and 1).
    static const int kLayerColours[] = {4, 5, 2, 3, 7, 6};
    for (int64_t l = 0; l < h.formation.layers; ++l) {
      PlotSeries effect{tr("L%1 mixer effect").arg(l), colours::okabeIto(kLayerColours[l % 6]), {}, {}};
      effect.right_axis = true;
      for (const hsm::FormationPoint& p : h.formation.points) {
        effect.x << static_cast<double>(p.step);
        const auto i = static_cast<size_t>(l);
        effect.y << (i < p.mixer_effect.size() && std::isfinite(p.mixer_effect[i]) ? p.mixer_effect[i] : kNaN);
      }
      series << effect;
    }
  }
  formation_->setSeries(series);
  const hsm::Formation& f = history(0).formation;
  const bool shown = history(0).run == currentRunDir() && !history(0).records.empty();
  auto place = [](QCPItemStraightLine* line, int64_t step, bool visible) {
    line->setVisible(visible && step >= 0);
    line->point1->setCoords(static_cast<double>(step), 0);
    line->point2->setCoords(static_cast<double>(step), 1);
  };
  place(formedMark_, f.formed_step, shown);
  place(accuracyMark_, f.accuracy_step, shown);
  markSliderStep();
  // A run that recorded no traces has no pane (the step line says so): the maps keep the room.
  formationPane_->setVisible(shown);
  if (!shown) {
    formationSummary_->clear();
    return;
  }
  QString text = tr("<b>%1</b>: %2.").arg(runName(currentRunDir()).toHtmlEscaped(),
                                          QString::fromStdString(f.summary()).toHtmlEscaped());
  const TraceHistory& b = history(1);
  if (!compareRun().isEmpty() && b.run == compareRun() && !b.records.empty())
    text += tr(" <b>B %1</b> (dashed): %2.")
                .arg(runName(compareRun()).toHtmlEscaped(), QString::fromStdString(b.formation.summary()).toHtmlEscaped());
  text += tr("<br>%1 the step from which the route share stayed ≥ %2 (its route formed); %3 the step accuracy crossed "
             "half its gain; %4 the slider's step.")
              .arg(line_key(QColor(0, 140, 70), tr("")), QString::number(f.rule.share_threshold, 'f', 2),
                   QStringLiteral("<span style='color:#d55e00'><b>╍╍</b></span>"),
                   QStringLiteral("<span style='color:#3c3c3c'><b>┈┈</b></span>"));
  formationSummary_->setText(text);
}

void TraceView::exportDialog() {
  exportAllDialog(
      tr("Export the Trace view's maps into"),
      [this](const QString& folder, QString* error) { return exportAll(folder, error); }, status_);
}

}  // namespace studio
