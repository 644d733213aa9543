#pragma once
// The studio's window: menus and shortcuts, the run selector every view shares, the views of
// the view registry (view_registry.h) as tabs with their View menu entries, a start page
// tab, a status bar with the device and the current model, preferences in QSettings. It knows
// the views only as StudioViews at registry indices (views/studio_view.h); what a view asks of
// another is wired by the registry (linkViews).
#include <QMainWindow>
#include <vector>

class QComboBox;
class QLabel;
class QMenu;
class QToolButton;
class QTabWidget;

namespace hsm {
struct SystemInfo;
}

namespace studio {

class ArchitectureView;
class DiagnosticsView;
class LabView;
class ExperimentsView;
class EngineHost;
class PlaygroundView;
class LossesView;
class ProbeView;
class TraceView;
class RunList;
class PresentationMode;
class StartPage;
class StudioView;
class TrainingView;
class WeightsView;
namespace help {
class HelpPanel;
class Tour;
}  // namespace help

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // The views' tab indices: their order in the view registry (view_registry.h). A view
  // the window wires to another needs a name here; any other view is reached by its index.
  enum View { kArchitecture = 0, kTraining, kWeights, kDiagnostics, kPlayground, kProbe, kLosses, kLab, kExperiments, kTrace };

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // The size of a first start (no saved geometry) on a screen whose available area is this:
  // the preferred 1400x900, made smaller to fit the screen with the window's frame.
  static QSize firstSize(const QSize& available);

  RunList* runs() const { return runs_; }
  EngineHost* engine() const { return engine_; }
  // The views by their class, for tests and the smoke driver, which include the view's header
  // (the default argument is only read where it is used): the view at its View index.
  template <class V = TrainingView> V* trainingView() const { return viewAs<V>(kTraining); }
  template <class V = PlaygroundView> V* playgroundView() const { return viewAs<V>(kPlayground); }
  template <class V = ArchitectureView> V* architectureView() const { return viewAs<V>(kArchitecture); }
  template <class V = WeightsView> V* weightsView() const { return viewAs<V>(kWeights); }
  template <class V = DiagnosticsView> V* diagnosticsView() const { return viewAs<V>(kDiagnostics); }
  template <class V = ProbeView> V* probeView() const { return viewAs<V>(kProbe); }
  template <class V = LossesView> V* lossesView() const { return viewAs<V>(kLosses); }
  template <class V = LabView> V* labView() const { return viewAs<V>(kLab); }
  template <class V = ExperimentsView> V* experimentsView() const { return viewAs<V>(kExperiments); }
  template <class V = TraceView> V* traceView() const { return viewAs<V>(kTrace); }
  // The view at a registry index as class V; a fatal error naming both when it is not one (a
  // registry edit that forgot MainWindow::View: tests/app/test_view_registry.cpp says which).
  template <class V>
  V* viewAs(int index) const {
    auto* typed = qobject_cast<V*>(view(index));
    if (!typed) qFatal("view registry: tab %d is not a %s", index, V::staticMetaObject.className());
    return typed;
  }
  QTabWidget* tabs() const { return tabs_; }
  // The view at a registry index (its tab's index), as the registry entry made it.
  QWidget* view(int index) const;
  int viewCount() const;
  // The start page is a tab like the views (after them, so a view's tab index is its View),
  // closable, and back through View › Start page.
  bool startPageShown() const;
  bool startPageOpen() const;
  void closeStartPage();
  PresentationMode* presentation() const { return presentation_; }
  void enterPresentation();  // View › Presentation (F11): the Playground's story full screen
  // Help › What am I looking at? (F1) for the view in front, and the first-run tour.
  help::HelpPanel* showHelp();
  void toggleHelp();  // F1 and the button: shows the help, or hides it when shown
  // Where a help panel of this size opens for a window with this frame on a screen with this
  // available area: beside the window where there is room, else over its left edge.
  static QPoint helpPosition(const QRect& window, const QSize& panel, const QRect& available);
  // The help panel's size on a screen with this much room: 460x560 where there is room, a
  // third of a small screen's width at most (issue 69: at 1024x600 it covered half the window).
  static QSize helpSize(const QSize& available);
  help::Tour* startTour();
  QString shortcutsText() const;

  // Opens a run folder and makes it current; on failure returns the reason (and, unless
  // quiet, shows it in a message box).
  QString openRun(const QString& dir, bool quiet = false);
  // Opens the current run (or the run a run at a step came from) at a step it keeps a model of
  // (RunList::openAtStep) and makes it current: the run bar's "At step" menu. On failure returns
  // the reason (and, unless quiet, shows it).
  QString openAtStep(qint64 step, bool quiet = false);
  // Opens the bundled demo models (resources/models/) and readies the Playground on the
  // paper's first prompt; returns how many were opened.
  int openBundledModels();
  void showView(int view);  // a View, or any registry index
  void showStartPage();
  // Writes every plot of the Training view into a folder as PNG, PDF, SVG and CSV; returns
  // the files written.
  QStringList exportPlots(const QString& folder, QString* error = nullptr);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  // The constructor's steps, in order.
  void buildTabs();       // the registry's views and the start page, a tab each, linked
  void buildRunBar();     // the run selector every view shares, Open, Close, Present
  QToolButton* makeStepButton();  // "At step": the current run's kept steps, each a read-only run
  void connectRuns();     // the selector, the status and Recent follow the open runs
  void buildStatusBar();  // the current model, training, the device
  void connectEngine();   // the device's description, training's state, closing after a stop
  void buildMenus();      // File, View (an entry per view), Help
  void buildFileMenu();
  void buildViewMenu();
  void buildHelpMenu();
  void restoreWindow();   // a first start fits the screen; later ones come back as left
  void openRunDialog();
  void openSweepDialog();
  void exportDialog();
  void preferencesDialog();
  void aboutDialog();
  void refreshRecentMenu();
  void refreshStepMenu();  // the kept steps of the current run, in the run bar's "At step" menu
  void updateStatus();
  void updateHelp();
  QPoint helpPosition(const QSize& panel) const;  // where the help panel opens
  void addStartTab();
  void applyEngineSettings();
  StudioView* studioView(int index) const;  // the view at a registry index, as every view is

  RunList* runs_;
  EngineHost* engine_;
  QWidget* startTab_;
  StartPage* start_;
  PresentationMode* presentation_;
  help::HelpPanel* helpPanel_ = nullptr;
  help::Tour* tour_ = nullptr;
  QTabWidget* tabs_;
  std::vector<QWidget*> views_;  // in the registry's order
  QComboBox* runCombo_;
  QLabel* deviceLabel_;
  QLabel* modelLabel_;
  QLabel* trainingLabel_;
  QMenu* recentMenu_;
  QMenu* stepMenu_;
  QString deviceDescription_;
  QString versions_;
  bool closeAfterStop_ = false;
};

}  // namespace studio
