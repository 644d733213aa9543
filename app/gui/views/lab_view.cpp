#include "gui/views/lab_view.h"

#include <QColor>
#include <QDate>
#include <QDir>
#include <QComboBox>
#include <qcustomplot.h>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QJsonObject>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMap>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QSettings>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QScopeGuard>
#include <QStyledItemDelegate>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "gui/engine/engine_host.h"
#include "gui/engine/grid_runner.h"
#include "gui/engine_types.h"
#include "gui/studio_settings.h"
#include "gui/views/lab_state.h"
#include "gui/widgets/layout_helpers.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/plot_series.h"
#include "gui/widgets/colour_maps.h"
#include "hsm/files.h"
#include "hsm/lab_report.h"
#include "hsm/presets.h"
#include "hsm/receptive_field.h"
#include "hsm/version.h"
#include "hsm/run_folder.h"
#include "hsm/tasks.h"

namespace studio {

namespace {

// The models list's item for the Architecture view's current model (its text is translated,
// so it is told apart by this role).
constexpr int kArchitectureRole = Qt::UserRole + 1;
const char* kArchitectureFile = "models/architecture.json";

void addCheckable(QListWidget* list, const QString& text, bool checked, bool editable) {
  auto* item = new QListWidgetItem(text, list);
  Qt::ItemFlags flags = item->flags() | Qt::ItemIsUserCheckable;
  if (editable) flags |= Qt::ItemIsEditable;  // a task's difficulty is in its spec
  item->setFlags(flags);
  item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
}

// A task item shows its title ("mqar context 64, 8 pairs", hsm::task_title) and keeps its spec
// ("mqar:vocab=128,pairs=8,context=64") as its data and tooltip: the grid runs the spec, people
// read the title (issue 69: the list showed specs, cut at 1024x600).
constexpr int kTaskSpecRole = Qt::UserRole;

QString taskSpec(const QListWidgetItem* item) { return item->data(kTaskSpecRole).toString().trimmed(); }

// The task's title; a spec the tasks refuse is shown as typed (Run names its fault).
QString taskTitle(const QString& spec) {
  try {
    return qstr(hsm::task_title(spec.toStdString()));
  } catch (const std::exception&) {
    return spec;
  }
}

// A spec's settings in words: "recall_at:vocab=32,max_distance=15" -> "vocab 32, max distance 15".
QString taskSettingsInWords(const QString& spec) {
  QStringList words;
  for (const QString& setting : spec.section(QLatin1Char(':'), 1).split(QLatin1Char(','), Qt::SkipEmptyParts))
    words << QString(setting).replace(QLatin1Char('='), QLatin1Char(' ')).replace(QLatin1Char('_'), QLatin1Char(' ')).trimmed();
  return words.join(QStringLiteral(", "));
}

// The titles of tasks shown together: each its title, with its settings in words where two share
// one ("recall at" and "recall at (vocab 32, context 16, max distance 15)"; MAD's families).
QStringList taskTitles(const QStringList& specs) {
  QMap<QString, int> uses;
  for (const QString& spec : specs) ++uses[taskTitle(spec)];
  QStringList titles;
  for (const QString& spec : specs) {
    QString title = taskTitle(spec);
    const QString settings = taskSettingsInWords(spec);
    if (uses.value(title) > 1 && !settings.isEmpty() && title != spec) title += QStringLiteral(" (%1)").arg(settings);
    titles << title;
  }
  return titles;
}

QStringList taskTitles(const std::vector<std::string>& specs) {
  QStringList list;
  for (const std::string& spec : specs) list << qstr(spec);
  return taskTitles(list);
}

// Every task item's text: its title among the list's (taskTitles).
void labelTasks(QListWidget* list) {
  QStringList specs;
  for (int i = 0; i < list->count(); ++i) specs << taskSpec(list->item(i));
  const QStringList titles = taskTitles(specs);
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->text() != titles[i]) list->item(i)->setText(titles[i]);
}

// A grid task's title among the grid's.
QString gridTaskTitle(const hsm::LabGrid& grid, const std::string& spec) {
  const auto at = std::find(grid.tasks.begin(), grid.tasks.end(), spec) - grid.tasks.begin();
  return at < static_cast<long>(grid.tasks.size()) ? taskTitles(grid.tasks)[static_cast<int>(at)] : taskTitle(qstr(spec));
}

void addTask(QListWidget* list, const QString& spec, bool checked) {
  addCheckable(list, spec, checked, true);
  QListWidgetItem* item = list->item(list->count() - 1);
  item->setData(kTaskSpecRole, spec.trimmed());
  item->setToolTip(spec.trimmed());
}

QStringList checkedSpecs(const QListWidget* list) {
  QStringList out;
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->checkState() == Qt::Checked) out << taskSpec(list->item(i));
  return out;
}

// Double-clicking a task edits its spec, not its title: the editor opens on the spec and what is
// typed becomes the item's spec (and tooltip), its text the new spec's title.
class TaskSpecDelegate : public QStyledItemDelegate {
 public:
  explicit TaskSpecDelegate(QListWidget* list) : QStyledItemDelegate(list), list_(list) {}
  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    if (auto* line = qobject_cast<QLineEdit*>(editor))
      line->setText(index.data(kTaskSpecRole).toString());
    else
      QStyledItemDelegate::setEditorData(editor, index);
  }
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
    auto* line = qobject_cast<QLineEdit*>(editor);
    const QString spec = line ? line->text().trimmed() : QString();
    if (spec.isEmpty()) return;  // an emptied spec keeps the task as it was
    model->setData(index, spec, kTaskSpecRole);
    model->setData(index, spec, Qt::ToolTipRole);
    labelTasks(list_);
  }

 private:
  QListWidget* list_;
};

// The difficulty axis "accuracy against key-query distance on TASK" is "distance:TASK"; the one
// "FAMILY: accuracy against SETTING" (MAD's figure) is "setting:FAMILY:SETTING".
const QLatin1String kDistanceAxis("distance:");
const QLatin1String kSettingAxis("setting:");

// A comma-separated list of numbers from a form field, each one `valid`; else one line naming
// the bad part ("learning rate 'x' is not a positive number; ...").
std::vector<double> numberList(const QString& text, const std::string& what, const std::string& rule,
                               const std::function<bool(double)>& valid) {
  std::vector<double> out;
  for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    bool ok = false;
    const double x = part.trimmed().toDouble(&ok);
    if (!ok || !valid(x)) throw std::invalid_argument(what + " '" + part.trimmed().toStdString() + "' " + rule);
    out.push_back(x);
  }
  return out;
}

// A lab's point as a person reads it: "mqar · da_static_emb_qk · lr 0.003 · seed 1".
QString runTitle(const hsm::SweepPoint& p) {
  const QString task = qstr(p.task).section(QLatin1Char(':'), 0, 0);
  const QFileInfo model(qstr(p.model_source));
  return QStringLiteral("%1 · %2 · lr %3 · seed %4")
      .arg(task, model.suffix() == QLatin1String("json") ? model.completeBaseName() : qstr(p.model_source))
      .arg(p.train.lr)
      .arg(p.train.seed);
}

// Red (chance) through yellow to green (solved): the cell's answer accuracy.
QColor accuracyColour(double a) { return colours::redToGreen(a, 0.55, 0.95); }

