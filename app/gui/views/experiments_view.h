#pragma once
// The Experiments view (issue 39, docs/sweeps.md "In the studio"): a sweep folder, or the open
// runs taken as one experiment, as one table (only the settings that differ; sortable,
// filterable; grouped by a setting with mean ± std), a parallel-coordinates plot whose brushes
// filter the table, and a scatter of any two columns. It follows a running sweep (the table
// re-read on the analysis executor when the folder changes), starts one from a small form
// (the grid's one launcher in a process, GridRunner, with progress and Cancel), and opens the selected runs so
// the Training view overlays their curves. Every plot exports PNG/PDF/SVG and CSV, the table CSV.
// What it holds and asks the engine is an ExperimentsState (experiments_state.h); this is its
// drawing.
#include <QStringList>
#include <functional>
#include <vector>

#include "gui/views/experiment_table.h"
#include "gui/views/experiments_state.h"
#include "gui/views/studio_view.h"
#include "hsm/sweep.h"

class QComboBox;
class QFormLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;

namespace studio {

class ParallelCoordinates;
class PlotPanel;
class GridRunner;
struct SweepForm;

class ExperimentsView : public StudioView {
  Q_OBJECT
 public:
  ExperimentsView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  // Shows the sweep in `dir` and follows it. False (the reason in the status line) when dir
  // holds no sweep; its table arrives off the GUI thread (isReading()).
  bool openSweep(const QString& dir);
  // The studio's open runs as one experiment (hsm::runs_table). False when fewer than two.
  bool useOpenRuns();
  // Re-reads the table (what the folder watcher and the timer do while points are not finished).
  void refresh();
  bool isReading() const { return state_->isReading(); }
  QString sweepDir() const { return state_->sweepDir(); }
  const std::vector<hsm::SweepRow>& rows() const { return state_->rows(); }
  ExperimentsState* state() const { return state_; }

  // "" (no grouping) or a setting that differs.
  void setGroup(const QString& setting);
  QComboBox* groupBox() const { return group_; }
  QLineEdit* filterEdit() const { return filter_; }
  QTableView* table() const { return table_; }
  ExperimentModel* model() const { return model_; }
  ExperimentFilter* proxy() const { return proxy_; }
  ParallelCoordinates* parallel() const { return parallel_; }
  PlotPanel* scatter() const { return scatter_; }
  QComboBox* colourBox() const { return colour_; }
  QComboBox* scatterX() const { return scatterX_; }
  QComboBox* scatterY() const { return scatterY_; }
  QLabel* statusLabel() const { return status_; }
  QList<PlotPanel*> plots() const override;
  // The table as shown (filtered, sorted) as CSV; "" on success, else the reason.
  QString exportTable(const QString& path) const;
  // The plots and the table into a folder; the files written.
  QStringList exportAll(const QString& folder, QString* error = nullptr) const;

  // The run folders of the selected rows (a group's runs each).
  QStringList selectedRunDirs() const;
  // Opens the selected runs in the studio and asks for the Training view (curvesRequested),
  // which overlays every open run's curves. Returns how many were opened.
  int showSelectedCurves();

  // The form: start a sweep into `outDir` (off the GUI thread); false when the form is refused
  // (the reason in the status line, nothing started) or a sweep runs already.
  void setForm(const SweepForm& form, const QString& outDir);
  bool startSweep();
  void cancelSweep();
  GridRunner* runner() const { return state_->runner(); }
  bool openFolder(const QString& dir) override { return openSweep(dir); }
  QString runningWork() const override;
  void stopForClose() override;
  QProgressBar* sweepProgress() const { return progress_; }
  QLabel* sweepStatus() const { return sweepStatus_; }  // the form's line: refusals, progress, the end

 signals:
  void curvesRequested();

 private:
  void build();
  QWidget* buildTop();  // open, group, filter and export above the table of runs
  void buildTable();
  QWidget* buildParallelPage();
  QWidget* buildScatterPage();
  QWidget* buildForm();  // a new sweep
  void buildFormFields();
  void buildFormRunControls();  // Start, Cancel, the progress and the runner
  QFormLayout* buildFormLayout();
  // A field with a "…" button that fills it with what `ask` returns (a file dialog's choice).
  QHBoxLayout* browsedField(QWidget* field, std::function<QString()> ask);
  void connectSignals();
  void connectRunner();  // the sweep's progress, to the form
  void showRows();
  void showReadFailure(const QString& message);
  void rebuildTable();
  void fillColumnBoxes();
  void drawParallel();
  void drawScatter();
  void setStatus(const QString& text);

  QPushButton* openButton_;
  QPushButton* openRunsButton_;
  QComboBox* group_;
  QLineEdit* filter_;
  QPushButton* exportButton_;
  QPushButton* curvesButton_;
  QLabel* status_;
  QTableView* table_;
  ExperimentModel* model_;
  ExperimentFilter* proxy_;
  QTabWidget* tabs_;
  ParallelCoordinates* parallel_;
  QComboBox* colour_;
  QPushButton* clearBrushes_;
  PlotPanel* scatter_;
  QComboBox* scatterX_;
  QComboBox* scatterY_;
  // The form.
  QLineEdit* formName_;
  QComboBox* formBase_;
  QLineEdit* formData_;
  QLineEdit* formTask_;
  QSpinBox* formSteps_;
  QSpinBox* formBatch_;
  QSpinBox* formEval_;
  QPlainTextEdit* formAxes_;
  QLineEdit* formOut_;
  QPushButton* startButton_;
  QPushButton* cancelButton_;
  QProgressBar* progress_;
  QLabel* sweepStatus_;
  ExperimentsState* state_;
  QString trainingNow_;  // the runner's point under way, as the form's line says it
};

}  // namespace studio
