#include "gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QSpinBox>
#include <QTextBrowser>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/help/tour.h"
#include "gui/help/view_help.h"
#include "gui/view_registry.h"
#include "gui/views/presentation_mode.h"
#include "gui/views/start_page.h"
#include "gui/views/studio_view.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/widget_export.h"
#include "hsm/errors.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "hsm/version.h"

namespace studio {
namespace {

// A page of the main window's stacks. QStackedLayout asks every page, shown or not, for its
// height at the window's width whenever the window lays out (QStackedLayout::heightForWidth),
// so one word-wrapped label anywhere had every layout pass lay out the text of all five views
// (13-26 ms of GUI time with the paper-size models). A page takes the height it is given: it
// reports no height-for-width, and its own layout still wraps its labels for its real width.
class Page : public QWidget {
 public:
  explicit Page(QWidget* content) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(content);
  }
  bool hasHeightForWidth() const override { return false; }
};

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("HSM Studio"));
  runs_ = new RunList(this);
  engine_ = new EngineHost(this);
  buildTabs();
  buildRunBar();
  connectRuns();
  buildStatusBar();
  connectEngine();
  buildMenus();
  applyEngineSettings();
  updateStatus();
  restoreWindow();
}

void MainWindow::buildTabs() {
  start_ = new StartPage;
  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  // The views, a tab each, in the registry's order (view_registry.h). An exported file's
  // name says what it is of (widgets/widget_export.h: export_stem): the view's id here, the
  // current run below.
  for (const ViewEntry& entry : viewRegistry()) {
    QWidget* view = entry.make(runs_, engine_);
    view->setProperty("exportView", QString::fromLatin1(entry.id));
    views_.push_back(view);
    tabs_->addTab(new Page(view), entry.tabTitle());
  }
  tabs_->setCurrentIndex(kTraining);
  // What the views ask of each other and of the window (the registry knows their classes).
  linkViews(views_, start_,
            {[this](int view) { showView(view); }, [this](const QString& dir) { return openRun(dir); },
             [this](const QString& message) { statusBar()->showMessage(message, 15000); }});
  connect(start_, &StartPage::openRunRequested, this, &MainWindow::openRunDialog);
  connect(start_, &StartPage::openRecentRequested, this, [this](const QString& dir) { openRun(dir); });
  startTab_ = new Page(start_);
  addStartTab();
  tabs_->setCurrentWidget(startTab_);
  // "What am I looking at?" beside the tabs, for whichever view is in front.
  auto* helpButton = new QToolButton;
  helpButton->setObjectName(QStringLiteral("help_button"));
  helpButton->setText(tr("What am I looking at?"));
  helpButton->setAutoRaise(true);
  helpButton->setToolTip(tr("What this view shows, in plain words, with the formula of the model's mixer (F1)"));
  connect(helpButton, &QToolButton::clicked, this, &MainWindow::toggleHelp);
  tabs_->setCornerWidget(helpButton, Qt::TopRightCorner);
  connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::updateHelp);
  setCentralWidget(tabs_);
  presentation_ = makePresentation(views_, this);
}

void MainWindow::buildRunBar() {
  // The run selector every view shares, with Open, Close and Present.
  auto* bar = addToolBar(tr("Runs"));
  bar->setObjectName(QStringLiteral("runs_toolbar"));
  bar->setMovable(false);
  bar->addWidget(new QLabel(tr(" Run: ")));
  runCombo_ = new QComboBox;
  runCombo_->setObjectName(QStringLiteral("run_combo"));
  runCombo_->setModel(runs_);
  runCombo_->setMinimumContentsLength(36);
  runCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  runCombo_->setPlaceholderText(tr("no run open"));
  bar->addWidget(runCombo_);
  auto* openButton = new QToolButton;
  openButton->setText(tr("Open…"));
  openButton->setToolTip(tr("Open a run folder (Ctrl+O)"));
  bar->addWidget(openButton);
  auto* closeButton = new QToolButton;
  closeButton->setText(tr("Close"));
  closeButton->setToolTip(tr("Close the current run (its files stay)"));
  bar->addWidget(closeButton);
  bar->addWidget(makeStepButton());
  bar->addSeparator();
  auto* presentButton = new QToolButton;
  presentButton->setObjectName(QStringLiteral("present_button"));
  presentButton->setText(tr("Present"));
  presentButton->setToolTip(tr("Tell the current model's stories full screen (F11)"));
  bar->addWidget(presentButton);
  connect(presentButton, &QToolButton::clicked, this, &MainWindow::enterPresentation);
  connect(openButton, &QToolButton::clicked, this, &MainWindow::openRunDialog);
  connect(closeButton, &QToolButton::clicked, this, [this] {
    const int row = runs_->current();
    if (row < 0) return;
    if (engine_->isTraining() && QDir(engine_->trainingRunDir()).absolutePath() == runs_->at(row).dir) {
      QMessageBox::information(this, tr("Run is training"), tr("Stop the training before closing its run."));
      return;
    }
    runs_->close(row);
  });
}