QColor seriesColour(int i) { return colours::category10(i, 8); }

// An accuracy's whole range, not the data's (the panel fits the data; Fit does again).
void showAccuracyRange(PlotPanel* plot) {
  plot->plot()->yAxis->setRange(-0.02, 1.02);
  plot->plot()->replot(QCustomPlot::rpQueuedReplot);
}

// A duration as people say it: "about 40 seconds", "about 12 minutes", "about 2.5 hours".
QString durationText(double seconds) {
  if (seconds < 90) return LabView::tr("about %1 seconds").arg(std::max(5, static_cast<int>(std::lround(seconds / 5) * 5)));
  if (seconds < 90 * 60) return LabView::tr("about %1 minutes").arg(std::lround(seconds / 60));
  return LabView::tr("about %1 hours").arg(seconds / 3600, 0, 'f', 1);
}

int labJobs() { return std::max(1, QThread::idealThreadCount()); }  // a worker per core (runLab)

// A model's name in the grid: a config file by its name.
QString rowLabel(const std::string& model) {
  const QFileInfo file(qstr(model));
  return file.suffix() == QLatin1String("json") ? file.completeBaseName() : qstr(model);
}

}  // namespace

LabView::LabView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent), state_(new LabState(engine, this)), runner_(state_->runner()) {
  build();
  connectSignals();
  fillForm(hsm::default_lab_grid());
  folder_->setText(defaultFolder());
  setRunning(false);
  updateEstimate();
}

QString LabView::defaultFolder() {
  QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  if (documents.isEmpty()) documents = QDir::home().filePath(QStringLiteral("Documents"));
  return QDir(documents).filePath(QStringLiteral("HSM Studio labs/lab-") + QDate::currentDate().toString(Qt::ISODate));
}

bool LabView::showsLab() const { return gridPages_->currentIndex() == 1; }

// A first start (issue 68/69): the empty Lab opens the finished lab that ships with the studio,
// once, after whatever the caller that showed the view starts itself.
void LabView::showEvent(QShowEvent* event) {
  StudioView::showEvent(event);
  if (firstShown_) return;
  firstShown_ = true;
  QTimer::singleShot(0, this, [this] {
    QSettings settings;
    if (settings.value(QStringLiteral("lab/bundled_opened")).toBool() || isRunning() || showsLab()) return;
    const QString bundled = LabState::bundledLabFolder();
    if (bundled.isEmpty()) return;
    settings.setValue(QStringLiteral("lab/bundled_opened"), true);
    // Its grid goes into the form when the read arrives unless the user has started on the
    // form meanwhile: refilling it then would drop what they typed (and delete the task items
    // under an open editor).
    if (openLab(bundled)) firstStartOpen_ = true;
  });
}

QString LabView::estimateText() const { return estimate_->text(); }

void LabView::updateEstimate() {
  estimateSeconds_ = 0;
  QString cost;  // "24 runs, about 12 minutes on 2 cores"
  try {
    const hsm::LabEstimate e = hsm::estimate_lab(hsm::lab_sweep(formGrid()));
    estimateSeconds_ = e.cpu_s / labJobs();
    cost = (e.runs == 1 ? tr("1 run, %1").arg(durationText(estimateSeconds_))
                        : tr("%1 runs, %2").arg(e.runs).arg(durationText(estimateSeconds_))) +
           (labJobs() == 1 ? tr(" on one core") : tr(" on %1 cores").arg(labJobs()));
    estimate_->setText(tr("Run trains %1 (at most: a run that has learned its task stops early).").arg(cost));
  } catch (const std::exception& e) {
    estimate_->setText(tr("No estimate yet: %1").arg(QString::fromUtf8(e.what())));
  }
  intro_->setText(
      tr("<p><b>What the Lab answers</b></p>"
         "<p>Which kind of mixer can do what. Each task tests one skill on made-up data: recall the value of a key "
         "seen earlier (MQAR), recall at a set distance, copy, compress, memorise, keep track of a state (parity, "
         "permutations). Every checked model learns every checked task from scratch, at a few learning rates and "
         "seeds.</p>"
         "<p>Each cell of the grid that appears here is how often a model answers its task right on new examples: "
         "the best of its learning rates, the mean over its seeds, green when solved and red when no better than "
         "guessing. Below it, accuracy against difficulty and each cell's training curve.</p>"
         "<p>Press <b>Run</b> to train the grid on the left in the folder above (%1). "
         "Or <b>Open lab…</b> to look at a lab that has run before.</p>")
          .arg(cost.isEmpty() ? tr("check at least one task and one model") : cost.toHtmlEscaped()));
}

void LabView::build() {
  QWidget* form = buildForm();
  QWidget* right = buildResults();
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(scrollWhenShort(form, Qt::ScrollBarAlwaysOff));  // the form scrolls; Run and the exports stay
  splitter->addWidget(right);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 3);
  splitter->setSizes({380, 900});  // the task titles readable whole at 1280 px
  // The folder above both halves, never scrolled away with the form (issue 69: at 1024x600 it
  // was below the budget, out of sight, and Run asked for it).
  auto* folderRow = new QHBoxLayout;
  auto* folderName = new QLabel(tr("Lab folder"));
  folderName->setBuddy(folder_);
  folderRow->addWidget(folderName);
  folderRow->addWidget(folder_, 1);
  folderRow->addWidget(browse_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(folderRow);
  layout->addWidget(splitter, 1);
}

void LabView::buildFormControls() {
  tasks_ = new QListWidget;
  tasks_->setObjectName(QStringLiteral("lab_tasks"));
  tasks_->setToolTip(tr("Tasks (double-click one to change its difficulty, e.g. mqar:pairs=8,context=64)"));
  tasks_->setItemDelegate(new TaskSpecDelegate(tasks_));
  newTask_ = new QLineEdit;
  newTask_->setObjectName(QStringLiteral("lab_new_task"));
  newTask_->setPlaceholderText(tr("add a task spec, e.g. recall_at:max_distance=32"));
  models_ = new QListWidget;
  models_->setObjectName(QStringLiteral("lab_models"));
  models_->setToolTip(tr("Presets and model configs, trained at lab size (d 64, at most 4 layers)"));
  addConfig_ = new QPushButton(tr("Add a config…"));
  addConfig_->setObjectName(QStringLiteral("lab_add_config"));
  addConfig_->setToolTip(tr("A model config file (JSON, as the Architecture view saves): a row of the grid"));

  steps_ = new QSpinBox;
  steps_->setRange(1, 1000000);
  steps_->setObjectName(QStringLiteral("lab_steps"));
  batch_ = new QSpinBox;
  batch_->setRange(1, 4096);
  batch_->setObjectName(QStringLiteral("lab_batch"));
  seeds_ = new QSpinBox;
  seeds_->setRange(1, 100);
  seeds_->setObjectName(QStringLiteral("lab_seeds"));
  lrs_ = new QLineEdit;
  lrs_->setObjectName(QStringLiteral("lab_lrs"));
  lrs_->setToolTip(tr("Learning rates, comma-separated; each cell keeps the best (MAD's protocol)"));
  weightDecays_ = new QLineEdit;
  weightDecays_->setObjectName(QStringLiteral("lab_weight_decays"));
  weightDecays_->setPlaceholderText(tr("none: every run at 0"));
  weightDecays_->setToolTip(tr("Weight decays, comma-separated (MAD: 0, 0.1): an axis; each cell keeps the best over "
                               "learning rate x weight decay. Empty: no axis, every run at 0"));
  buildFolderControls();
}

