#pragma once
// What the Experiments view (experiments_view.h) holds and asks the engine, apart from its
// widgets (docs/architecture.md, "Add a view": state and widgets): what it shows (a sweep
// folder, or the open runs taken as one experiment) and its rows, read on the analysis
// executor and read again while it follows a sweep that trains (the folder watched, a timer
// while a point is not finished, an open run's metrics growing); and the sweep this studio
// trains (GridRunner). It draws nothing: the view draws what it holds when it says so.
#include <QFileSystemWatcher>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <vector>

#include "hsm/sweep.h"

namespace studio {

class EngineHost;
class GridRunner;
class RunList;

class ExperimentsState : public QObject {
  Q_OBJECT
 public:
  ExperimentsState(RunList* runs, EngineHost* engine, QObject* parent = nullptr);

  // Shows the sweep in `absDir` (which holds a sweep.json), or the open runs `runDirs`, and
  // follows it: rowsRead when its rows arrive (off the GUI thread), readFailed if they cannot.
  void followSweep(const QString& absDir);
  void followRuns(const QStringList& runDirs);
  // Re-reads the rows (what the folder watcher and the timer do while points are not finished).
  void refresh();
  bool isReading() const { return reading_; }
  QString sweepDir() const { return sweepDir_; }  // "" with open runs
  QStringList runDirs() const { return runDirs_; }
  const std::vector<hsm::SweepRow>& rows() const { return rows_; }
  struct Counts {
    int running = 0, done = 0, failed = 0;
  };
  Counts counts() const;  // of the rows' states

  // The sweep this studio trains: `dir`'s points not done, one at a time (false: `error` says why).
  bool startSweep(const QString& dir, QString* error);
  GridRunner* runner() const { return runner_; }
  QString runningDir() const { return runningDir_; }  // the folder of the sweep the runner trains

 signals:
  void rowsRead();                          // rows() are what the view shows now
  void readFailed(const QString& message);  // of what the view shows now; it is no longer followed

 private:
  void read(const QString& sweepDir, const QStringList& runDirs);
  void watch();
  void follow();  // polls while something trains (this studio's sweep or another process's)

  RunList* runs_;
  EngineHost* engine_;
  GridRunner* runner_;
  QString runningDir_;
  QString sweepDir_;
  QStringList runDirs_;
  std::vector<hsm::SweepRow> rows_;
  bool reading_ = false, readAgain_ = false;
  QFileSystemWatcher watcher_;
  QTimer poll_;    // while a point is not finished: metrics grow without the folder changing
  QTimer reread_;  // one re-read after a burst of changes (the folder's, an open run's metrics)
};

}  // namespace studio