// Any view on the model as it was at a kept step (issue 67): a read-only run of its own.
QToolButton* MainWindow::makeStepButton() {
  auto* stepButton = new QToolButton;
  stepButton->setObjectName(QStringLiteral("open_at_step"));
  stepButton->setText(tr("At step"));
  stepButton->setToolTip(
      tr("Open the current run's model as it was at a step it keeps (its snapshots, train with "
         "Snapshot every N steps in the Training form, or hsm train --snapshot-every N): every view then shows "
         "that model, read-only"));
  stepButton->setPopupMode(QToolButton::InstantPopup);
  stepMenu_ = new QMenu(stepButton);
  stepMenu_->setObjectName(QStringLiteral("open_at_step_menu"));
  stepButton->setMenu(stepMenu_);
  return stepButton;
}

void MainWindow::connectRuns() {
  connect(runCombo_, &QComboBox::currentIndexChanged, runs_, &RunList::setCurrent);
  connect(runs_, &RunList::currentChanged, this, [this](int row) {
    setProperty("exportRun", row >= 0 ? runs_->at(row).dir : QString());
    if (runCombo_->currentIndex() != row) runCombo_->setCurrentIndex(row);
    updateStatus();
  });
  connect(runs_, &RunList::infoChanged, this, &MainWindow::updateStatus);
  // A training run keeps more steps as it goes: the menu follows its checkpoints.
  connect(runs_, &RunList::currentChanged, this, &MainWindow::refreshStepMenu);
  connect(runs_, &RunList::infoChanged, this, &MainWindow::refreshStepMenu);
  refreshStepMenu();
  connect(runs_, &RunList::metricsAppended, this, [this](int row) {
    if (row == runs_->current()) updateStatus();
  });
  connect(runs_, &RunList::currentChanged, this, &MainWindow::updateHelp);
  // Every run this studio lists (opened, trained here, saved from a what-if) joins Recent, so a
  // run trained in the studio is there after a restart; the bundled demo models are not (File ›
  // Open the demo models has them).
  connect(runs_, &RunList::runAdded, this, [this](int row) {
    const RunEntry& run = runs_->at(row);
    if (!run.atStep() && !StudioSettings::isBundledRun(run.dir)) StudioSettings::addRecentRun(run.dir);
  });
  connect(runs_, &RunList::metricsProblems, this, [this](int row, const QStringList& problems) {
    for (const QString& p : problems) qWarning("%s", qPrintable(p));
    statusBar()->showMessage(tr("%1: %2%3")
                                 .arg(runs_->at(row).name(), problems.first())
                                 .arg(problems.size() > 1 ? tr(" (and %1 more lines)").arg(problems.size() - 1) : QString()),
                             15000);
  });
}

void MainWindow::buildStatusBar() {
  // The current model on the left; training and the device on the right.
  deviceLabel_ = new QLabel;
  deviceLabel_->setObjectName(QStringLiteral("device_label"));
  modelLabel_ = new QLabel;
  modelLabel_->setObjectName(QStringLiteral("model_label"));
  trainingLabel_ = new QLabel;
  statusBar()->addWidget(modelLabel_, 1);
  statusBar()->addPermanentWidget(trainingLabel_);
  statusBar()->addPermanentWidget(deviceLabel_);
}

void MainWindow::connectEngine() {
  connect(engine_, &EngineHost::systemInfo, this, [this](const hsm::SystemInfo& info, const QString& device) {
    deviceDescription_ = device;
    versions_ = tr("Engine %1 · LibTorch %2 · Qt %3 · %4 CPU cores · %5 CUDA device(s)")
                    .arg(qstr(info.engine_version), qstr(info.torch_version), QString::fromLatin1(qVersion()))
                    .arg(info.cpu_cores)
                    .arg(info.cuda_devices);
    deviceLabel_->setText(device);
    deviceLabel_->setToolTip(versions_);
  });
  connect(engine_, &EngineHost::trainingStateChanged, this, &MainWindow::updateStatus);
  connect(engine_, &EngineHost::trainingFinished, this, [this] {
    if (closeAfterStop_) close();
  });
  connect(engine_, &EngineHost::trainingFailed, this, [this] {
    if (closeAfterStop_) close();
  });
}