void LabView::buildFolderControls() {
  folder_ = new QLineEdit;
  folder_->setObjectName(QStringLiteral("lab_folder"));
  folder_->setPlaceholderText(tr("lab folder (created if missing)"));
  folder_->setToolTip(tr("Where the lab keeps its runs and results; made when Run starts. A folder that holds a "
                         "lab already continues it."));
  browse_ = new QPushButton(tr("Browse…"));
  browse_->setObjectName(QStringLiteral("lab_browse"));
  estimate_ = new QLabel;
  estimate_->setObjectName(QStringLiteral("lab_estimate"));
  estimate_->setWordWrap(true);
  estimateTimer_ = new QTimer(this);
  estimateTimer_->setSingleShot(true);
  estimateTimer_->setInterval(300);
}

void LabView::buildRunControls() {
  open_ = new QPushButton(tr("Open lab…"));
  open_->setObjectName(QStringLiteral("lab_open"));
  run_ = new QPushButton(tr("Run"));
  run_->setObjectName(QStringLiteral("lab_run"));
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setObjectName(QStringLiteral("lab_cancel"));
  exportCsv_ = new QPushButton(tr("Export CSV…"));
  exportCsv_->setObjectName(QStringLiteral("lab_export_csv"));
  exportReport_ = new QPushButton(tr("Export report…"));
  exportReport_->setObjectName(QStringLiteral("lab_export_report"));
  exportReport_->setToolTip(tr("The lab's answer as one page (Markdown and HTML, the figures as SVG): the verdict "
                               "table, the figures, the exact settings and the command that reruns it"));
  progress_ = new QProgressBar;
  progress_->setObjectName(QStringLiteral("lab_progress"));
  progress_->setRange(0, 1000);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("lab_status"));
  training_ = new QLabel;
  training_->setObjectName(QStringLiteral("lab_training"));
  training_->setWordWrap(true);
  training_->hide();
  status_->setWordWrap(true);
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setObjectName(QStringLiteral("lab_log"));
  log_->setMaximumBlockCount(2000);
}

void LabView::buildResultControls() {
  grid_ = new QTableWidget;
  grid_->setObjectName(QStringLiteral("lab_grid"));
  grid_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // Each task's settings a line, each column as wide as its header (stretched ones cut
  // "in_context_recall" at 1280 px); the last column takes what is left.
  grid_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  grid_->horizontalHeader()->setStretchLastSection(true);
  // The cells' colour key (issue 48: a key for every tint).
  colourKey_ = new QLabel(tr("Cell colour, the answer accuracy: %1 %2 %3 %4 %5")
                              .arg(colours::swatch(accuracyColour(0), QStringLiteral("0")),
                                   colours::swatch(accuracyColour(0.25), QStringLiteral("0.25")),
                                   colours::swatch(accuracyColour(0.5), QStringLiteral("0.5")),
                                   colours::swatch(accuracyColour(0.75), QStringLiteral("0.75")),
                                   colours::swatch(accuracyColour(1), QStringLiteral("1"))));
  colourKey_->setObjectName(QStringLiteral("lab_colour_key"));
  colourKey_->setWordWrap(true);

  axis_ = new QComboBox;
  axis_->setObjectName(QStringLiteral("lab_difficulty_axis"));
  difficultyPlot_ = new PlotPanel(tr("Lab accuracy against difficulty"), tr("distance"), tr("answer accuracy"));
  difficultyPlot_->setObjectName(QStringLiteral("lab_difficulty_plot"));
  cellPlot_ = new PlotPanel(tr("Lab cell training"), tr("step"), tr("validation answer accuracy"));
  cellPlot_->setObjectName(QStringLiteral("lab_cell_plot"));
  // Room for the title, the axes and their labels from the start: on a short screen the area
  // around them scrolls instead of squeezing them to a strip (the bundled lab at 1024x600).
  for (PlotPanel* p : {difficultyPlot_, cellPlot_}) p->setMinimumHeight(200);
  showAccuracyRange(cellPlot_);
  showAccuracyRange(difficultyPlot_);
  intro_ = new QLabel;
  intro_->setObjectName(QStringLiteral("lab_intro"));
  intro_->setWordWrap(true);
  intro_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  intro_->setTextFormat(Qt::RichText);
  intro_->setMargin(8);
  // A first start opens the finished lab bundled with the studio (showEvent, issue 68/69).
  grid_->setSelectionMode(QAbstractItemView::NoSelection);  // a selected cell would hide its colour
  grid_->setMouseTracking(true);  // cellEntered: the hovered cell's curve
}

QWidget* LabView::buildForm() {
  buildFormControls();
  auto* form = new QWidget;
  auto* formLayout = new QVBoxLayout(form);
  formLayout->setContentsMargins(0, 0, 0, 0);
  auto* tasksBox = new QGroupBox(tr("Tasks"));
  auto* tasksLayout = new QVBoxLayout(tasksBox);
  tasksLayout->addWidget(tasks_);
  tasksLayout->addWidget(newTask_);
  auto* modelsBox = new QGroupBox(tr("Models"));
  auto* modelsLayout = new QVBoxLayout(modelsBox);
  modelsLayout->addWidget(models_);
  modelsLayout->addWidget(addConfig_, 0, Qt::AlignLeft);
  auto* budgetBox = new QGroupBox(tr("Budget"));
  auto* budget = new QFormLayout(budgetBox);
  budget->addRow(tr("Steps"), steps_);
  budget->addRow(tr("Batch"), batch_);
  budget->addRow(tr("Learning rates"), lrs_);
  budget->addRow(tr("Weight decays"), weightDecays_);
  budget->addRow(tr("Seeds"), seeds_);
  formLayout->addWidget(tasksBox, 2);
  formLayout->addWidget(modelsBox, 2);
  formLayout->addWidget(budgetBox);
  return form;
}

QWidget* LabView::buildResults() {
  buildRunControls();
  buildResultControls();
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  buttons->addWidget(progress_, 1);
  buttons->addWidget(open_);
  buttons->addWidget(exportCsv_);
  buttons->addWidget(exportReport_);
  auto* right = new QWidget;
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addLayout(buttons);
  rightLayout->addWidget(estimate_);
  rightLayout->addWidget(status_);
  rightLayout->addWidget(training_);
  // Until a lab is shown, what the Lab answers in the room of the grid, its plots and its log.
  gridPages_ = new QStackedWidget;
  gridPages_->setObjectName(QStringLiteral("lab_pages"));
  gridPages_->addWidget(scrollWhenShort(intro_, Qt::ScrollBarAlwaysOff));
  gridPages_->addWidget(scrollWhenShort(buildGridPlotsAndLog()));  // they scroll on a short screen, the buttons stay
  // Above the pages, not in their splitter: a splitter gives a wrapped label one line's height,
  // and the grid below it was drawn over by the colour key (the bundled lab at 1024x600).
  rightLayout->addWidget(bundled_);
  rightLayout->addWidget(gridPages_, 1);
  return right;
}

