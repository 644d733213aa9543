#include "gui/views/experiments_view.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTextStream>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>
#include <functional>
#include <qcustomplot.h>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/engine/grid_runner.h"
#include "gui/views/sweep_form.h"
#include "gui/widgets/frozen_column_table.h"
#include "gui/widgets/parallel_coordinates.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/widget_export.h"
#include "gui/widgets/colour_maps.h"
#include "hsm/errors.h"
#include "hsm/presets.h"

namespace studio {
namespace {

QString csv_quote(QString s) { return QStringLiteral("\"%1\"").arg(s.replace('"', QLatin1String("\"\""))); }

// Columns the plots do not draw: names and states, and the step (the table shows progress).
bool plotted(const ExperimentColumn& c) {
  return c.name != column::kRun && c.name != column::kRuns && c.name != column::kState && c.name != column::kStep;
}

bool any_finite(const ExperimentTable& t, int c) {
  for (const auto& row : t.numbers)
    if (std::isfinite(row[c])) return true;
  return false;
}

// Fills a combo with columns (shown by their titles, the column's name the item's data and
// tooltip), keeping its current column when it is still there, else `fallback`.
void refill(QComboBox* box, const QStringList& columns, const QStringList& titles, const QString& fallback) {
  const QString keep = box->currentData().toString();
  const QSignalBlocker block(box);
  box->clear();
  for (int i = 0; i < columns.size(); ++i) {
    box->addItem(titles.value(i, columns[i]), columns[i]);
    box->setItemData(box->count() - 1, columns[i], Qt::ToolTipRole);
  }
  const int i = box->findData(keep);
  box->setCurrentIndex(i >= 0 ? i : std::max(0, box->findData(fallback)));
}

// The column a combo names.
QString chosen(const QComboBox* box) { return box->currentData().toString(); }

}  // namespace

ExperimentsView::ExperimentsView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent), state_(new ExperimentsState(runs, engine, this)) {
  build();
  connectSignals();
}

void ExperimentsView::build() {
  QWidget* top = buildTop();
  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  tabs_->addTab(buildParallelPage(), tr("Parallel coordinates"));
  tabs_->addTab(buildScatterPage(), tr("Scatter"));
  tabs_->addTab(buildForm(), tr("New sweep"));
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(top);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(split);
  setGroup(QString());
}