void MainWindow::restoreWindow() {
  // A first start fits the screen it opens on (the layouts set the smallest size, 1024x600
  // fits); afterwards the window comes back as it was left.
  if (const QScreen* s = screen()) {
    const QRect available = s->availableGeometry();
    resize(firstSize(available.size()));
    move(available.center() - rect().center());
  }
  if (!StudioSettings::geometry().isEmpty()) restoreGeometry(StudioSettings::geometry());
  if (!StudioSettings::windowState().isEmpty()) restoreState(StudioSettings::windowState());
}

MainWindow::~MainWindow() = default;

QSize MainWindow::firstSize(const QSize& available) {
  // The preferred size, but never past the screen: the window manager's frame (title bar,
  // borders) comes out of the available area too.
  constexpr int kFrameWidth = 16, kFrameHeight = 40;
  return QSize(1400, 900).boundedTo(available - QSize(kFrameWidth, kFrameHeight));
}

void MainWindow::buildMenus() {
  buildFileMenu();
  buildViewMenu();
  buildHelpMenu();
}

void MainWindow::buildFileMenu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&New run from preset…"), QKeySequence::New, this, [this] {
    showView(kTraining);
    if (auto* box = view(kTraining)->findChild<QComboBox*>(QStringLiteral("preset"))) box->setFocus();
  });
  file->addAction(tr("&Open run folder…"), QKeySequence::Open, this, &MainWindow::openRunDialog);
  file->addAction(tr("Open a &lab folder…"), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a lab folder"));
    if (!dir.isEmpty() && studioView(kLab)->openFolder(dir)) showView(kLab);
  });
  file->addAction(tr("Open the &demo models"), this, [this] {
    if (openBundledModels() == 0)
      QMessageBox::information(this, tr("Demo models"),
                               tr("No demo models are installed (looked in %1/models).").arg(qstr(hsm::resources_dir())));
  });
  file->addAction(tr("Open a &sweep folder…"), this, &MainWindow::openSweepDialog);
  recentMenu_ = file->addMenu(tr("Open &recent"));
  connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::refreshRecentMenu);
  file->addSeparator();
  file->addAction(tr("&Export plots…"), QKeySequence(Qt::CTRL | Qt::Key_E), this, &MainWindow::exportDialog);
  file->addSeparator();
  file->addAction(tr("&Preferences…"), QKeySequence::Preferences, this, &MainWindow::preferencesDialog);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
}

void MainWindow::buildViewMenu() {
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Start page"), QKeySequence(Qt::CTRL | Qt::Key_0), this, &MainWindow::showStartPage);
  for (int i = 0; i < viewCount(); ++i) {
    const ViewEntry& entry = viewRegistry()[static_cast<size_t>(i)];
    QAction* action = view->addAction(entry.menuLabel(), entry.shortcut, this, [this, i] { showView(i); });
    action->setObjectName(QStringLiteral("view_") + QLatin1String(entry.id));
  }
  view->addSeparator();
  view->addAction(tr("Pr&esentation"), QKeySequence(Qt::Key_F11), this, &MainWindow::enterPresentation);
}

void MainWindow::buildHelpMenu() {
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&What am I looking at?"), QKeySequence::HelpContents, this, &MainWindow::toggleHelp);
  help->addAction(tr("Take the &tour"), this, &MainWindow::startTour);
  help->addAction(tr("&Keyboard shortcuts"), this, [this] {
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Keyboard shortcuts"));
    auto* text = new QTextBrowser;
    text->setHtml(shortcutsText());
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(text);
    dialog.resize(520, 560);
    dialog.exec();
  });
  help->addSeparator();
  help->addAction(tr("&About HSM Studio"), this, &MainWindow::aboutDialog);
}

bool MainWindow::startPageShown() const { return tabs_->currentWidget() == startTab_; }
bool MainWindow::startPageOpen() const { return tabs_->indexOf(startTab_) >= 0; }

void MainWindow::showView(int view) { tabs_->setCurrentIndex(view); }

int MainWindow::viewCount() const { return static_cast<int>(views_.size()); }

QWidget* MainWindow::view(int index) const { return views_.at(static_cast<size_t>(index)); }

