#pragma once
// The Trace view (issue 51, docs/diagnostics.md §9): causal tracing of the current run, and of
// a second run beside it on the same prompts. A clean prompt and a corrupted copy (a token
// replaced), or a task run's test example corrupted automatically (TaskExampleBar), and the
// answer traced (the position whose next token, and the token); hsm::Tracer runs on the
// analysis executor with progress and Cancel. Per site (residual stream, mixer output, FFN
// output) a layer × position heatmap of the exact map (activation patching) beside its
// attribution estimate and their correlation; on the exact map the route (per layer the
// position with the largest effect) and, for an HSM layer, where its shift 2^l carries that
// position. Below them, per run, the information flow routes into the answer (hsm/routes.h):
// a graph over layers × positions pruned at the threshold the user sets (re-pruned without
// recomputing). Every map exports PNG/PDF/SVG/CSV; "Export all…" writes them and one long CSV.
// Over training (issue 67): a slider over the steps the run recorded a trace at (traces.jsonl)
// or keeps a model of (snapshots); a recorded step shows its maps and routes at once, a kept one
// is traced by Trace on the model as it was then; and the formation pane: the route share from the
// corrupted position and the accuracy against step, the step a route formed and the step accuracy
// crossed half its gain marked (hsm::formation), the run beside drawn dashed on the same axis,
// and each layer's mixer effect over steps on the right axis (a box hides them).
#include <QString>
#include <array>
#include <vector>

#include "gui/views/studio_view.h"
#include "gui/views/trace_state.h"
#include "hsm/trace.h"

class QCheckBox;
class QComboBox;
class QCPCurve;
class QCPItemStraightLine;
class QDoubleSpinBox;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSlider;
class QSpinBox;

namespace studio {

class HeatmapPanel;
class TaskExampleBar;

// What it holds and asks the engine is a TraceState (trace_state.h); this is its drawing.
class TraceView : public StudioView {
  Q_OBJECT
 public:
  static constexpr int kColumns = TraceState::kColumns;  // 0: the current run, 1: the run compared with it
  static constexpr int kSites = 3;    // residual, mixer, ffn: hsm::trace_sites(), by which the maps are found

  TraceView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  void setPrompts(const QString& clean, const QString& corrupt);
  QString cleanPrompt() const;
  QString corruptPrompt() const;
  // The position whose next token is traced (-1: the last) and the answer, one token of the
  // run's vocabulary as text ("Lily" or " Lily"; empty: the clean run's most likely token
  // there). A task run's example sets both itself.
  void setAnswer(int position, const QString& token = {});
  // The run traced beside the current one on the same prompts (empty: none).
  void setCompareRun(const QString& dir);
  QString compareRun() const;
  TaskExampleBar* exampleBar() const { return exampleBar_; }

  // As the Trace button: traces the current run (and the compared one). False when nothing
  // could start (the reason in lastError() and the status line).
  bool runTrace();
  // As the Cancel button: the traces under way stop between layers; the view stays usable.
  void cancelTrace();
  bool isTracing() const { return state_->isTracing(); }
  QString lastError() const { return lastError_; }
  QString statusText() const;

  // What column c shows: its trace (valid when hasTrace(c)) and the run it is of.
  bool hasTrace(int column) const { return state_->hasTrace(column); }
  const hsm::Trace& trace(int column) const { return state_->trace(column); }
  QString traceRun(int column) const { return state_->traceRun(column); }
  // The heatmaps of column c: site s's exact map and its attribution estimate.
  HeatmapPanel* exactPanel(int column, int site) const;
  HeatmapPanel* attributionPanel(int column, int site) const;
  // The route drawn on column c's exact map of site s: per layer the position with the largest
  // |effect| (-1 for a layer without that site).
  std::vector<int> route(int column, int site) const;
  // The routes panel of column c, the threshold its edges are pruned at (a change redraws both
  // columns from the routes the trace returned, computing nothing) and the edges drawn.
  PlotPanel* routesPanel(int column) const { return columns_[static_cast<size_t>(column)].routes; }
  void setRouteThreshold(double threshold);
  double routeThreshold() const;
  const std::vector<hsm::RouteEdge>& shownRoutes(int column) const {
    return columns_[static_cast<size_t>(column)].shown;
  }
  // Pearson's r between the exact and attribution maps of one site (NaN when undefined).
  double siteAgreement(int column, int site) const;
  // The summary above column c (run, answer, log-probabilities, agreement, seconds).
  QString summary(int column) const;