QWidget* LabView::buildGridPlotsAndLog() {
  auto* lower = new QSplitter(Qt::Vertical);
  auto* gridBox = new QWidget;
  auto* gridLayout = new QVBoxLayout(gridBox);
  gridLayout->setContentsMargins(0, 0, 0, 0);
  bundled_ = new QLabel;  // a lab that ships with the studio says how it was made
  bundled_->setObjectName(QStringLiteral("lab_bundled"));
  bundled_->setWordWrap(true);
  bundled_->hide();
  gridLayout->addWidget(grid_, 1);
  gridLayout->addWidget(colourKey_);
  lower->addWidget(gridBox);
  auto* plotBox = new QWidget;
  auto* plotLayout = new QVBoxLayout(plotBox);
  plotLayout->setContentsMargins(0, 0, 0, 0);
  plotLayout->addWidget(axis_);
  auto* plots = new QSplitter(Qt::Horizontal);
  plots->addWidget(difficultyPlot_);
  plots->addWidget(cellPlot_);
  plotLayout->addWidget(plots, 1);
  lower->addWidget(plotBox);
  lower->addWidget(log_);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 3);
  lower->setStretchFactor(2, 1);
  return lower;
}

void LabView::connectSignals() {
  connect(run_, &QPushButton::clicked, this, [this] { runLab(); });
  // What the launcher says for people: shown, never parsed.
  // The launcher's own lines speak the grid's language ("started t0_mqar,m0_gpt,seed=2"): the
  // log is written from the workers' events instead, in the form's words (issue 69); a failure
  // still reaches it through finished().
  // The workers' events: the bar, the runs in training, a scored run's cell.
  connect(runner_, &GridRunner::pointStarted, this, [this](int, const QString& point, bool resumed) {
    log_->appendPlainText((resumed ? tr("continuing %1 from its checkpoint") : tr("training %1"))
                              .arg(runTitles_.value(point, point)));
  });
  connect(runner_, &GridRunner::progress, this, &LabView::showProgress);
  for (QListWidget* list : {tasks_, models_})
    connect(list, &QListWidget::itemChanged, estimateTimer_, qOverload<>(&QTimer::start));
  for (QSpinBox* box : {steps_, batch_, seeds_})
    connect(box, &QSpinBox::valueChanged, estimateTimer_, qOverload<>(&QTimer::start));
  // Whether the user has changed the form (what fillForm itself sets does not count).
  auto touched = [this] { formTouched_ = formTouched_ || !fillingForm_; };
  for (QListWidget* list : {tasks_, models_}) connect(list, &QListWidget::itemChanged, this, touched);
  for (QSpinBox* box : {steps_, batch_, seeds_}) connect(box, &QSpinBox::valueChanged, this, touched);
  for (QLineEdit* field : {lrs_, weightDecays_}) connect(field, &QLineEdit::textEdited, this, touched);
  for (QLineEdit* field : {lrs_, weightDecays_, folder_})
    connect(field, &QLineEdit::textChanged, estimateTimer_, qOverload<>(&QTimer::start));
  connect(estimateTimer_, &QTimer::timeout, this, &LabView::updateEstimate);
  connect(runner_, &GridRunner::pointFinished, this,
          [this](int, const QString& point, const QString& state, const QJsonObject& event) {
            if (state != QLatin1String("done")) return;
            log_->appendPlainText(tr("%1: done, answers right %2 of the time")
                                      .arg(runTitles_.value(point, point))
                                      .arg(QString::number(100 * event.value(QStringLiteral("answer_accuracy")).toDouble(), 'f', 1) + QStringLiteral(" %")));
          });
  // The state keeps the cells (from the folder once, then from the workers' events): drawn
  // when they change, the tooltips and the cell curve again when a run's files arrive.
  connect(state_, &LabState::cellsChanged, this, &LabView::showTable);
  connect(state_, &LabState::filesRead, this, [this] {
    showToolTips();
    showCellCurve(cellRow_, cellColumn_);
  });
  connect(state_, &LabState::opened, this, [this](const QString& dir) {
    if (dir == runningDir_ && !state_->runs().empty())  // the running lab's runs scored before
      log_->appendPlainText(tr("Continuing the lab in %1: %2 of %3 runs done already")
                                .arg(dir)
                                .arg(state_->runs().size())
                                .arg(hsm::lab_run_count(state_->lab()->grid())));
    if (dir != openingDir_) return;  // the running lab's: no form or status to change
    openingDir_.clear();
    if (!firstStartOpen_ || !formTouched_) fillForm(state_->lab()->grid());
    firstStartOpen_ = false;
    status_->setText(tr("%1: %2 of %3 runs scored")
                         .arg(QFileInfo(dir).fileName())
                         .arg(state_->runs().size())
                         .arg(hsm::lab_run_count(state_->lab()->grid())));
  });
  connect(state_, &LabState::openFailed, this, [this](const QString& dir, const QString& message) {
    status_->setText(tr("Cannot open %1: %2").arg(dir, message));
  });
  connect(runner_, &GridRunner::finished, this, &LabView::onRunnerFinished);
  connect(cancel_, &QPushButton::clicked, this, &LabView::cancelLab);
  connect(grid_, &QTableWidget::cellDoubleClicked, this, [this](int row, int column) {
    const QString dir = cellRun(row, column);
    if (!dir.isEmpty()) emit runRequested(dir);
  });
  connect(grid_, &QTableWidget::cellEntered, this, &LabView::showCellCurve);
  connect(grid_, &QTableWidget::currentCellChanged, this, [this](int row, int column) { showCellCurve(row, column); });
  connect(axis_, &QComboBox::currentIndexChanged, this, [this] { showDifficulty(); });
  connect(newTask_, &QLineEdit::returnPressed, this, [this] {
    const QString spec = newTask_->text().trimmed();
    if (spec.isEmpty()) return;
    addTask(tasks_, spec, true);
    labelTasks(tasks_);
    newTask_->clear();
  });
  connect(addConfig_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("A model config"), folder(), tr("Model configs (*.json)"));
    if (!path.isEmpty()) addModelConfig(path);
  });
  connect(browse_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Lab folder"), folder_->text());
    if (!dir.isEmpty()) folder_->setText(dir);
  });
  connect(open_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a lab folder"), folder_->text());
    if (!dir.isEmpty()) openLab(dir);
  });
  connect(exportCsv_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the lab table"),
                                                      QFileInfo(folder_->text()).fileName() + QStringLiteral("-lab.csv"),
                                                      tr("CSV (*.csv)"));
    QString error;
    if (!path.isEmpty() && !exportCsv(path, &error)) status_->setText(error);
  });
  connect(exportReport_, &QPushButton::clicked, this, [this] {
    // The page people open (HTML) first, the Markdown one beside it (issue 69: only "Markdown
    // (*.md)" was offered, and the HTML page was written only when the user typed .html).
    // Never offered inside a bundled lab (it is not the user's to write into).
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the lab's report"),
                                                      LabState::isBundledLab(folder()) ? StudioSettings::dialogPath(QStringLiteral("report.html"))
                                                                             : QDir(folder_->text()).filePath(QStringLiteral("report.html")),
                                                      tr("Web page, with its Markdown beside it (*.html);;"
                                                         "Markdown, with its web page beside it (*.md)"));
    if (path.isEmpty()) return;
    const QFileInfo chosen(path);
    const QString stem = chosen.dir().filePath(chosen.suffix() == QLatin1String("html") || chosen.suffix() == QLatin1String("md")
                                                   ? chosen.completeBaseName()
                                                   : chosen.fileName());
    QString error;
    status_->setText(exportReport(stem + QStringLiteral(".md"), &error)
                         ? tr("Wrote %1.html (open it in a browser) and %1.md, with the figures beside them").arg(stem)
                         : error);
  });
}