QWidget* ExperimentsView::buildTop() {
  openButton_ = new QPushButton(tr("Open a sweep folder…"));
  openButton_->setToolTip(tr("A folder made by hsm sweep (or the form below): its sweep.json and runs/"));
  openRunsButton_ = new QPushButton(tr("Use the open runs"));
  openRunsButton_->setToolTip(tr("Compare the runs open in the studio as one experiment"));
  group_ = new QComboBox;
  group_->setObjectName(QStringLiteral("group"));
  group_->setToolTip(tr("Group the runs that differ only in this setting (seeds): mean ± standard deviation"));
  filter_ = new QLineEdit;
  filter_->setObjectName(QStringLiteral("filter"));
  filter_->setPlaceholderText(tr("Filter: words a row must contain (hsm_ab done)"));
  filter_->setClearButtonEnabled(true);
  exportButton_ = new QPushButton(tr("Export…"));
  exportButton_->setToolTip(tr("The plots (PNG, PDF, SVG, CSV) and the table (CSV) into a folder"));
  curvesButton_ = new QPushButton(tr("Show curves in Training"));
  curvesButton_->setToolTip(tr("Open the selected runs; the Training view overlays their curves"));
  status_ = new QLabel(tr("Open a sweep folder, use the open runs, or start a sweep below."));
  status_->setObjectName(QStringLiteral("experiments_status"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  buildTable();
  auto* bar = new QHBoxLayout;
  bar->addWidget(openButton_);
  bar->addWidget(openRunsButton_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Group by")));
  bar->addWidget(group_);
  bar->addWidget(filter_, 1);
  bar->addWidget(curvesButton_);
  bar->addWidget(exportButton_);
  auto* top = new QWidget;
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  topLayout->addLayout(bar);
  topLayout->addWidget(status_);
  topLayout->addWidget(table_, 1);
  return top;
}

void ExperimentsView::buildTable() {
  model_ = new ExperimentModel(this);
  proxy_ = new ExperimentFilter(this);
  proxy_->setSourceModel(model_);
  // The run's name stays at the left while the table scrolls right to the losses (issue 48).
  table_ = new FrozenColumnTable;
  table_->setObjectName(QStringLiteral("experiments_table"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  table_->horizontalHeader()->setStretchLastSection(true);
}

QWidget* ExperimentsView::buildParallelPage() {
  parallel_ = new ParallelCoordinates(tr("Parallel coordinates"));
  colour_ = new QComboBox;
  colour_->setObjectName(QStringLiteral("colour"));
  colour_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  clearBrushes_ = new QPushButton(tr("Clear brushes"));
  auto* parallelPage = new QWidget;
  auto* parallelBar = new QHBoxLayout;
  parallelBar->addWidget(new QLabel(tr("Colour by")));
  parallelBar->addWidget(colour_);
  parallelBar->addWidget(new QLabel(tr("Drag along an axis to keep only the runs in that range.")), 1);
  parallelBar->addWidget(clearBrushes_);
  auto* parallelLayout = new QVBoxLayout(parallelPage);
  parallelLayout->setContentsMargins(2, 2, 2, 2);
  parallelLayout->addLayout(parallelBar);
  parallelLayout->addWidget(parallel_, 1);
  return parallelPage;
}

QWidget* ExperimentsView::buildScatterPage() {
  scatter_ = new PlotPanel(tr("Scatter"), QString(), QString());
  scatterX_ = new QComboBox;
  scatterX_->setObjectName(QStringLiteral("scatter_x"));
  scatterX_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  scatterY_ = new QComboBox;
  scatterY_->setObjectName(QStringLiteral("scatter_y"));
  scatterY_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* scatterPage = new QWidget;
  auto* scatterBar = new QHBoxLayout;
  scatterBar->addWidget(new QLabel(tr("x")));
  scatterBar->addWidget(scatterX_);
  scatterBar->addWidget(new QLabel(tr("y")));
  scatterBar->addWidget(scatterY_);
  scatterBar->addStretch(1);
  auto* scatterLayout = new QVBoxLayout(scatterPage);
  scatterLayout->setContentsMargins(2, 2, 2, 2);
  scatterLayout->addLayout(scatterBar);
  scatterLayout->addWidget(scatter_, 1);
  return scatterPage;
}

QWidget* ExperimentsView::buildForm() {
  auto* page = new QWidget;
  buildFormFields();
  buildFormRunControls();
  QFormLayout* left = buildFormLayout();
  auto* right = new QVBoxLayout;
  right->addWidget(new QLabel(tr("Axes")));
  right->addWidget(formAxes_, 1);
  auto* layout = new QHBoxLayout(page);
  layout->addLayout(left, 3);
  layout->addLayout(right, 2);
  return page;
}

void ExperimentsView::buildFormFields() {
  formName_ = new QLineEdit(QStringLiteral("sweep"));
  formBase_ = new QComboBox;
  formBase_->setEditable(true);
  for (const std::string& p : hsm::preset_names()) formBase_->addItem(qstr(p));
  formBase_->setToolTip(tr("A preset, or a model config file (.json)"));
  formData_ = new QLineEdit;
  formData_->setPlaceholderText(tr("a corpus file or folder"));
  formTask_ = new QLineEdit;
  formTask_->setPlaceholderText(tr("or a synthetic task instead (hsm task list), e.g. copy"));
  auto spin = [](int lo, int hi, int value) {
    auto* s = new QSpinBox;
    s->setRange(lo, hi);
    s->setValue(value);
    return s;
  };
  formSteps_ = spin(1, 10000000, 300);
  formBatch_ = spin(1, 65536, 16);
  formEval_ = spin(0, 10000000, 100);
  formAxes_ = new QPlainTextEdit;
  formAxes_->setPlaceholderText(
      tr("One axis a line, path = v1, v2, ...\nmodel.layers.0.mixer = attn, hsm_ab\nseed = 1, 2\n"
         "model.placement = \"hsm_ab@0,6\", \"attn@all\""));
  formAxes_->setToolTip(tr("Axis paths: docs/sweeps.md. An axis of one value sets it for every point."));
  formOut_ = new QLineEdit;
  formOut_->setPlaceholderText(tr("the sweep folder (made, or continued when it holds this sweep)"));
}

void ExperimentsView::buildFormRunControls() {
  startButton_ = new QPushButton(tr("Start sweep"));
  cancelButton_ = new QPushButton(tr("Cancel"));
  cancelButton_->setToolTip(tr("Stop the point under way at a step with a checkpoint: starting again continues"));
  cancelButton_->setEnabled(false);
  sweepStatus_ = new QLabel(tr("Started sweeps train here, one point after another; Cancel keeps what is done."));
  sweepStatus_->setObjectName(QStringLiteral("sweep_status"));
  sweepStatus_->setWordWrap(true);
  sweepStatus_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress_ = new QProgressBar;
  progress_->setFormat(tr("no sweep started"));
  progress_->setRange(0, 1);
  progress_->setValue(0);
}

QFormLayout* ExperimentsView::buildFormLayout() {
  auto* steps = new QHBoxLayout;
  for (auto [label, box] : {std::pair{tr("steps"), formSteps_}, std::pair{tr("batch"), formBatch_},
                            std::pair{tr("validate every"), formEval_}}) {
    steps->addWidget(new QLabel(label));
    steps->addWidget(box);
  }
  steps->addStretch(1);
  auto* left = new QFormLayout;
  left->addRow(tr("Name"), formName_);
  left->addRow(tr("Base model"), browsedField(formBase_, [this] {
                 return QFileDialog::getOpenFileName(this, tr("A model config"), StudioSettings::dialogFolder(),
                                                     tr("Model configs (*.json)"));
               }));
  left->addRow(tr("Data"), browsedField(formData_, [this] {
                 return QFileDialog::getOpenFileName(this, tr("A corpus"), StudioSettings::dialogFolder());
               }));
  left->addRow(tr("Task"), formTask_);
  left->addRow(tr("Training"), steps);
  left->addRow(tr("Sweep folder"), browsedField(formOut_, [this] {
                 return QFileDialog::getExistingDirectory(this, tr("The sweep folder"), StudioSettings::dialogFolder());
               }));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(startButton_);
  buttons->addWidget(cancelButton_);
  buttons->addWidget(progress_, 1);
  left->addRow(buttons);
  left->addRow(sweepStatus_);
  return left;
}

QHBoxLayout* ExperimentsView::browsedField(QWidget* field, std::function<QString()> ask) {
  // A field with a "…" button that fills it from a file dialog.
  auto* row = new QHBoxLayout;
  row->addWidget(field, 1);
  auto* button = new QToolButton;
  button->setText(QStringLiteral("…"));
  row->addWidget(button);
  connect(button, &QToolButton::clicked, this, [field, ask] {
    const QString path = ask();
    if (path.isEmpty()) return;
    StudioSettings::setDialogFolder(QFileInfo(path).path());
    if (auto* line = qobject_cast<QLineEdit*>(field)) line->setText(path);
    if (auto* box = qobject_cast<QComboBox*>(field)) box->setCurrentText(path);
  });
  return row;
}

void ExperimentsView::connectSignals() {
  connect(openButton_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a sweep folder"), StudioSettings::dialogFolder());
    if (dir.isEmpty()) return;
    StudioSettings::setDialogFolder(dir);
    openSweep(dir);
  });
  connect(openRunsButton_, &QPushButton::clicked, this, &ExperimentsView::useOpenRuns);
  connect(group_, &QComboBox::currentIndexChanged, this, &ExperimentsView::rebuildTable);
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    proxy_->setText(text);
    drawScatter();
  });
  connect(parallel_, &ParallelCoordinates::brushesChanged, this, [this] {
    proxy_->setAllowed(parallel_->passing());
    drawScatter();
  });
  connect(clearBrushes_, &QPushButton::clicked, parallel_, &ParallelCoordinates::clearBrushes);
  connect(colour_, &QComboBox::currentIndexChanged, this, &ExperimentsView::drawParallel);
  connect(scatterX_, &QComboBox::currentIndexChanged, this, &ExperimentsView::drawScatter);
  connect(scatterY_, &QComboBox::currentIndexChanged, this, &ExperimentsView::drawScatter);
  connect(proxy_, &QAbstractItemModel::layoutChanged, this, &ExperimentsView::drawScatter);
  connect(exportButton_, &QPushButton::clicked, this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Export the plots and the table to"),
                                                             StudioSettings::dialogFolder());
    if (folder.isEmpty()) return;
    StudioSettings::setDialogFolder(folder);
    QString error;
    const QStringList files = exportAll(folder, &error);
    setStatus(error.isEmpty() ? tr("Wrote %1 files to %2").arg(files.size()).arg(folder) : error);
  });
  connect(curvesButton_, &QPushButton::clicked, this, &ExperimentsView::showSelectedCurves);
  connect(state_, &ExperimentsState::rowsRead, this, &ExperimentsView::showRows);
  connect(state_, &ExperimentsState::readFailed, this, &ExperimentsView::showReadFailure);
  connect(startButton_, &QPushButton::clicked, this, &ExperimentsView::startSweep);
  connect(cancelButton_, &QPushButton::clicked, this, &ExperimentsView::cancelSweep);
  connectRunner();
}

