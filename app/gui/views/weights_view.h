#pragma once
// The Weights view (README.md, "The studio"): the learned a and b of every scalar HSM (a,b) layer as
// grouped bars (HSM Table 2), live while the current run trains and fetched again when the
// current run changes; the end-to-end offset weights of an all-(a,b) stack (HSM §3);
// hsm_ab_vec's a and b as a layer × channel heatmap; the multihead variants' per-head
// shifts, a and b as a layer × head table. Layers without such weights are named in words.
// What-if (issue 23): a and b edited, layers and heads knocked out (WhatIfEditor); the bars,
// the offset weights and the receptive-field diagram redraw from the edited weights, the
// validation loss of the edited model is computed on the analysis thread next to the trained
// one, a banner names the edits (Reset / Save as…). The run folder is never written.
// What it holds and asks the engine is a WeightsState (weights_state.h); this is its drawing.
#include <QWidget>
#include <vector>

#include "gui/views/studio_view.h"
#include "gui/views/weights_state.h"

class QCPBars;
class QDoubleSpinBox;
class QLabel;
class QMouseEvent;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace studio {

class EngineHost;
class HeatmapPanel;
class PlotPanel;
class ReceptiveFieldDiagram;
class RunList;
class WhatIfEditor;

class WeightsView : public StudioView {
  Q_OBJECT
 public:
  WeightsView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  // Fetches the current run's weights from its checkpoint (on the interactive thread).
  void refresh();
  bool isWaiting() const { return state_->isReading(); }
  // Shows a set of weights (what refresh() and the live updates call).
  void showWeights(const QString& runDir, qint64 step, const std::vector<hsm::MixerWeights>& layers);
  // The weights drawn: the trained ones with the what-if edits applied.
  const std::vector<hsm::MixerWeights>& weights() const { return weights_; }
  const std::vector<hsm::MixerWeights>& trainedWeights() const { return state_->trained(); }
  QString shownRun() const { return state_->shownRun(); }
  WeightsState* state() const { return state_; }

  QCPBars* barsA() const { return barsA_; }
  QCPBars* barsB() const { return barsB_; }
  PlotPanel* abPlot() const { return abPlot_; }
  PlotPanel* offsetPlot() const { return offsetPlot_; }
  HeatmapPanel* vectorHeatmap() const { return vectorMap_; }
  QTableWidget* headTable() const { return headTable_; }
  QString notes() const;
  QList<PlotPanel*> plots() const override;

  // What-if.
  WhatIfEditor* whatIfEditor() const { return editor_; }
  ReceptiveFieldDiagram* receptiveField() const { return diagram_; }
  hsm::WhatIf edits() const { return state_->edits(); }
  // Sends the editor's edits now (as its debounce does) and asks for the loss.
  void applyEdits();
  void resetEdits();  // as the Reset button
  bool isEvaluating() const { return state_->isEvaluating(); }
  bool hasEvaluation() const { return state_->hasEvaluation(); }
  // The headline: the run's own evaluation on every window (run_evaluation.h), as `hsm eval`
  // gives it, whatever windows the what-if uses; NaN until known.
  double evaluationLoss() const { return state_->evaluationLoss(); }
  const WhatIfEvaluation& lastEvaluation() const { return state_->lastEvaluation(); }
  QString lossText() const;
  QString bannerText() const;
  void setEvalWindows(int windows);
  // "Save as…" into this folder without asking (tests); empty: a file dialog asks.
  void setSaveFolder(const QString& folder) { saveFolder_ = folder; }
  bool saveAs();
  bool isSaving() const { return state_->isSaving(); }
  QString savedRun() const { return state_->savedRun(); }
  QString lastError() const { return state_->lastError(); }

 signals:
  void evaluationFinished();
  void saveFinished(bool ok);

 protected:
  // Another run: the last run's weights and what-if controls go at once; shown, the view reads
  // the current run's (cheap).
  void leaveRun() override;
  void showRun() override;
  void showEvent(QShowEvent* event) override;

 private:
  void build();
  void buildAbPlot();       // a and b per layer, as bars to drag
  void setUpBarDragging();  // its tooltip, the drag, its CSV
  void buildLowerPlots();   // the offset weights, the vector heatmap, the multihead table
  QWidget* buildWhatIfEditor();
  void buildWhatIfBanner();  // the what-if receptive field and the banner with its loss
  QWidget* buildRows();      // the plots' rows, scrolling on a short screen
  void connectSignals();
  void connectState();  // what the state answers, to the widgets
  void onCurrentChanged();
  void drawBars();
  void drawOffsets();
  bool drawLagWeights();  // extractor layers: weight per lag; false when there are none
  void drawVectors();
  void fillHeadTable();
  void onEdits(const hsm::WhatIf& edits);
  void evaluate();
  // The run's own evaluation from its record; false when its record holds none at its checkpoint.
  bool showRecordedEvaluation();
  void evaluateTask();  // evaluate() for a task run: its test examples' accuracy and loss
  // What the state answers, drawn.
  void onWeightsRead(const QString& runDir, const std::vector<hsm::MixerWeights>& w);
  void showEvaluation();
  void showTaskEvaluation(const hsm::TaskScore& trained, const hsm::TaskScore& edited, bool hasEdits);
  void showEvaluationFailure(const QString& label, const QString& message);
  void showSaved(const QString& dir);
  void updateBanner();
  void redrawWeights();
  // Dragging a bar of the a/b plot up or down sets that layer's a or b through the editor's
  // spin box (an edit like typing it); the axes do not pan while a bar is dragged.
  QDoubleSpinBox* barUnder(const QPointF& pos) const;
  void pressBar(QMouseEvent* event);
  void dragBar(QMouseEvent* event);
  void releaseBar();
  QDoubleSpinBox* dragged_ = nullptr;
  double dragFrom_ = 0, dragFromY_ = 0;  // the value and the pixel where the drag began

  QString headlineAsked_;  // the run and step whose evaluation was asked with no record of it ("dir@step")
  QLabel* header_;
  QLabel* notes_;
  PlotPanel* abPlot_;
  QCPBars* barsA_;
  QCPBars* barsB_;
  PlotPanel* offsetPlot_;
  HeatmapPanel* vectorMap_;
  QTableWidget* headTable_;
  QLabel* headNote_;
  QWidget* headBox_;
  class QSplitter* bottom_;
  WeightsState* state_;
  std::vector<hsm::MixerWeights> weights_;  // drawn: the trained ones with the edits applied
  WhatIfEditor* editor_;
  ReceptiveFieldDiagram* diagram_;
  QLabel* banner_;
  QLabel* loss_;
  QPushButton* resetButton_;
  QPushButton* saveButton_;
  QPushButton* openSaved_;
  QSpinBox* windows_;
  QWidget* bannerBox_;
  QString lossNote_;  // where the loss was taken, when not on the run's own corpus
  QWidget* windowsRow_;     // "Loss on the first N validation windows" (not for a task run)
  QString saveFolder_;
  bool dirty_ = true;
};

}  // namespace studio