void LabView::fillForm(const hsm::LabGrid& grid) {
  fillingForm_ = true;
  const auto filled = qScopeGuard([this] { fillingForm_ = false; });
  // The grid's tasks ticked, then every other task the lab offers and every task the user had
  // listed, unticked: a run never empties the list of what the user left unticked.
  QStringList listed;
  for (const std::string& t : grid.tasks) listed << qstr(t);
  QStringList offered;
  for (const std::string& t : hsm::lab_task_choices()) offered << qstr(t);
  for (int i = 0; i < tasks_->count(); ++i) offered << taskSpec(tasks_->item(i));
  tasks_->clear();
  for (const QString& t : listed) addTask(tasks_, t, true);
  for (const QString& t : offered)
    if (!listed.contains(t)) {
      addTask(tasks_, t, false);
      listed << t;
    }
  labelTasks(tasks_);
  models_->clear();
  QStringList models;
  for (const std::string& m : grid.models) models << qstr(m);
  for (const QString& m : models) addCheckable(models_, m, true, false);
  for (const std::string& name : hsm::preset_names())
    if (!models.contains(qstr(name))) addCheckable(models_, qstr(name), false, false);
  addArchitectureItem();
  steps_->setValue(static_cast<int>(grid.steps));
  batch_->setValue(static_cast<int>(grid.batch));
  seeds_->setValue(static_cast<int>(grid.seeds));
  QStringList lrs;
  for (double lr : grid.lrs) lrs << QString::number(lr);
  lrs_->setText(lrs.join(QStringLiteral(", ")));
  QStringList decays;
  for (double wd : grid.weight_decays) decays << QString::number(wd);
  weightDecays_->setText(decays.join(QStringLiteral(", ")));
}

hsm::LabGrid LabView::formGrid() const {
  // What the form does not show (size, early stop, test examples, device, protocol) is the
  // folder's lab's when the folder holds one: a reopened lab runs on as itself, not as another
  // grid its folder refuses; a new folder gets hsm lab's defaults.
  hsm::LabGrid grid = hsm::default_lab_grid();
  if (!folder().isEmpty()) {
    try {
      grid = hsm::Lab::stored_grid(folder().toStdString());
    } catch (const std::exception&) {
      // no lab there (yet): the defaults; an unreadable one is refused, named, when Run opens it
    }
  }
  grid.tasks.clear();
  grid.models.clear();
  grid.lrs.clear();
  grid.weight_decays.clear();
  for (const QString& t : checkedSpecs(tasks_)) grid.tasks.push_back(t.toStdString());
  for (int i = 0; i < models_->count(); ++i) {
    const QListWidgetItem* item = models_->item(i);
    if (item->checkState() != Qt::Checked) continue;
    grid.models.push_back(item->data(kArchitectureRole).toBool()
                              ? QDir(folder()).filePath(QString::fromLatin1(kArchitectureFile)).toStdString()
                              : item->text().trimmed().toStdString());
  }
  grid.lrs = numberList(lrs_->text(), "learning rate", "is not a positive number; give e.g. 0.001, 0.003",
                         [](double lr) { return lr > 0; });
  grid.weight_decays = numberList(weightDecays_->text(), "weight decay",
                                  "is not a number from 0 to below 1; give e.g. 0, 0.1, or nothing for none",
                                  [](double wd) { return wd >= 0 && wd < 1; });
  if (grid.tasks.empty()) throw std::invalid_argument("no task checked; check at least one task");
  if (grid.models.empty()) throw std::invalid_argument("no model checked; check at least one model");
  if (grid.lrs.empty()) throw std::invalid_argument("no learning rate; give at least one, e.g. 0.003");
  grid.steps = steps_->value();
  grid.batch = batch_->value();
  grid.seeds = seeds_->value();
  return grid;
}

bool LabView::addModelConfig(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  try {
    hsm::load_preset_or_config(absolute.toStdString());  // a file that is not a model is refused here
  } catch (const std::exception& e) {
    status_->setText(tr("Cannot add %1: %2").arg(QFileInfo(path).fileName(), QString::fromUtf8(e.what())));
    return false;
  }
  for (int i = 0; i < models_->count(); ++i)
    if (models_->item(i)->text() == absolute) {
      models_->item(i)->setCheckState(Qt::Checked);
      return true;
    }
  addCheckable(models_, absolute, true, false);
  models_->item(models_->count() - 1)->setToolTip(absolute);
  status_->setText(tr("Added %1 (a row named %2)").arg(absolute, QFileInfo(path).completeBaseName()));
  return true;
}

void LabView::setArchitectureModel(std::function<QString(const QString&)> save) {
  saveArchitecture_ = std::move(save);
  addArchitectureItem();
}

void LabView::addArchitectureItem() {
  if (!saveArchitecture_) return;
  addCheckable(models_, tr("the Architecture view's model"), false, false);
  models_->item(models_->count() - 1)->setData(kArchitectureRole, true);
}

void LabView::setFolder(const QString& dir) { folder_->setText(dir); }
QString LabView::folder() const { return folder_->text().trimmed(); }
QString LabView::status() const { return status_->text(); }

void LabView::setRunning(bool running) {
  estimate_->setVisible(!running);  // the status says how far the running lab is
  run_->setEnabled(!running);
  cancel_->setEnabled(running);
  open_->setEnabled(!running);
  for (QWidget* w : std::initializer_list<QWidget*>{tasks_, newTask_, models_, addConfig_, steps_, batch_, seeds_, lrs_, weightDecays_, folder_, browse_})
    w->setEnabled(!running);  // the form is the running grid's until it stops
}