void ExperimentsView::connectRunner() {
  // The grid's progress from its workers' events (GridRunner), never from their log text.
  connect(runner(), &GridRunner::started, this, [this](int points, int done) {
    progress_->setFormat(tr("%v / %m points"));
    progress_->setRange(0, points);
    progress_->setValue(done);
  });
  connect(runner(), &GridRunner::pointStarted, this, [this](int, const QString& point, bool resumed) {
    trainingNow_ = (resumed ? tr("Continuing %1 (%2 of %3 points done)") : tr("Training %1 (%2 of %3 points done)"))
                       .arg(point)
                       .arg(runner()->done())
                       .arg(runner()->points());
    sweepStatus_->setText(trainingNow_);
    state_->refresh();
  });
  connect(runner(), &GridRunner::pointFinished, this, [this](int, const QString&, const QString&, const QJsonObject&) {
    progress_->setValue(runner()->done());
    state_->refresh();
  });
  connect(runner(), &GridRunner::finished, this, [this](bool cancelled, const QString& failures) {
    startButton_->setEnabled(true);
    cancelButton_->setEnabled(false);
    QString text = cancelled ? tr("Sweep cancelled: %1 of %2 points done; start it again to continue (%3)")
                             : tr("Sweep finished: %1 of %2 points done (%3)");
    text = text.arg(runner()->done()).arg(runner()->points()).arg(state_->runningDir());
    if (!failures.isEmpty()) text += tr("; failed: %1").arg(failures);
    sweepStatus_->setText(text);
    state_->refresh();
  });
}

