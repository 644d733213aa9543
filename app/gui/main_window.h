#pragma once
// The studio's window: menus and shortcuts, the run selector every view shares, the views of
// the view registry (view_registry.h) as tabs with their View menu entries, a start page
// tab, a status bar with the device and the current model, preferences in QSettings.
#include <QMainWindow>
#include <vector>

class QComboBox;
class QLabel;
class QMenu;
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
  TrainingView* trainingView() const { return training_; }
  PlaygroundView* playgroundView() const { return playground_; }
  ArchitectureView* architectureView() const { return architecture_; }
  WeightsView* weightsView() const { return weights_; }
  DiagnosticsView* diagnosticsView() const { return diagnostics_; }
  ProbeView* probeView() const { return probe_; }
  LossesView* lossesView() const { return losses_; }
  LabView* labView() const { return lab_; }
  ExperimentsView* experimentsView() const { return experiments_; }
  TraceView* traceView() const { return trace_; }  // issue 51 (tab kTrace, no View menu entry yet)
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
  void buildMenus();
  void openRunDialog();
  void openSweepDialog();
  void exportDialog();
  void preferencesDialog();
  void aboutDialog();
  void refreshRecentMenu();
  void updateStatus();
  void updateHelp();
  QPoint helpPosition(const QSize& panel) const;  // where the help panel opens
  void addStartTab();
  void applyEngineSettings();
  template <class V>
  V* viewAs(int index) const;

  RunList* runs_;
  EngineHost* engine_;
  QWidget* startTab_;
  StartPage* start_;
  PresentationMode* presentation_;
  help::HelpPanel* helpPanel_ = nullptr;
  help::Tour* tour_ = nullptr;
  QTabWidget* tabs_;
  std::vector<QWidget*> views_;  // in the registry's order
  TrainingView* training_;
  PlaygroundView* playground_;
  ArchitectureView* architecture_;
  WeightsView* weights_;
  DiagnosticsView* diagnostics_;
  ProbeView* probe_;
  LossesView* losses_;
  LabView* lab_;
  ExperimentsView* experiments_;
  TraceView* trace_;
  QComboBox* runCombo_;
  QLabel* deviceLabel_;
  QLabel* modelLabel_;
  QLabel* trainingLabel_;
  QMenu* recentMenu_;
  QString deviceDescription_;
  QString versions_;
  bool closeAfterStop_ = false;
};

}  // namespace studio