bool LabView::runLab() {
  if (isRunning()) return false;
  delete endWait_;  // the last lab's end, still waiting for a read, is not said any more
  endWait_ = nullptr;
  hsm::LabGrid grid;
  std::unique_ptr<hsm::Lab> lab;
  try {
    if (folder().isEmpty()) throw std::invalid_argument("no lab folder; type one above or choose one (Browse…)");
    if (LabState::isBundledLab(folder())) {
      const QString copy = LabState::copyBundledLab(folder(), QFileInfo(defaultFolder()).absolutePath());
      log_->appendPlainText(tr("The bundled lab is read-only: continuing it in a copy, %1").arg(copy));
      setFolder(copy);
    }
    grid = formGrid();
    const std::string architecture = QDir(folder()).filePath(QString::fromLatin1(kArchitectureFile)).toStdString();
    if (saveArchitecture_ && std::count(grid.models.begin(), grid.models.end(), architecture) > 0 &&
        !QFileInfo::exists(qstr(architecture))) {  // a reopened lab keeps the model it was run with
      QDir(folder()).mkpath(QStringLiteral("models"));
      const QString error = saveArchitecture_(qstr(architecture));
      if (!error.isEmpty()) throw std::invalid_argument("the Architecture view's model: " + error.toStdString());
    }
    for (const std::string& t : grid.tasks) hsm::parse_task(t);  // a bad spec is refused here, not on the thread
    lab = std::make_unique<hsm::Lab>(folder().toStdString(), grid);
  } catch (const std::exception& e) {
    status_->setText(tr("Cannot run: %1").arg(QString::fromUtf8(e.what())));
    return false;
  }
  const qint64 total = hsm::lab_run_count(grid);
  runTitles_.clear();
  for (const hsm::SweepPoint& p : lab->sweep().points) runTitles_[qstr(p.name)] = runTitle(p);
  runningDir_ = folder();
  openingDir_.clear();
  QString error;
  // Worker processes, one per core (GridRunner says why): the analysis thread stays free. The
  // state shows the lab at once and reads the runs scored already off the GUI thread.
  if (!state_->run(*lab, labJobs(), &error)) {
    runningDir_.clear();
    status_->setText(tr("Cannot run: %1").arg(error));
    return false;
  }
  runEstimateSeconds_ = 0;
  try {
    runEstimateSeconds_ = hsm::estimate_lab(lab->sweep()).cpu_s / labJobs();
  } catch (const std::exception&) {
    // no estimate: the bar alone says how far it is
  }
  log_->appendPlainText(tr("Starting a lab of %1 runs in %2").arg(total).arg(runningDir_));
  setRunning(true);
  showProgress(0);
  return true;
}

void LabView::showProgress(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  progress_->setValue(static_cast<int>(fraction * 1000));
  // A tenth of a percent while it is small: a minute into a twelve-minute lab is not "0 %".
  const QString percent = QString::number(100 * fraction, 'f', fraction < 0.1 ? 1 : 0) + QStringLiteral(" %");
  progress_->setFormat(percent);
  const qint64 total = runner_->points() > 0 ? runner_->points() : hsm::lab_run_count(shownGrid_);
  const qint64 done = runner_->done();
  QString text = tr("%1 of %2 runs done, %3 of the lab").arg(done).arg(total).arg(percent);
  if (runEstimateSeconds_ > 0)
    text += tr("; %1 left (the lab's estimate)").arg(durationText(runEstimateSeconds_ * (1 - fraction)));
  status_->setText(text);
  QStringList training;
  for (const auto& [run, f] : runner_->inTraining())
    training << tr("%1 (%2 %)").arg(runTitles_.value(run, run)).arg(static_cast<int>(f * 100));
  training_->setText(training.isEmpty() ? QString() : tr("Training: %1").arg(training.join(QStringLiteral("; "))));
  training_->setVisible(!training.isEmpty());
}

void LabView::onRunnerFinished(bool cancelled, const QString& error) {
  training_->clear();
  training_->hide();
  const QString dir = runningDir_;
  runningDir_.clear();
  setRunning(false);
  // The cells are the events' already: the folder is not read again. A run the state still
  // reads (an event without its score) counts once it arrives.
  if (state_->isReading()) {
    endWait_ = new QObject(this);  // gone (and the wait with it) if another Run starts first
    connect(state_, &LabState::idle, endWait_, [this, dir, cancelled, error] {
      endWait_->deleteLater();
      endWait_ = nullptr;
      reportLabEnd(dir, cancelled, error);
    });
    return;
  }
  reportLabEnd(dir, cancelled, error);
}

void LabView::reportLabEnd(const QString& dir, bool cancelled, const QString& error) {
  const qint64 total = hsm::lab_run_count(shownGrid_);
  const qint64 scored = static_cast<qint64>(state_->runs().size());
  if (!error.isEmpty())
    status_->setText(tr("The lab stopped: %1 (%2 of %3 runs scored; Run continues it)").arg(error).arg(scored).arg(total));
  else if (cancelled || scored < total)
    status_->setText(tr("Cancelled: %1 of %2 runs scored; Run continues the lab.").arg(scored).arg(total));
  else
    status_->setText(tr("Done: %1 run(s) scored in %2.").arg(scored).arg(dir));
  if (!error.isEmpty()) log_->appendPlainText(error);
  emit labFinished(cancelled || !error.isEmpty() || scored < total);
}

bool LabView::isRunning() const { return runner_->running(); }

QString LabView::runningWork() const { return isRunning() ? tr("lab") : QString(); }

void LabView::stopForClose() {
  if (isRunning()) cancelLab();
}

void LabView::cancelLab() {
  if (!isRunning()) return;
  state_->cancel();
  status_->setText(tr("Cancelling (each run stops at its step and keeps its checkpoint)…"));
}

bool LabView::openLab(const QString& dir) {
  if (isRunning()) return false;
  // A folder without a grid is refused at once; the rest is read off the GUI thread (opened).
  if (!QFileInfo::exists(QDir(dir).filePath(QStringLiteral("sweep.json")))) {
    status_->setText(tr("Cannot open %1: it holds no lab (no sweep.json)").arg(dir));
    return false;
  }
  folder_->setText(dir);
  openingDir_ = dir;
  firstStartOpen_ = false;
  status_->setText(tr("Reading %1…").arg(dir));
  state_->open(dir);
  return true;
}

bool LabView::isReading() const { return state_->isReading(); }

const std::vector<hsm::LabCell>& LabView::cells() const { return state_->cells(); }

void LabView::showLab(const QString& dir) {
  if (QDir(dir).absolutePath() == QDir(shownDir_).absolutePath() && !shownDir_.isEmpty()) return;
  shownDir_ = dir;
  log_->clear();
  cellRow_ = cellColumn_ = -1;
  cellPlot_->setXLabel(tr("step · no cell of %1 scored yet").arg(QFileInfo(dir).fileName()));
  cellPlot_->setSeries({});
}