QList<PlotPanel*> ExperimentsView::plots() const { return {parallel_, scatter_}; }

void ExperimentsView::setStatus(const QString& text) { status_->setText(text); }

bool ExperimentsView::openSweep(const QString& dir) {
  const QString abs = QDir(dir).absolutePath();
  if (!QFileInfo::exists(QDir(abs).filePath(QStringLiteral("sweep.json")))) {
    setStatus(tr("%1 is not a sweep folder (it has no sweep.json): open a folder made by hsm sweep or by the "
                 "New sweep form")
                  .arg(abs));
    return false;
  }
  parallel_->clearBrushes();
  setStatus(tr("Reading %1…").arg(abs));
  state_->followSweep(abs);
  return true;
}

bool ExperimentsView::useOpenRuns() {
  QStringList dirs;
  for (int i = 0; i < runs_->count(); ++i)
    if (runs_->at(i).has_info) dirs << runs_->at(i).dir;
  if (dirs.size() < 2) {
    setStatus(tr("Open at least two runs with a checkpoint to compare them (%1 open)").arg(dirs.size()));
    return false;
  }
  parallel_->clearBrushes();
  setStatus(tr("Reading %1 runs…").arg(dirs.size()));
  state_->followRuns(dirs);
  return true;
}

void ExperimentsView::refresh() { state_->refresh(); }

void ExperimentsView::showReadFailure(const QString& message) {
  const QString sweepDir = state_->sweepDir();
  setStatus(sweepDir.isEmpty() ? tr("Cannot compare the open runs: %1").arg(message)
                               : tr("%1 is not a sweep folder: %2").arg(sweepDir, message));
}

