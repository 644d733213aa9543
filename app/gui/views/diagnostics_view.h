#pragma once
// The Diagnostics view (README.md; docs/diagnostics.md): for a prompt, the attention or effective mixing
// matrix of a chosen layer and head as a heatmap with token labels (hover: exact value),
// the matrix kind stated; the DA indicators per layer as a table (raw and normalised), a
// radar chart (DA Figure 1) and a layer × indicator overview heatmap; a second open run
// side by side on the same prompt; every plot exported as PNG/PDF/SVG and its numbers as CSV.
// A run trained on a synthetic task is diagnosed on one of its test examples instead of text
// (TaskExampleBar): its tokens by the task's labels, the answers marked, the model's answer
// beside the right one.
#include <QWidget>

#include "gui/views/diagnosis_state.h"
#include "gui/views/studio_view.h"
#include "hsm/diagnostics.h"
#include "hsm/tasks.h"

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace studio {

class DiagnosticsTimeline;
class EngineHost;
class HeatmapPanel;
class RadarChart;
class RunList;
class TaskExampleBar;

// What each side holds and asks the engine is a DiagnosisState (diagnosis_state.h); this is
// its drawing.
class DiagnosticsView : public StudioView {
  Q_OBJECT
 public:
  DiagnosticsView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  void setPrompt(const QString& prompt);
  QString prompt() const;
  // "Compare with" a second open run (its folder), or off.
  void setCompare(bool on, const QString& runDir = {});
  // As the Run button: diagnoses the current run (and the compared one). False when
  // nothing could start (reason in lastError()).
  bool run();
  bool isRunning() const;
  QString lastError() const { return lastError_; }

  void setLayer(int layer);
  void setHead(int head);
  int layer() const;
  int head() const;

  // Side 0 is the current run, side 1 the compared one.
  bool hasResult(int side) const { return columns_[side].state->has(); }
  const hsm::Diagnosis& diagnosis(int side) const { return columns_[side].state->diagnosis(); }
  // A task run's prompt: the test example diagnosed, with the model's answers (task "" for a
  // corpus run), and the bar that chooses it (shown instead of the prompt box).
  const hsm::TaskPrompt& example(int side = 0) const { return columns_[side].state->example(); }
  TaskExampleBar* exampleBar() const { return example_; }
  HeatmapPanel* matrixPanel(int side = 0) const { return columns_[side].matrix; }
  HeatmapPanel* overviewPanel(int side = 0) const { return columns_[side].overview; }
  RadarChart* radar(int side = 0) const { return columns_[side].radar; }
  QTableWidget* indicatorTable(int side = 0) const { return columns_[side].table; }
  QString matrixKindText(int side = 0) const;
  // Over time (issue 23): the recorded indicators against step and the step slider.
  DiagnosticsTimeline* timeline() const { return timeline_; }
  // What the current run's table, radar and overview show ("the prompt's diagnosis" or the step).
  QString indicatorSource() const;

  // Writes every plot of the visible sides (PNG, PDF, SVG) and their numbers (CSV) into a
  // folder; returns the files written.
  QStringList exportAll(const QString& folder, QString* error = nullptr);

  // The indicator axes of the radar chart and the overview, in DA's order.
  static QStringList indicatorNames();

 signals:
  void finished();

 protected:
  // Switched to another run, the view drops the last run's diagnosis at once; shown with
  // nothing to show for the current run, it diagnoses it on the prompt in the field (the
  // default one until another is typed), so it never opens on empty axes or another run's.
  void leaveRun() override;
  void showRun() override;

 private:
  // A side: what it holds and asks the engine (its run, its diagnosis), and its widgets.
  struct Column {
    DiagnosisState* state = nullptr;
    QWidget* box = nullptr;
    QLabel* title = nullptr;
    QLabel* kind = nullptr;
    HeatmapPanel* matrix = nullptr;
    RadarChart* radar = nullptr;
    HeatmapPanel* overview = nullptr;
    QTableWidget* table = nullptr;
  };
  QWidget* buildColumn(Column& c, const QString& suffix);
  void buildColumnWidgets(Column& c, const QString& suffix);
  void build();
  void buildControls();  // the prompt, the layer and head, the comparison, Run and Export
  QHBoxLayout* buildPromptBar();
  QHBoxLayout* buildChoiceBar();
  QWidget* buildRows();  // the timeline over the columns of the run (and the compared one)
  void connectSignals();
  void diagnose(Column& c);
  void clearColumn(Column& c, const QString& runDir);
  void followComparedRun();
  void connectState(Column& c);  // what the side shows when its state says something arrived
  void onDiagnosed(Column& c);
  void finishRound();  // both sides answered: the selectors, the matrices, a rerun if one was asked
  void showPromptKind();  // the prompt box for a corpus run, the example bar for a task run
  void onFailed(Column& c, const QString& message);
  void refreshSelectors();
  void refreshHeads();
  void drawMatrices();
  void drawIndicators(Column& c);
  void followCurrentRun();
  void refreshRunChoices();
  void exportDialog();

  QLabel* promptLabel_;
  QLineEdit* promptEdit_;
  TaskExampleBar* example_;
  bool rerun_ = false;  // another example was chosen while a diagnosis ran
  QPushButton* exportButton_;
  QComboBox* layerBox_;
  QComboBox* headBox_;
  QPushButton* runButton_;
  QCheckBox* compare_;
  QComboBox* compareRun_;
  QLabel* status_;
  DiagnosticsTimeline* timeline_;
  QLabel* source_;
  Column columns_[2];
  QString lastError_;
  bool updating_ = false;
};

}  // namespace studio
