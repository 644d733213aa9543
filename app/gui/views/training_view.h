#pragma once
// The Training view (README.md, "The studio"): the form (training_form.h) on the left, with the run's
// buttons below it (training_run_controller.h); on the right the live curves of the current
// run with the other open runs overlaid, accuracy against loss (HSM Fig. 8; the series:
// training_series.h), and the run's progress and engine log.
#include <QWidget>

#include "gui/views/studio_view.h"
#include "hsm/trainer.h"

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;

namespace studio {

class EngineHost;
struct RunEntry;
class FieldError;
class PlotPanel;
class RunList;
class TrainingForm;
class TrainingRunController;

class TrainingView : public StudioView {
  Q_OBJECT
 public:
  TrainingView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  // Form access for the start page, the menu and the smoke mode.
  void setCorpus(const QString& path);
  // A preset name or a config file path; returns false (with the reason shown) if unknown.
  bool setModel(const QString& presetOrConfig);
  void setField(const QString& name, const QString& value);  // e.g. "steps", "batch_size"
  QLineEdit* field(const QString& name) const;
  FieldError* fieldError(const QString& name) const;

  // Checks every field and builds the run; on a refusal shows the messages and returns false.
  bool buildSpec(hsm::RunSpec& spec);
  // As the Start button: returns false when a field was refused or training is running.
  bool start();
  bool continueCurrentRun();

  QPushButton* startButton() const;
  QPushButton* pauseButton() const;
  QPushButton* stopButton() const;
  PlotPanel* lossPlot() const { return lossPlot_; }
  QList<PlotPanel*> plots() const override;
  QString lastError() const;

 signals:
  void trainingFailed(const QString& message);

 public:
  // "hsm_ab: 460 steps of 32 windows, learning rate 0.003, seed 1337; last validation at step
  // 460: loss 4.080 nats, accuracy 0.311".
  static QString runSummary(const RunEntry& run);
  QString runSummaryText() const;

 private:
  void build();
  QWidget* buildFormPane();           // the scrolling form, the actions below it
  QHBoxLayout* buildPlotControls();   // smoothing, x axis, overlay
  QWidget* buildPlots();              // the curves, the scatter, the run's status
  void connectSignals();
  void rebuildPlots();
  void showCurrentRunInForm();

  TrainingForm* form_;
  TrainingRunController* controller_;
  QSlider* smoothing_;
  QLabel* smoothingLabel_;
  // The current run's own settings and numbers above its curves (issue 69: the form on the left
  // is a new run's and showed the paper's defaults beside a run that trained otherwise).
  QLabel* runSummary_ = nullptr;
  QComboBox* xAxis_;
  QCheckBox* overlay_;
  PlotPanel* lossPlot_;
  PlotPanel* accuracyPlot_;
  PlotPanel* speedPlot_;
  PlotPanel* lrPlot_;
  PlotPanel* scatterPlot_;
  bool replotPending_ = false;
};

}  // namespace studio
