#pragma once
// The Lab view (issue 38, docs/lab.md): the mixer lab of `hsm lab` in the studio. Pick task
// specs (their difficulty is in the spec: mqar:pairs=8,context=64), models (presets) and a
// budget (steps, batch, learning rates, seeds; `hsm lab`'s defaults), and a lab folder; Run
// trains and scores the grid's runs with the grid's one launcher, a worker process per core
// (gui/engine/grid_runner.h: the analysis thread stays free for the other views); the bar moves
// with the workers' progress events; Cancel stops each at its step with its checkpoint and the
// folder continues on the next Run, as `hsm lab` does.
// The grid: rows models, columns tasks, each cell the best learning rate's test answer
// accuracy on a colour scale, its numbers on hover. A lab folder reopens (Open…); Export CSV
// writes the table `hsm lab --csv` prints. Below the grid, accuracy against difficulty per
// model and the hovered cell's curve (PNG/PDF/SVG/CSV through each plot's Export… button).
#include <QMap>
#include <QString>
#include <QStringList>
#include <functional>

#include "gui/views/studio_view.h"
#include "gui/widgets/plot_series.h"
#include "hsm/lab.h"
#include "hsm/lab_report.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QTimer;

namespace studio {

class GridRunner;
class LabState;
class PlotPanel;

class LabView : public StudioView {
  Q_OBJECT
 public:
  LabView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  // A grid cell's text ("0.964 ± 0.021 ★", its marks on lines below) and its tooltip (the
  // numbers behind the marks, a not-converged cell's evidence, and `formed`: a line per run at
  // its best setting saying when its mechanism formed, issue 67).
  static QString cellText(const hsm::LabCell& cell);
  static QString cellToolTip(const hsm::LabCell& cell, const QStringList& formed = {});

  // The grid the form describes (checked tasks and models, the budget). Throws
  // std::invalid_argument with one line when the form cannot make one (nothing checked, a
  // learning rate that is not a number).
  hsm::LabGrid formGrid() const;
  // Puts a grid into the form (what a reopened lab does; the smoke session's tiny lab).
  void fillForm(const hsm::LabGrid& grid);
  // Where "the Architecture view's model" comes from (MainWindow: ArchitectureView::saveConfig).
  // Run saves it as a config in the lab folder (models/architecture.json) and trains that.
  void setArchitectureModel(std::function<QString(const QString& path)> save);
  // Adds a model config file (checked) to the models; false, with the reason shown, when the
  // file is not a model config.
  bool addModelConfig(const QString& path);
  void setFolder(const QString& dir);
  QString folder() const;
  // A new lab's folder when the user has chosen none (issue 69): "HSM Studio labs/lab-DATE" under
  // the user's documents folder (QStandardPaths), shown in the Folder field and changeable there;
  // made only when Run starts.
  static QString defaultFolder();
  // The empty Lab opens the finished lab that ships with the studio on a first start, marked as
  // bundled; Run continues a bundled lab in a copy under the user's labs folder
  // (LabState::bundledLabFolder, isBundledLab, copyBundledLab).
  // What the form's grid costs before it runs, from the lab's own estimate (hsm::estimate_lab,
  // as `hsm lab --dry-run` prints it): "24 runs, about 12 minutes on 2 cores", or why there is
  // none (nothing checked).
  QString estimateText() const;
  // The estimate's wall-clock seconds on this machine's cores (0 when the form makes no grid).
  double estimatedSeconds() const { return estimateSeconds_; }
  // Whether the grid shows a lab (else the page that says what the Lab answers).
  bool showsLab() const;
  // Runs (or continues) the form's grid in folder(); false, with the reason shown, when it
  // cannot start.
  bool runLab();
  void cancelLab();
  bool isRunning() const;
  // Reads a lab folder off the GUI thread (LabState): its grid into the form and its results
  // into the grid when they arrive (isReading() false again); false with the reason shown when
  // the folder holds no lab's grid, or a lab runs.
  bool openLab(const QString& dir);
  bool isReading() const;
  // Writes the table (hsm::Lab::table_csv) to `path`.
  bool exportCsv(const QString& path, QString* error = nullptr) const;
  // Writes the lab's report (hsm::lab_report, as `hsm lab report`): `mdPath`, the HTML page beside
  // it (same stem) and its SVG figures. The page and figures beside the chosen file must not
  // exist (the save dialog asked only about the one file): false, naming them, if one does.
  bool exportReport(const QString& mdPath, QString* error = nullptr) const;