StudioView* MainWindow::studioView(int index) const {
  auto* studio = qobject_cast<StudioView*>(view(index));
  if (!studio) qFatal("view registry: tab %d is no StudioView", index);
  return studio;
}

void MainWindow::showStartPage() {
  start_->refreshRecent();
  if (!startPageOpen()) addStartTab();
  tabs_->setCurrentWidget(startTab_);
}

void MainWindow::addStartTab() {
  const int index = tabs_->addTab(startTab_, tr("Start"));
  // Only this tab closes (the views are always there): its own close button, which the tab
  // bar deletes with the tab.
  auto* close = new QToolButton;
  close->setObjectName(QStringLiteral("close_start_page"));
  close->setText(QStringLiteral("×"));
  close->setAutoRaise(true);
  close->setToolTip(tr("Close the start page (View › Start page brings it back)"));
  tabs_->tabBar()->setTabButton(index, QTabBar::RightSide, close);
  connect(close, &QToolButton::clicked, this, &MainWindow::closeStartPage);
}

void MainWindow::closeStartPage() {
  const int index = tabs_->indexOf(startTab_);
  if (index < 0) return;
  const bool wasShown = startPageShown();
  tabs_->removeTab(index);  // the page is kept for View › Start page
  if (wasShown) showView(runs_->count() > 0 ? kPlayground : kTraining);
}

void MainWindow::enterPresentation() {
  if (presentation_->isPresenting()) {
    presentation_->leave();
    return;
  }
  presentation_->enter();
}

void MainWindow::toggleHelp() {
  if (helpPanel_ && helpPanel_->isVisible())
    helpPanel_->hide();
  else
    showHelp();
}

help::HelpPanel* MainWindow::showHelp() {
  if (!helpPanel_) {
    helpPanel_ = new help::HelpPanel(viewRegistry(), this);
    helpPanel_->resize(helpSize(screen() ? screen()->availableGeometry().size() : QSize(1920, 1080)));
  }
  if (!helpPanel_->isVisible()) helpPanel_->move(helpPosition(helpPanel_->frameGeometry().size()));
  helpPanel_->show();
  helpPanel_->raise();
  updateHelp();
  return helpPanel_;
}

QPoint MainWindow::helpPosition(const QSize& panel) const {
  return helpPosition(frameGeometry(), panel, screen() ? screen()->availableGeometry() : frameGeometry());
}

QPoint MainWindow::helpPosition(const QRect& window, const QSize& panel, const QRect& available) {
  // Beside the window where the screen has room, so it covers nothing it explains; else over
  // the window's left edge, where the views keep their forms and lists, not the diagrams and
  // plots the help is about.
  const int top = std::clamp(window.top() + 80, available.top(), std::max(available.top(), available.bottom() - panel.height()));
  if (window.right() + panel.width() <= available.right()) return {window.right() + 1, top};
  if (window.left() - panel.width() >= available.left()) return {window.left() - panel.width(), top};
  return {std::max(available.left(), window.left()), top};
}

QSize MainWindow::helpSize(const QSize& available) {
  return {std::clamp(available.width() / 3, 280, 460), std::clamp(available.height() - 140, 300, 560)};
}

void MainWindow::updateHelp() {
  if (!helpPanel_ || !helpPanel_->isVisible()) return;
  const RunEntry* run = runs_->currentRun();
  helpPanel_->showHelp(startPageShown() ? -1 : tabs_->currentIndex(), run ? &run->model : nullptr);
}

help::Tour* MainWindow::startTour() {
  if (!tour_) {
    tour_ = new help::Tour(viewRegistry(), [this](int view) { view < 0 ? showStartPage() : showView(view); },
                           [this] { return runs_->count() > 0 ? runs_->count() : openBundledModels(); }, this);
  }
  tour_->goTo(0);
  tour_->show();
  tour_->raise();
  return tour_;
}

QString MainWindow::shortcutsText() const { return help::shortcutsHtml(menuBar()); }

QString MainWindow::openRun(const QString& dir, bool quiet) {
  try {
    const int row = runs_->open(dir);
    runs_->setCurrent(row);
    StudioSettings::addRecentRun(dir);
    if (startPageShown()) showView(kPlayground);
    return {};
  } catch (const std::exception& e) {
    const QString message = QString::fromStdString(hsm::error_text(e));
    if (!quiet) QMessageBox::warning(this, tr("Cannot open run"), message);
    return message;
  }
}