void LabView::showTable() {
  if (!state_->lab()) return;
  const hsm::Lab& lab = *state_->lab();
  const std::vector<hsm::LabCell>& cells = state_->cells();
  const QString dir = qstr(lab.dir());
  const hsm::LabGrid& grid = lab.grid();
  showLab(dir);
  gridPages_->setCurrentIndex(1);
  // The difficulty plot's panels are the lab report's (hsm/lab_report.h), from the same cells.
  setDifficultyAxes();  // showDifficulty() runs below, once
  shownGrid_ = grid;
  showBundle();
  grid_->clear();
  grid_->setRowCount(static_cast<int>(grid.models.size()));
  grid_->setColumnCount(static_cast<int>(grid.tasks.size()));
  QStringList rows, columns;
  for (const std::string& m : grid.models) rows << rowLabel(m);
  // Each task's title (its spec in the tooltip), a part a line: columns side by side fit 900 px so.
  for (const QString& title : taskTitles(grid.tasks))
    columns << QString(title).replace(QStringLiteral(", "), QStringLiteral("\n")).replace(QStringLiteral(" ("), QStringLiteral("\n("));
  grid_->setVerticalHeaderLabels(rows);
  grid_->setHorizontalHeaderLabels(columns);
  for (int c = 0; c < columns.size(); ++c) grid_->horizontalHeaderItem(c)->setToolTip(qstr(grid.tasks[static_cast<size_t>(c)]));
  for (const hsm::LabCell& c : cells) {
    const auto ti = std::find(grid.tasks.begin(), grid.tasks.end(), c.task) - grid.tasks.begin();
    const auto mi = std::find(grid.models.begin(), grid.models.end(), c.model) - grid.models.begin();
    if (ti >= static_cast<long>(grid.tasks.size()) || mi >= static_cast<long>(grid.models.size())) continue;
    auto* item = new QTableWidgetItem;
    item->setTextAlignment(Qt::AlignCenter);
    if (std::isfinite(c.answer_accuracy)) {
      item->setText(cellText(c));
      item->setBackground(accuracyColour(c.answer_accuracy));
      item->setForeground(Qt::black);
    } else {
      item->setText(QStringLiteral("–"));
      item->setToolTip(tr("%1 on %2: not scored yet").arg(qstr(c.model), qstr(c.task)));
    }
    grid_->setItem(static_cast<int>(mi), static_cast<int>(ti), item);
  }
  grid_->resizeRowsToContents();
  // The grid keeps its header and every row in view, and the area around it scrolls on a short
  // screen: at 1024x600 the bundled lab's grid was squeezed to 56 px, its header alone 60.
  int height = grid_->horizontalHeader()->sizeHint().height() + 2 * grid_->frameWidth();
  for (int r = 0; r < grid_->rowCount(); ++r) height += grid_->rowHeight(r);
  grid_->setMinimumHeight(std::min(height, 360));
  showToolTips();
  showDifficulty();
  // The shown cell's curve with its new points; until a cell is hovered or chosen, the curve of
  // the first one scored (an empty plot would look like a failure).
  if (!cellRuns(cellRow_, cellColumn_).empty()) return showCellCurve(cellRow_, cellColumn_);
  for (int r = 0; r < grid_->rowCount(); ++r)
    for (int c = 0; c < grid_->columnCount(); ++c)
      if (!cellRuns(r, c).empty()) return showCellCurve(r, c);
}

// A bundled lab (its BUNDLED.json): the command, machine and date that made it, and that Run
// continues it in a copy.
void LabView::showBundle() {
  const std::optional<LabBundle>& b = state_->bundle();
  bundled_->setVisible(b.has_value());
  if (!b) return bundled_->clear();
  bundled_->setText(tr("A finished lab that ships with HSM Studio: made with %1 on %2, %3. It is read-only; Run "
                       "continues it in a copy in your labs folder.")
                        .arg(b->command.isEmpty() ? tr("an unrecorded command") : b->command,
                             b->machine.isEmpty() ? tr("an unrecorded machine") : b->machine,
                             b->date.isEmpty() ? tr("an unrecorded date") : b->date));
}

// "0.964 ± 0.021 ★": the mean over seeds at the best learning rate, its spread, and the marks of
// the protocol (docs/lab.md, "The protocol"): ★ the row's best, = tied with it, "chance" when
// the answers are indistinguishable from guessing, "not converged" when a run stopped on a plateau
// or still rose at its last step (the cell answers no capability question; issue 68).
QString LabView::cellText(const hsm::LabCell& c) {
  QString text = QString::number(c.answer_accuracy, 'f', 3);
  if (std::isfinite(c.answer_sd)) text += QStringLiteral(" ± ") + QString::number(c.answer_sd, 'f', 3);
  if (c.best)
    text += QStringLiteral(" ★");
  else if (c.tied_with_best)
    text += QStringLiteral(" =");
  if (c.at_chance) text += QStringLiteral("\n") + tr("chance");
  if (c.not_converged) text += QStringLiteral("\n") + tr("not converged");
  return text;
}

QString LabView::cellToolTip(const hsm::LabCell& c, const QStringList& formed) {
  QStringList seeds;
  for (double a : c.seed_accuracy) seeds << QString::number(a, 'f', 3);
  QString tip = tr("%1 on %2\nanswer accuracy %3 (mean of %4 seed(s): %5), sd %6\nsequence accuracy %7\n"
                   "best learning rate %8, weight decay %10; runs finished: %9")
                    .arg(qstr(c.model), qstr(c.task))
                    .arg(c.answer_accuracy, 0, 'f', 4)
                    .arg(c.n)
                    .arg(seeds.join(QStringLiteral(", ")))
                    .arg(std::isfinite(c.answer_sd) ? QString::number(c.answer_sd, 'f', 4) : tr("— (one seed)"))
                    .arg(c.sequence_accuracy, 0, 'f', 4)
                    .arg(c.best_lr)
                    .arg(c.runs)
                    .arg(c.best_weight_decay);
  tip += tr("\nchance %1: %2 (one-sided exact binomial test of %3 of %4 answers, p = %5)")
             .arg(c.chance, 0, 'g', 3)
             .arg(c.at_chance ? tr("indistinguishable from chance") : tr("above chance"))
             .arg(c.right)
             .arg(c.answers)
             .arg(c.p_above_chance, 0, 'g', 3);
  if (c.best)
    tip += tr("\n★ the best of its task");
  else if (!c.tie_test.empty())
    tip += tr("\n%1 the task's best (%2, p = %3)")
               .arg(c.tied_with_best ? tr("= indistinguishable from") : tr("below"),
                    c.tie_test == "welch" ? tr("Welch's t-test over seeds") : tr("two-proportion z-test"))
               .arg(c.p_below_best, 0, 'g', 3);
  if (c.not_converged) {
    tip += tr("\nnot converged: no capability answer (a longer budget or another learning rate may change it)");
    for (const std::string& line : c.not_converged_evidence) tip += QStringLiteral("\n  ") + qstr(line);
  }
  // Issue 67: whether the cell failed for lack of a mechanism or of steps (hsm::run_formation of
  // the traces each run recorded while it trained; "–" for a run that recorded none).
  if (!formed.isEmpty()) {
    tip += tr("\nmechanism (from the traces recorded while it trained):");
    for (const QString& line : formed) tip += QStringLiteral("\n  ") + line;
  }
  return tip;
}

std::vector<const hsm::LabRun*> LabView::cellRuns(int row, int column) const {
  if (row < 0 || column < 0 || row >= static_cast<int>(shownGrid_.models.size()) ||
      column >= static_cast<int>(shownGrid_.tasks.size()))
    return {};
  return state_->cellRuns(shownGrid_.tasks[static_cast<size_t>(column)], shownGrid_.models[static_cast<size_t>(row)]);
}

// Each scored cell's tooltip: its numbers and, once its runs' files are read, when each run's
// mechanism formed (issue 67).
void LabView::showToolTips() {
  for (const hsm::LabCell& c : state_->cells()) {
    const auto ti = std::find(shownGrid_.tasks.begin(), shownGrid_.tasks.end(), c.task) - shownGrid_.tasks.begin();
    const auto mi = std::find(shownGrid_.models.begin(), shownGrid_.models.end(), c.model) - shownGrid_.models.begin();
    QTableWidgetItem* item = grid_->item(static_cast<int>(mi), static_cast<int>(ti));
    if (item == nullptr || !std::isfinite(c.answer_accuracy)) continue;
    QStringList formed;
    for (const hsm::LabRun* r : cellRuns(static_cast<int>(mi), static_cast<int>(ti))) {
      const LabRunFiles* files = state_->runFiles(r->run_dir);
      formed << tr("seed %1: %2").arg(r->seed).arg(files ? files->formation : tr("(reading its traces…)"));
    }
    item->setToolTip(cellToolTip(c, formed));
  }
}