  // Every map of every trace shown as PNG, PDF, SVG and CSV, and all of them in one long CSV
  // (<stem>-maps.csv: run, map, site, layer, position, token, effect); returns the files.
  QStringList exportAll(const QString& folder, QString* error = nullptr);

  // Over training: the step slider (over history(0).steps), the step it is on (-1: no steps),
  // what the run (column 0) and the run beside (1) recorded, and the formation pane.
  QSlider* stepSlider() const { return stepSlider_; }
  int64_t sliderStep() const;
  const TraceHistory& history(int column) const { return state_->history(column); }
  bool isLoadingHistory() const { return state_->isLoadingHistory(); }
  PlotPanel* formationPanel() const { return formation_; }
  // The step the pane marks as "formed", "accuracy" or "slider" (NaN: not drawn).
  double markedStep(const QString& mark) const;
  QString formationSummary() const;
  QString stepText() const;
  QString mapsCsv() const;
  QList<PlotPanel*> plots() const override;

 signals:
  void traceFinished();  // the traces asked for answered (or failed, or were cancelled)

 protected:
  void leaveRun() override;
  void showRun() override;

 private:
  struct Column {
    QWidget* box = nullptr;  // the summary and the maps of one run
    QLabel* summary = nullptr;
    std::array<HeatmapPanel*, kSites> exact{}, attribution{};
    std::array<QCPCurve*, kSites> route{};  // over the exact maps, in layer order
    PlotPanel* routes = nullptr;            // the information flow graph
    std::vector<hsm::RouteEdge> shown;      // its edges, pruned at the threshold
  };
  void build();  // the widgets and their layout, in the parts below
  void buildPromptControls();  // the prompts, the task example, the answer
  void buildActionControls();  // the run beside, the threshold, the buttons, progress, status
  QHBoxLayout* buildPromptRow();
  QHBoxLayout* buildActionRow();
  QScrollArea* buildMaps();       // every run's column, scrolled
  QWidget* buildColumn(int c);    // run c's summary, maps and routes
  void buildSiteMaps(int c, QGridLayout* grid);  // run c's exact and attribution map per site
  void connectSignals();
  void showPromptKind();
  void fillCompareBox();
  void updateButtons();
  void connectState();  // what the view draws when the state says so
  void startColumn(int column, const QString& runDir, bool taskRun);
  void onFinished();
  void showProgress();
  void clearColumn(int column, const QString& message);
  void showAttribution(int column, bool visible);
  void drawColumn(int column);
  void drawRoute(int column, int site);
  void drawRoutes(int column);
  QString routesCsv(int column) const;
  void setColumnVisible(int column, bool visible);
  QStringList layerLabels(const QString& runDir, int64_t layers) const;
  void exportDialog();
  void buildHistoryControls();  // the step slider and the formation pane
  void buildFormationPlot();
  QWidget* buildFormationPane();
  void onHistoryLoaded(int column);
  void onStepChosen();      // the slider moved: the recorded step shown, or the kept one offered
  void drawFormation();
  void markSliderStep();
  void showStepText();

  QLabel* cleanLabel_;
  QLineEdit* cleanEdit_;
  QLabel* corruptLabel_;
  QLineEdit* corruptEdit_;
  TaskExampleBar* exampleBar_;
  QSpinBox* answerPosition_;
  QLineEdit* answerEdit_;
  QComboBox* compareBox_;
  QDoubleSpinBox* threshold_;
  QPushButton* traceButton_;
  QPushButton* cancelButton_;
  QPushButton* exportButton_;
  QProgressBar* progress_;
  QLabel* status_;
  QScrollArea* scroll_;
  std::array<Column, kColumns> columns_;
  QSlider* stepSlider_;
  QLabel* stepLabel_;
  QWidget* formationPane_ = nullptr;  // the formation plot and its summary
  PlotPanel* formation_;
  QLabel* formationSummary_;
  QCheckBox* mixerEffects_;  // each layer's mixer effect drawn in the formation pane
  QCPItemStraightLine* formedMark_;
  QCPItemStraightLine* accuracyMark_;
  QCPItemStraightLine* sliderMark_;
  int64_t chosenStep_ = -1;  // the step the slider was moved to; kept when the run is read again
  bool atNewest_ = true;     // it is on the newest step: it follows the newest one
  TraceState* state_;
  QString lastError_;
};

}  // namespace studio