QString MainWindow::openAtStep(qint64 step, bool quiet) {
  const RunEntry* run = runs_->currentRun();
  if (!run) return tr("Open a run first.");
  try {
    runs_->setCurrent(runs_->openAtStep(run->atStep() ? run->source : run->dir, step));
    return {};
  } catch (const std::exception& e) {
    const QString message = QString::fromStdString(hsm::error_text(e));
    if (!quiet) QMessageBox::warning(this, tr("Cannot open the run at step %1").arg(step), message);
    return message;
  }
}

void MainWindow::refreshStepMenu() {
  stepMenu_->clear();
  const RunEntry* run = runs_->currentRun();
  if (!run) {
    stepMenu_->addAction(tr("(open a run first)"))->setEnabled(false);
    return;
  }
  const QString dir = run->atStep() ? run->source : run->dir;
  std::vector<int64_t> steps;
  try {
    steps = hsm::RunFolder(sstr(dir)).kept_steps();
  } catch (const std::exception& e) {
    stepMenu_->addAction(QString::fromStdString(hsm::error_text(e)))->setEnabled(false);
    return;
  }
  // The newest checkpoint is the run itself; a run at a step lists its run's other steps.
  const int source = runs_->indexOf(dir);
  const qint64 newest = source >= 0 && runs_->at(source).has_info ? runs_->at(source).info.step : -1;
  if (run->atStep())
    stepMenu_->addAction(tr("%1 as it is now").arg(QFileInfo(dir).fileName()), this, [this, dir] {
      const int row = runs_->indexOf(dir);
      if (row >= 0)
        runs_->setCurrent(row);
      else
        openRun(dir);
    });
  int listed = 0;
  for (const int64_t step : steps) {
    if (step == newest || step == run->step) continue;
    QAction* a = stepMenu_->addAction(tr("step %1").arg(step), this, [this, step] { openAtStep(step); });
    a->setData(QVariant::fromValue<qint64>(step));
    ++listed;
  }
  if (listed == 0)
    stepMenu_->addAction(tr("(no other step kept: train with Snapshot every N steps to keep some)"))->setEnabled(false);
}

int MainWindow::openBundledModels() {
  int opened = 0;
  for (const std::string& dir : hsm::bundled_models()) {
    try {
      const int row = runs_->open(qstr(dir));
      if (opened++ == 0) runs_->setCurrent(row);
    } catch (const std::exception& e) {
      statusBar()->showMessage(tr("Bundled model %1: %2").arg(qstr(dir), QString::fromStdString(hsm::error_text(e))), 10000);
    }
  }
  if (opened > 0) {
    for (int i = 0; i < viewCount(); ++i) studioView(i)->demoModelsOpened();
    showView(kPlayground);
  }
  return opened;
}

void MainWindow::openRunDialog() {
  const QStringList recent = StudioSettings::recentRuns();
  const QString start = recent.isEmpty() ? StudioSettings::dialogFolder() : QFileInfo(recent.first()).path();
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open run folder"), start);
  if (!dir.isEmpty()) openRun(dir);
}

void MainWindow::openSweepDialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a sweep folder"), StudioSettings::dialogFolder());
  if (dir.isEmpty()) return;
  StudioSettings::setDialogFolder(dir);
  showView(kExperiments);
  studioView(kExperiments)->openFolder(dir);
}

void MainWindow::refreshRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = StudioSettings::recentRuns();
  if (recent.isEmpty()) recentMenu_->addAction(tr("(none)"))->setEnabled(false);
  for (const QString& dir : recent) recentMenu_->addAction(dir, this, [this, dir] { openRun(dir); });
}

QStringList MainWindow::exportPlots(const QString& folder, QString* error) {
  return studioView(kTraining)->exportPlots(folder, error);
}

void MainWindow::exportDialog() {
  const QString folder = QFileDialog::getExistingDirectory(
      this, tr("Export every Training plot (PNG, PDF, SVG, CSV) to"), StudioSettings::dialogFolder());
  if (folder.isEmpty()) return;
  StudioSettings::setDialogFolder(folder);
  QString error;
  const QStringList files = exportPlots(folder, &error);
  if (!error.isEmpty()) QMessageBox::warning(this, tr("Export"), error);
  statusBar()->showMessage(tr("Wrote %1 files to %2").arg(files.size()).arg(folder), 8000);
}

void MainWindow::applyEngineSettings() { engine_->configure(StudioSettings::device(), StudioSettings::threads()); }