  QTableWidget* grid() const { return grid_; }
  QProgressBar* progress() const { return progress_; }
  QListWidget* taskList() const { return tasks_; }
  QListWidget* modelList() const { return models_; }
  QPushButton* runButton() const { return run_; }
  QPushButton* cancelButton() const { return cancel_; }
  QString status() const;
  // The run a cell opens (empty when the cell has none scored).
  QString cellRun(int row, int column) const;
  // Accuracy against difficulty per model, a panel of the lab's report (hsm/lab_report.h) chosen
  // in difficultyAxis(): a task's accuracy by key-query distance (recall_at's and MQAR's answers
  // carry it; the cell's runs at its best learning rate pooled), or MAD's accuracy against a
  // task's setting where the lab changes one. The view draws the report's panels, so the two agree.
  PlotPanel* difficultyPlot() const { return difficultyPlot_; }
  QComboBox* difficultyAxis() const { return axis_; }
  // The hovered (or current) cell's curve: validation answer accuracy against step, one
  // line per seed at the cell's best learning rate.
  PlotPanel* cellPlot() const { return cellPlot_; }
  void showCellCurve(int row, int column);
  QList<PlotPanel*> plots() const override;
  // A panel of the lab report as the plot's curves: each series its line (NaN points left out),
  // each vertical line (a model's reach) and reference line (chance) dashed.
  static QVector<PlotSeries> panelSeries(const hsm::SvgPanel& panel);
  const std::vector<hsm::LabCell>& cells() const;
  bool openFolder(const QString& dir) override { return openLab(dir); }
  QString runningWork() const override;
  void stopForClose() override;

 signals:
  void labFinished(bool cancelled);
  // A cell was double-clicked: its run at the best learning rate and the first seed, for the
  // other views (MainWindow opens it).
  void runRequested(const QString& runDir);

 private:
  void build();
  void buildFormControls();    // the tasks, the models and the budget
  void buildFolderControls();  // the lab's folder, Browse and what Run will cost
  static PlotSeries chanceLine(const QVector<double>& x, double chance);
  const hsm::SvgPanel* chosenPanel() const;
  void buildRunControls();     // Run, Cancel, Open, Export, the progress and the log
  void buildResultControls();  // the grid and its plots
  QWidget* buildForm();
  QWidget* buildResults();
  QWidget* buildGridPlotsAndLog();  // the grid with its key, the two plots and the log
  void connectSignals();
  // Shows lab `dir`'s grid and cells. Another lab than the one shown (issue 48, no stale view):
  // its cell curve and log go at once; the same lab's shown cell is drawn again with its new points.
  void showTable();     // the state's lab and cells
  void showToolTips();  // each scored cell's numbers and its runs' formation
  void showBundle();    // how a bundled lab was made, or nothing
  void showEvent(QShowEvent* event) override;
  void showLab(const QString& dir);  // forgets the cell curve and log of another lab than `dir`
  void setRunning(bool running);
  void updateEstimate();
  void showProgress(double fraction);  // the bar, the runs in training, the time left
  void onRunnerFinished(bool cancelled, const QString& error);
  void reportLabEnd(const QString& dir, bool cancelled, const QString& error);  // the status, labFinished
  void showDifficulty();
  void setDifficultyAxes();
  void addArchitectureItem();
  // The scored runs of a cell at its best learning rate, by seed.
  std::vector<const hsm::LabRun*> cellRuns(int row, int column) const;

  QListWidget* tasks_ = nullptr;
  QListWidget* models_ = nullptr;
  QLineEdit* newTask_ = nullptr;
  QSpinBox* steps_ = nullptr;
  QSpinBox* batch_ = nullptr;
  QSpinBox* seeds_ = nullptr;
  QLineEdit* lrs_ = nullptr;
  QLineEdit* weightDecays_ = nullptr;
  QLineEdit* folder_ = nullptr;
  QPushButton* browse_ = nullptr;
  QPushButton* addConfig_ = nullptr;
  QPushButton* open_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* exportCsv_ = nullptr;
  QPushButton* exportReport_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* training_ = nullptr;  // the runs in training and how far each is
  QPlainTextEdit* log_ = nullptr;
  QTableWidget* grid_ = nullptr;
  QLabel* colourKey_ = nullptr;  // what the cells' colours say
  QLabel* bundled_ = nullptr;    // a bundled lab's command, machine and date
  bool firstShown_ = false;
  QObject* endWait_ = nullptr;  // the lab's end waiting for the state's reads
  QStackedWidget* gridPages_ = nullptr;  // the empty Lab's explanation, or the grid
  QLabel* intro_ = nullptr;              // what the Lab answers, before a lab is shown
  QLabel* estimate_ = nullptr;           // the form's grid: runs and estimated time
  QTimer* estimateTimer_ = nullptr;      // the estimate follows the form after a pause in typing
  double estimateSeconds_ = 0;
  double runEstimateSeconds_ = 0;        // the running lab's estimate, for the time left
  QComboBox* axis_ = nullptr;
  PlotPanel* difficultyPlot_ = nullptr;
  PlotPanel* cellPlot_ = nullptr;
  std::function<QString(const QString&)> saveArchitecture_;
  LabState* state_ = nullptr;
  GridRunner* runner_ = nullptr;  // the state's
  QString runningDir_;  // the lab folder the workers train
  QMap<QString, QString> runTitles_;  // a point's name -> "mqar · gpt · lr 0.003 · seed 1"
  QString openingDir_;  // the folder openLab() reads (its form and status follow when it arrives)
  bool firstStartOpen_ = false;  // the read in flight is the bundled lab a first start shows
  bool formTouched_ = false;     // the user changed the form (fillForm's own changes aside)
  bool fillingForm_ = false;
  hsm::LabGrid shownGrid_;
  QString shownDir_;               // the lab folder the grid, cell curve and log are of
  int cellRow_ = -1, cellColumn_ = -1;  // the cell whose curve is shown (-1: none)
};

}  // namespace studio