void ExperimentsView::showRows() {
  const std::vector<hsm::SweepRow>& rows = state_->rows();
  // Groups: the settings that differ.
  const QStringList settings = differing_settings(rows);
  QStringList titles{QString()};
  for (const QString& setting : settings) titles << setting_title(setting);
  refill(group_, QStringList{QString()} + settings, titles, QString());
  group_->setItemText(0, tr("(none)"));
  // The selection, by run, across the re-read.
  QStringList selected;
  for (const QModelIndex& i : table_->selectionModel()->selectedRows())
    selected << model_->table().runs.value(proxy_->mapToSource(i).row()).join(QLatin1Char('|'));
  rebuildTable();
  for (int r = 0; r < proxy_->rowCount(); ++r)
    if (selected.contains(model_->table().runs.value(proxy_->mapToSource(proxy_->index(r, 0)).row()).join('|')))
      table_->selectionModel()->select(proxy_->index(r, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);

  const ExperimentsState::Counts n = state_->counts();
  const QString sweepDir = state_->sweepDir();
  QString text =
      sweepDir.isEmpty() ? tr("%1 open runs").arg(rows.size()) : tr("%1: %2 runs").arg(sweepDir).arg(rows.size());
  text += tr(" · %1 done · %2 running · %3 failed").arg(n.done).arg(n.running).arg(n.failed);
  setStatus(text);
}

void ExperimentsView::setGroup(const QString& setting) {
  if (group_->count() == 0) group_->addItem(tr("(none)"), QString());
  const int i = std::max(group_->findData(setting), 0);
  if (i == group_->currentIndex())
    rebuildTable();
  else
    group_->setCurrentIndex(i);  // rebuilds
}

void ExperimentsView::rebuildTable() {
  ExperimentTable t;
  const QString setting = chosen(group_);
  try {
    t = setting.isEmpty() ? experiment_table(rows()) : grouped_table(rows(), sstr(setting));
  } catch (const std::exception& e) {
    setStatus(qstr(hsm::error_text(e)));
    t = experiment_table(rows());
  }
  model_->setTable(std::move(t));
  fillColumnBoxes();
  drawParallel();
  table_->resizeColumnsToContents();
  for (int c = 0; c < model_->columnCount(); ++c)
    table_->setColumnWidth(c, std::min(table_->columnWidth(c), 260));
}

void ExperimentsView::fillColumnBoxes() {
  const ExperimentTable& t = model_->table();
  QStringList numeric;
  for (int c = 0; c < t.columns.size(); ++c)
    if (t.columns[c].numeric && plotted(t.columns[c]) && any_finite(t, c)) numeric << t.columns[c].name;
  QStringList titles;
  for (const QString& name : numeric) titles << column_title(t.columns[t.columnOf(name)]);
  refill(colour_, numeric, titles, column::kBestLoss);
  refill(scatterY_, numeric, titles, column::kBestLoss);
  QString x = column::kParams;
  for (const ExperimentColumn& c : t.columns)  // grouped tables have no parameters: the first numeric setting
    if (!numeric.contains(x) && c.setting && c.numeric) x = c.name;
  refill(scatterX_, numeric, titles, numeric.contains(x) ? x : column::kTokensPerS);
}

void ExperimentsView::drawParallel() {
  const ExperimentTable& t = model_->table();
  QVector<ParallelCoordinates::Axis> axes;
  for (int c = 0; c < t.columns.size(); ++c) {
    const ExperimentColumn& col = t.columns[c];
    if (!plotted(col) || (col.numeric && !any_finite(t, c))) continue;
    ParallelCoordinates::Axis a;
    a.name = col.setting ? short_setting(col.name) : col.name;
    a.title = column_title(col);
    if (col.numeric) {
      for (const auto& row : t.numbers) a.values << row[c];
    } else {
      for (const QStringList& row : t.texts)
        if (!a.categories.contains(row[c])) a.categories << row[c];
      a.categories.sort();
      for (const QStringList& row : t.texts) a.values << a.categories.indexOf(row[c]);
    }
    axes << a;
  }
  QStringList names;
  const int runColumn = t.columnOf(column::kRun);
  for (int r = 0; r < t.texts.size(); ++r) names << (runColumn >= 0 ? t.texts[r][runColumn] : t.runs[r].join(", "));
  QVector<double> colour;
  const int cc = t.columnOf(chosen(colour_));
  for (const auto& row : t.numbers) colour << (cc >= 0 ? row[cc] : NAN);
  parallel_->setData(axes, names, colour, colour_->currentText());  // (its title)
  proxy_->setAllowed(parallel_->passing());
  drawScatter();
}

void ExperimentsView::drawScatter() {
  const ExperimentTable& t = model_->table();
  const int xc = t.columnOf(chosen(scatterX_)), yc = t.columnOf(chosen(scatterY_));
  scatter_->setXLabel(scatterX_->currentText());
  scatter_->setYLabel(scatterY_->currentText());
  QVector<PlotSeries> series;
  if (xc >= 0 && yc >= 0) {
    // One series per value of the first text setting (the mixer, a placement), so the groups show.
    int by = -1;
    for (int c = 0; c < t.columns.size() && by < 0; ++c)
      if (t.columns[c].setting && !t.columns[c].numeric) by = c;
    QMap<QString, int> index;
    for (int r = 0; r < proxy_->rowCount(); ++r) {
      const int s = proxy_->mapToSource(proxy_->index(r, 0)).row();
      const double x = t.numbers[s][xc], y = t.numbers[s][yc];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const QString name =
          by >= 0 ? QStringLiteral("%1: %2").arg(column_title(t.columns[by]), t.texts[s][by]) : tr("runs");
      if (!index.contains(name)) {
        index[name] = static_cast<int>(series.size());
        PlotSeries p;
        p.name = name;
        p.color = colours::okabeIto(static_cast<int>(series.size()));
        p.style = PlotSeries::Style::kScatter;
        series << p;
      }
      series[index[name]].x << x;
      series[index[name]].y << y;
    }
  }
  scatter_->setSeries(series);
  // Room around the points at the plot's edges.
  scatter_->plot()->xAxis->scaleRange(1.12);
  scatter_->plot()->replot(QCustomPlot::rpQueuedReplot);
}

QString ExperimentsView::exportTable(const QString& path) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return tr("cannot write %1").arg(path);
  QTextStream out(&f);
  const ExperimentTable& t = model_->table();
  // A grouped column's standard deviation gets a column of its own.
  QVector<bool> withStd(t.columns.size(), false);
  for (const auto& row : t.stds)
    for (int c = 0; c < row.size(); ++c) withStd[c] = withStd[c] || std::isfinite(row[c]);
  QStringList header;
  for (int c = 0; c < t.columns.size(); ++c) {
    header << csv_quote(t.columns[c].name + (withStd[c] ? tr(" mean") : QString()));
    if (withStd[c]) header << csv_quote(t.columns[c].name + tr(" std"));
  }
  out << header.join(QLatin1Char(',')) << "\n";
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const int s = proxy_->mapToSource(proxy_->index(r, 0)).row();
    QStringList cells;
    for (int c = 0; c < t.columns.size(); ++c) {
      const double x = t.numbers[s][c];
      cells << (t.columns[c].numeric ? (std::isfinite(x) ? QString::number(x, 'g', 17) : QString())
                                     : csv_quote(t.texts[s][c]));
      if (withStd[c]) cells << (std::isfinite(t.stds[s][c]) ? QString::number(t.stds[s][c], 'g', 17) : QString());
    }
    out << cells.join(QLatin1Char(',')) << "\n";
  }
  out.flush();
  return f.error() == QFileDevice::NoError ? QString() : tr("cannot write %1").arg(path);
}