QString LabView::cellRun(int row, int column) const {
  const std::vector<const hsm::LabRun*> runs = cellRuns(row, column);
  return runs.empty() ? QString() : qstr(runs.front()->run_dir);
}

QList<PlotPanel*> LabView::plots() const { return {difficultyPlot_, cellPlot_}; }

void LabView::showCellCurve(int row, int column) {
  if (row < 0 || column < 0 || row >= static_cast<int>(shownGrid_.models.size()) ||
      column >= static_cast<int>(shownGrid_.tasks.size()))
    return;
  cellRow_ = row;
  cellColumn_ = column;
  QVector<PlotSeries> series;
  int colour = 0;
  for (const hsm::LabRun* r : cellRuns(row, column)) {
    PlotSeries s;
    s.name = tr("seed %1").arg(r->seed);
    s.color = seriesColour(colour++);
    const LabRunFiles* files = state_->runFiles(r->run_dir);
    if (files == nullptr || files->steps.isEmpty()) continue;  // not read yet, or a folder removed since
    s.x = files->steps;
    s.y = files->accuracy;
    series << s;
  }
  const std::unique_ptr<hsm::Task> task = hsm::parse_task(shownGrid_.tasks[static_cast<size_t>(column)]);
  if (!series.isEmpty()) series << chanceLine(series.front().x, task->chance());
  cellPlot_->setXLabel(tr("step · %1 on %2")
                           .arg(rowLabel(shownGrid_.models[static_cast<size_t>(row)]),
                                gridTaskTitle(shownGrid_, shownGrid_.tasks[static_cast<size_t>(column)])));
  cellPlot_->setSeries(series);
  showAccuracyRange(cellPlot_);
}

// Guessing's accuracy, dashed across the x range of a plot's curves (issue 50: chance in every plot).
PlotSeries LabView::chanceLine(const QVector<double>& x, double chance) {
  PlotSeries s;
  s.name = tr("chance (%1)").arg(chance, 0, 'g', 3);
  s.color = QColor(110, 110, 110);
  s.style = PlotSeries::Style::kDashedLine;
  if (!x.isEmpty()) {
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    s.x = {*lo, *hi};
    s.y = {chance, chance};
  }
  return s;
}

// The difficulty plot's choices: the lab report's panels (hsm::lab_distance_panels: accuracy
// against key-query distance on each task whose answers carry one, the default lab's MQAR at
// context 64 first; hsm::lab_difficulty_panels: MAD's accuracy against a task's setting, where the
// lab changes one). The chosen one is kept while the lab still offers it.
void LabView::setDifficultyAxes() {
  const QSignalBlocker quiet(axis_);
  const QString kept = axis_->currentData().toString();
  axis_->clear();
  for (const hsm::LabDistancePanel& d : state_->distancePanels())
    axis_->addItem(tr("%1: accuracy against key-query distance").arg(state_->lab() ? gridTaskTitle(state_->lab()->grid(), d.task) : taskTitle(qstr(d.task))), QString(kDistanceAxis) + qstr(d.task));
  for (const hsm::LabDifficultyPanel& d : state_->difficultyPanels())
    axis_->addItem(tr("%1: accuracy against %2").arg(qstr(d.family), qstr(d.setting)),
                   QString(kSettingAxis) + qstr(d.family) + QLatin1Char(':') + qstr(d.setting));
  const int at = axis_->findData(kept);
  axis_->setCurrentIndex(at >= 0 ? at : 0);
}

// The report's panel the axis names; nullptr when the lab has none (nothing scored yet).
const hsm::SvgPanel* LabView::chosenPanel() const {
  const QString axis = axis_->currentData().toString();
  for (const hsm::LabDistancePanel& d : state_->distancePanels())
    if (axis == QString(kDistanceAxis) + qstr(d.task)) return &d.panel;
  for (const hsm::LabDifficultyPanel& d : state_->difficultyPanels())
    if (axis == QString(kSettingAxis) + qstr(d.family) + QLatin1Char(':') + qstr(d.setting)) return &d.panel;
  return nullptr;
}

QVector<PlotSeries> LabView::panelSeries(const hsm::SvgPanel& panel) {
  QVector<PlotSeries> out;
  QVector<double> xs;
  for (size_t i = 0; i < panel.series.size(); ++i) {
    const hsm::SvgSeries& s = panel.series[i];
    PlotSeries line;
    line.name = qstr(s.label);
    line.color = seriesColour(s.colour >= 0 ? s.colour : static_cast<int>(i));
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k)
      if (std::isfinite(s.y[k])) {  // a cell not scored yet: no point, as in the report's figure
        line.x << s.x[k];
        line.y << s.y[k];
      }
    xs += line.x;
    out << line;
  }
  // A model's reach inside the distances drawn (issue 50: the why of its curve), in its colour.
  for (const hsm::SvgVLine& v : panel.vlines) {
    PlotSeries line;
    line.name = qstr(v.label);
    line.color = v.colour >= 0 ? seriesColour(v.colour) : QColor(110, 110, 110);
    line.style = PlotSeries::Style::kDashedLine;
    line.x = {v.x, v.x};
    line.y = {panel.y_min, panel.y_max};
    out << line;
  }
  for (const hsm::SvgRefLine& r : panel.lines) {
    PlotSeries line = chanceLine(xs, r.y);
    line.name = qstr(r.label);
    out << line;
  }
  return out;
}

void LabView::showDifficulty() {
  const hsm::SvgPanel* panel = chosenPanel();
  const QVector<PlotSeries> series = panel ? panelSeries(*panel) : QVector<PlotSeries>();
  // An empty plot says why instead of showing bare axes.
  difficultyPlot_->setXLabel(panel ? tr("%1 · %2").arg(qstr(panel->x_label), qstr(panel->title))
                                   : tr("difficulty (no results yet)"));
  difficultyPlot_->setSeries(series);
  showAccuracyRange(difficultyPlot_);
}

bool LabView::exportReport(const QString& mdPath, QString* error) const {
  namespace fs = std::filesystem;
  try {
    const std::string dir = folder().toStdString();
    const hsm::Lab lab(dir, hsm::Lab::stored_grid(dir));
    const auto files = hsm::lab_report_files(lab, mdPath.toStdString(), HSM_VERSION);
    QStringList existing;  // the chosen page's overwrite was asked by the dialog; the rest was not
    for (size_t i = 1; i < files.size(); ++i)
      if (fs::exists(fs::symlink_status(files[i].first))) existing << QString::fromStdString(files[i].first);
    if (!existing.isEmpty()) {
      if (error) *error = tr("Not written: %1 already exist(s) beside the report; choose another name or folder")
                              .arg(existing.join(QStringLiteral(", ")));
      return false;
    }
    for (const auto& [path, text] : files) hsm::write_file_atomic(path, text);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = tr("Cannot write the report: %1").arg(QString::fromStdString(e.what()));
    return false;
  }
}

bool LabView::exportCsv(const QString& path, QString* error) const {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = tr("Cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  file.write(QByteArray::fromStdString(hsm::Lab::table_csv(state_->cells())));
  return true;
}

}  // namespace studio
