#pragma once
// The Diagnostics view's "over time" strip (issue 23, docs/diagnostics.md §7): the indicators the trainer
// recorded at every validation (RUN/diagnostics.jsonl, hsm/diagnostics_log.h) drawn against
// step, one line per layer, for the indicator picked; a step slider (the chosen step marked
// on the chart) whose record the view draws in its radar, overview and table. The file is
// read incrementally in small slices on a timer, so a run that trains appends live and a
// long log never blocks the GUI thread. A run without the file says so in words.
#include <QWidget>
#include <memory>
#include <vector>

#include "hsm/diagnostics_log.h"

class QCheckBox;
class QComboBox;
class QCPItemStraightLine;
class QLabel;
class QSlider;
class QTimer;

namespace studio {

class PlotPanel;

// One indicator by index, in DiagnosticsView::indicatorNames()'s order: 0 entropy, 1 conc,
// 2 headdiv, 3 sink, 4..7 LocFoc0..3.
double indicator_value(const hsm::Indicators& i, int index);

class DiagnosticsTimeline : public QWidget {
  Q_OBJECT
 public:
  explicit DiagnosticsTimeline(QWidget* parent = nullptr);
  ~DiagnosticsTimeline() override;

  // Follows a run folder's diagnostics.jsonl (empty: none). Reads what is there at once (in
  // slices) and polls for more while the run is set.
  void setRun(const QString& runDir);
  QString run() const { return runDir_; }
  // Reads what was appended since the last poll (one slice; schedules the next one when more
  // is waiting). Called by the timer; tests call it to avoid waiting.
  void poll();

  const std::vector<hsm::DiagnosticsRecord>& records() const { return records_; }
  bool hasLog() const { return !records_.empty(); }
  // The record the slider is on (-1: none).
  int currentIndex() const;
  void setCurrentIndex(int index);
  const hsm::DiagnosticsRecord* currentRecord() const;
  // Whether the view should draw its indicators at the slider's step (ticked by moving the
  // slider; unticked: the prompt's diagnosis of the current checkpoint).
  bool showsStep() const;
  void setShowsStep(bool on);

  // The indicator drawn: 0..7 as DiagnosticsView::indicatorNames(), 8 the logit lens's KL.
  void setIndicator(int index);
  int indicator() const;
  static QStringList indicatorChoices();
  static double value(const hsm::DiagnosticsLayerRecord& layer, int indicator);

  PlotPanel* plot() const { return plot_; }
  QString message() const;

  static constexpr uint64_t kSliceBytes = 256 * 1024;  // per poll: a few records of a wide model
  static constexpr int kPollMs = 1000;

 signals:
  // The slider moved to another record, or the "at this step" box changed.
  void stepChanged();
  // The first record of a run appeared, or the run shown has none (only the message shows).
  void hasRecordsChanged(bool has);

 private:
  void buildControls();  // the indicator, the plot with its step marker, the slider, the message
  void layOut();
  void connectSignals();
  void redraw();
  void markStep();
  void updateLabels();

  QString runDir_;
  QString task_;  // the run's task (a task run records no diagnostics over time); empty: a corpus run
  std::unique_ptr<hsm::DiagnosticsLogReader> reader_;
  std::vector<hsm::DiagnosticsRecord> records_;
  QComboBox* indicatorBox_;
  PlotPanel* plot_;
  QCPItemStraightLine* marker_ = nullptr;
  QSlider* slider_;
  QLabel* stepLabel_;
  QCheckBox* atStep_;
  QLabel* message_;
  QWidget* body_;
  QTimer* timer_;
  bool sliceQueued_ = false;
  bool hadRecords_ = false;
};

}  // namespace studio