QStringList ExperimentsView::exportAll(const QString& folder, QString* error) const {
  QStringList files = exportPlots(folder, error);
  const QString stem = export_stem(this);
  const QString path =
      QDir(folder).filePath((stem.isEmpty() ? QString() : stem + QLatin1Char('-')) + QStringLiteral("experiments-table.csv"));
  const QString e = exportTable(path);
  if (e.isEmpty())
    files << path;
  else if (error && error->isEmpty())
    *error = e;
  return files;
}

QStringList ExperimentsView::selectedRunDirs() const {
  QStringList dirs;
  const ExperimentTable& t = model_->table();
  for (const QModelIndex& i : table_->selectionModel()->selectedRows()) {
    for (const QString& run : t.runs.value(proxy_->mapToSource(i).row())) {
      QString dir;
      if (!sweepDir().isEmpty()) {
        dir = QDir(sweepDir()).filePath(QStringLiteral("runs/") + run);
      } else {
        for (const QString& d : state_->runDirs())
          if (QFileInfo(d).fileName() == run) dir = d;
      }
      if (!dir.isEmpty() && !dirs.contains(dir)) dirs << dir;
    }
  }
  return dirs;
}

int ExperimentsView::showSelectedCurves() {
  const QStringList dirs = selectedRunDirs();
  if (dirs.isEmpty()) {
    setStatus(tr("Select the runs whose curves to show (rows of the table)"));
    return 0;
  }
  int opened = 0, first = -1;
  QStringList skipped;
  for (const QString& dir : dirs) {
    try {
      const int row = runs_->open(dir);
      if (first < 0) first = row;
      ++opened;
    } catch (const std::exception& e) {  // a point not started yet has no run folder
      skipped << QFileInfo(dir).fileName();
    }
  }
  if (first >= 0) runs_->setCurrent(first);
  setStatus(skipped.isEmpty() ? tr("Opened %1 runs: the Training view overlays their curves").arg(opened)
                              : tr("Opened %1 runs; %2 not started yet").arg(opened).arg(skipped.join(", ")));
  if (opened > 0) emit curvesRequested();
  return opened;
}

