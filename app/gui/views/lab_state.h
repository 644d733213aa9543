#pragma once
// What the Lab view (lab_view.h) holds and asks the engine, apart from its widgets
// (docs/architecture.md, "Add a view": state and widgets): the lab shown (its grid and points),
// its scored runs and their cells, the lab report's distance and difficulty panels of those cells
// (hsm/lab_report.h: the view and the report draw the same figures from the same code), and per
// run its validation curve and when its mechanism formed (hsm::run_formation, issue 67).
// A lab folder is read once, off the GUI thread (the analysis executor, no model loaded); while
// this studio trains it, each worker's "finished" event carries its run's score and convergence
// (hsm/grid_workers.h), so a finished run changes its cell without reading the folder
// (hsm::Lab::run_of_event, hsm::lab_cells), and only that run's own files are read (its curve and
// traces, off the GUI thread too). It draws nothing: the view draws what it holds when it says so.
#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QVector>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hsm/lab.h"
#include "hsm/lab_report.h"

namespace studio {

class EngineHost;
class GridRunner;

// A scored run's own files, read off the GUI thread: its validation answer accuracy by step
// (metrics.jsonl) and when its mechanism formed (traces.jsonl: hsm::Formation::summary(), "–"
// for a run that recorded no traces).
struct LabRunFiles {
  QVector<double> steps, accuracy;
  QString formation;
};

// A finished lab that ships with the studio (issue 68): its folder holds BUNDLED.json, how it
// was made. Never written into: the Lab view continues it in a copy.
struct LabBundle {
  QString command, machine, date;
};
inline constexpr char kLabBundleFile[] = "BUNDLED.json";

class LabState : public QObject {
  Q_OBJECT
 public:
  explicit LabState(EngineHost* engine, QObject* parent = nullptr);

  // The finished lab that ships with the studio (<resources>/labs/default, issue 68), empty when
  // none is installed.
  static QString bundledLabFolder();
  // Whether `dir` is a bundled lab (it holds BUNDLED.json, or lies under <resources>/labs/):
  // never written into.
  static bool isBundledLab(const QString& dir);
  // Copies a bundled lab into `labsFolder` as "NAME-DATE" (-2, -3 … when taken), writable and
  // without its BUNDLED.json (the copy is the user's lab), and returns the copy's folder. Throws
  // std::runtime_error naming what failed.
  static QString copyBundledLab(const QString& dir, const QString& labsFolder);

  // Reads the lab in `dir` off the GUI thread (its grid, its points, its scored runs): opened
  // when it is held, openFailed (the reason) when the folder holds none. The runs' own files
  // follow (filesRead). A later open() or run() wins: an older read that answers is dropped.
  void open(const QString& dir);
  // Trains (or continues) `lab`, made already, with `jobs` worker processes: the cells start
  // empty (cellsChanged at once), its runs scored already are read off the GUI thread, and each
  // run a worker scores is taken from its event. False, with the reason in *error, when the
  // runner cannot start.
  bool run(const hsm::Lab& lab, int jobs, QString* error);
  void cancel();
  GridRunner* runner() const { return runner_; }
  bool isRunning() const;
  // A read under way (the lab's folder, or a run's files).
  bool isReading() const { return reading_ > 0; }

  const hsm::Lab* lab() const { return lab_.get(); }  // nullptr: none shown
  // How the lab shown was made, when it ships with the studio (its BUNDLED.json).
  const std::optional<LabBundle>& bundle() const { return bundle_; }
  QString dir() const;
  const std::vector<hsm::LabRun>& runs() const { return runs_; }  // in the grid's order
  const std::vector<hsm::LabCell>& cells() const { return cells_; }
  const std::vector<hsm::LabDistancePanel>& distancePanels() const { return distancePanels_; }
  const std::vector<hsm::LabDifficultyPanel>& difficultyPanels() const { return difficultyPanels_; }
  // A run's files (nullptr while they are not read yet).
  const LabRunFiles* runFiles(const std::string& runDir) const;
  // The runs of a cell at its best setting, by seed.
  std::vector<const hsm::LabRun*> cellRuns(const std::string& task, const std::string& model) const;

 signals:
  void opened(const QString& dir);  // lab() is `dir`'s, with its runs and cells
  void openFailed(const QString& dir, const QString& message);
  void cellsChanged();  // runs(), cells() and the panels changed (a run was scored, a lab shown)
  void filesRead();     // runFiles() of some runs arrived
  void idle();          // no read is under way any more (isReading() false)

 private:
  void show(std::shared_ptr<const hsm::Lab> lab);  // its points, no run held yet
  void readRuns(const QString& dir, std::shared_ptr<const hsm::Lab> lab);
  void readFiles(const std::vector<std::string>& runDirs);
  void onPointFinished(const QString& name, const QString& state, const QJsonObject& event);
  void keep(const std::vector<hsm::LabRun>& runs, bool replace);
  void doneReading();  // a read answered (after what it started)
  void remake();  // cells and panels from the runs held

  EngineHost* engine_;
  GridRunner* runner_;
  std::shared_ptr<const hsm::Lab> lab_;
  std::optional<LabBundle> bundle_;
  uint64_t generation_ = 0;  // of the lab shown: a read of an older one is dropped
  int reading_ = 0;
  std::map<std::string, size_t> pointOf_;  // a run's folder -> its point's index
  std::vector<std::optional<hsm::LabRun>> byPoint_;
  std::vector<hsm::LabRun> runs_;
  std::vector<hsm::LabCell> cells_;
  std::vector<hsm::LabDistancePanel> distancePanels_;
  std::vector<hsm::LabDifficultyPanel> difficultyPanels_;
  std::map<std::string, LabRunFiles> files_;
};

}  // namespace studio