void MainWindow::preferencesDialog() {
  QDialog dialog(this);
  dialog.setWindowTitle(tr("Preferences"));
  auto* form = new QFormLayout(&dialog);
  auto* device = new QComboBox;
  device->setEditable(true);
  device->addItems({QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda"), QStringLiteral("cuda:0")});
  device->setCurrentText(StudioSettings::device());
  auto* threads = new QSpinBox;
  threads->setRange(0, 256);
  threads->setSpecialValueText(tr("automatic"));
  threads->setValue(StudioSettings::threads());
  form->addRow(tr("Device for loading models"), device);
  form->addRow(tr("CPU threads"), threads);
  auto* automatic = new QLabel(
      tr("Automatic: training and evaluation use every core, a waiting core taking over the work of one that "
         "another program holds. Generating text uses one thread, and more only for a large model while no "
         "other program wants the cores, decided again before every token. The Playground shows the threads used."));
  automatic->setWordWrap(true);
  automatic->setObjectName(QStringLiteral("threads_note"));
  form->addRow(automatic);
  form->addRow(new QLabel(tr("Training takes its device and threads from the Training view.")));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  if (dialog.exec() != QDialog::Accepted) return;
  StudioSettings::setDevice(device->currentText().trimmed());
  StudioSettings::setThreads(threads->value());
  applyEngineSettings();
}

void MainWindow::aboutDialog() {
  QMessageBox::about(this, tr("About HSM Studio"),
                     tr("<h3>HSM Studio %1</h3><p>Training, inspecting and playing with small GPT-style language "
                        "models whose attention is replaced by Hierarchical Shift Mixing.</p><p>%2</p><p>Compute "
                        "device: %3</p>")
                         .arg(QStringLiteral(HSM_VERSION), versions_.isEmpty() ? tr("(engine starting)") : versions_,
                              deviceDescription_));
}

void MainWindow::updateStatus() {
  if (const RunEntry* run = runs_->currentRun()) {
    const qint64 params = hsm::count_params(run->model).total();
    const QString model = qstr(run->model.name);  // once where the run is named as its model ("gpt")
    QString text = model.isEmpty() || model == run->name()
                       ? tr("%1 · %2 parameters").arg(run->name(), QLocale().toString(params))
                       : tr("%1 · %2 · %3 parameters").arg(run->name(), model, QLocale().toString(params));
    // The step its metrics have reached (issue 69: "step 0", its last checkpoint's, while the
    // Training view's bar said 80/600); the checkpoint's beside it while they differ.
    const qint64 reached = run->metrics.empty() ? 0 : run->metrics.back().step;
    const qint64 saved = run->has_info ? run->info.step : 0;
    if (reached > saved)
      text += tr(" · step %1 (last checkpoint at %2)").arg(reached).arg(saved);
    else if (run->has_info)
      text += tr(" · step %1").arg(saved);
    else
      text += tr(" · no checkpoint yet");
    modelLabel_->setText(text);
  } else {
    modelLabel_->setText(tr("No run open"));
  }
  trainingLabel_->setText(engine_->isTraining() ? (engine_->isPaused() ? tr("training paused") : tr("training…"))
                                                : QString());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (engine_->isTraining()) {
    if (!closeAfterStop_) {
      const auto answer = QMessageBox::question(
          this, tr("Training is running"),
          tr("A model is training. Stop it now? The current step finishes and a checkpoint is written, so the run "
             "can be continued later."),
          QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
      if (answer != QMessageBox::Yes) {
        event->ignore();
        return;
      }
      closeAfterStop_ = true;
      engine_->stopTraining();
      statusBar()->showMessage(tr("Stopping training and writing the checkpoint…"));
      setEnabled(false);
    }
    event->ignore();  // closes when trainingFinished arrives
    return;
  }
  // A lab or a sweep trains in processes of its own: closing stops them (each run at its step,
  // with its checkpoint), so ask first, as for training.
  QString running;  // the first view's work that closing stops ("lab", "sweep")
  for (int i = 0; i < viewCount() && running.isEmpty(); ++i) running = studioView(i)->runningWork();
  if (!running.isEmpty()) {
    const auto answer = QMessageBox::question(
        this, tr("A %1 is running").arg(running),
        tr("Stop it now? Each run stops at its step and keeps its checkpoint; running the %1 again continues it.")
            .arg(running),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) {
      event->ignore();
      return;
    }
  }
  for (int i = 0; i < viewCount(); ++i) studioView(i)->stopForClose();
  StudioSettings::setGeometry(saveGeometry());
  StudioSettings::setWindowState(saveState());
  event->accept();
}

}  // namespace studio