void ExperimentsView::setForm(const SweepForm& form, const QString& outDir) {
  formName_->setText(form.name);
  formBase_->setCurrentText(form.base);
  formData_->setText(form.data);
  formTask_->setText(form.task);
  formSteps_->setValue(form.steps);
  formBatch_->setValue(form.batch);
  formEval_->setValue(form.evalEvery);
  formAxes_->setPlainText(form.axes);
  formOut_->setText(outDir);
}

bool ExperimentsView::startSweep() {
  if (runner()->running()) {
    sweepStatus_->setText(tr("A sweep is running: cancel it first"));
    return false;
  }
  SweepForm form;
  form.name = formName_->text();
  form.base = formBase_->currentText();
  form.data = formData_->text();
  form.task = formTask_->text();
  form.steps = formSteps_->value();
  form.batch = formBatch_->value();
  form.evalEvery = formEval_->value();
  form.axes = formAxes_->toPlainText();
  QString error;
  const QString spec = sweep_spec_json(form, &error);
  if (spec.isEmpty()) {
    sweepStatus_->setText(tr("Sweep refused, nothing started: %1").arg(error));
    return false;
  }
  if (formOut_->text().trimmed().isEmpty()) {
    sweepStatus_->setText(tr("Sweep refused, nothing started: name a sweep folder (a new folder, or this sweep's to continue it)"));
    return false;
  }
  // The spec checked (every point's model and settings) and the folder made here: a refusal
  // names what is wrong before anything starts. The launcher then trains the points not done.
  const QString dir = QDir(formOut_->text().trimmed()).absolutePath();
  try {
    hsm::open_sweep_folder(sstr(dir), hsm::parse_sweep_spec(sstr(spec), sstr(QDir::currentPath())));
  } catch (const std::exception& e) {
    sweepStatus_->setText(tr("Sweep refused, nothing started: %1").arg(qstr(hsm::error_text(e))));
    return false;
  }
  if (!state_->startSweep(dir, &error)) {
    sweepStatus_->setText(tr("Sweep not started: %1").arg(error));
    return false;
  }
  openSweep(dir);
  startButton_->setEnabled(false);
  cancelButton_->setEnabled(true);
  progress_->setValue(0);
  sweepStatus_->setText(tr("Starting the sweep…"));
  return true;
}

void ExperimentsView::cancelSweep() {
  if (!runner()->running()) return;
  runner()->cancel();
  cancelButton_->setEnabled(false);
  sweepStatus_->setText(tr("Cancelling: the point under way stops at its next step with a checkpoint…"));
}

QString ExperimentsView::runningWork() const { return runner()->running() ? tr("sweep") : QString(); }

void ExperimentsView::stopForClose() { cancelSweep(); }

}  // namespace studio
