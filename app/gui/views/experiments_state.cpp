#include "gui/views/experiments_state.h"

#include <QDir>
#include <QFileInfo>

#include "gui/engine/engine_host.h"
#include "gui/engine/grid_runner.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"

namespace studio {

ExperimentsState::ExperimentsState(RunList* runs, EngineHost* engine, QObject* parent)
    : QObject(parent), runs_(runs), engine_(engine), runner_(new GridRunner(this)) {
  // Following a sweep: its points' state files change as points start and end; in between,
  // only their metrics grow, so a timer re-reads while a point is not finished.
  poll_.setInterval(3000);
  connect(&poll_, &QTimer::timeout, this, &ExperimentsState::refresh);
  // The open runs as one experiment: re-read when one of them grows (one this studio trains).
  connect(runs_, &RunList::metricsAppended, this, [this](int row) {
    if (sweepDir_.isEmpty() && runDirs_.contains(runs_->at(row).dir) && !reread_.isActive()) reread_.start();
  });
  reread_.setSingleShot(true);
  reread_.setInterval(300);
  connect(&reread_, &QTimer::timeout, this, &ExperimentsState::refresh);
  connect(&watcher_, &QFileSystemWatcher::directoryChanged, this, [this](const QString& dir) {
    if (dir == sweepDir_ && watcher_.directories().size() < 2) watch();  // points/ may be new
    if (!reread_.isActive()) reread_.start();
  });
}

void ExperimentsState::followSweep(const QString& absDir) {
  sweepDir_ = absDir;
  runDirs_.clear();
  watch();
  read(sweepDir_, {});
}

void ExperimentsState::followRuns(const QStringList& runDirs) {
  sweepDir_.clear();
  runDirs_ = runDirs;
  watch();
  read({}, runDirs_);
}

void ExperimentsState::refresh() {
  if (sweepDir_.isEmpty() && runDirs_.isEmpty()) return;
  read(sweepDir_, runDirs_);
}

void ExperimentsState::read(const QString& sweepDir, const QStringList& runDirs) {
  if (reading_) {  // one read at a time; the newest source is read after it
    readAgain_ = true;
    return;
  }
  reading_ = true;
  readAgain_ = false;
  // The table reads every run's metrics.jsonl: off the GUI thread, on the analysis executor
  // (no model is loaded for it).
  engine_->analysis()
      .call<std::vector<hsm::SweepRow>>(QString(),
                                        [sweepDir, runDirs](const CallContext&) {
                                          if (!sweepDir.isEmpty()) return hsm::sweep_table(sstr(sweepDir));
                                          std::vector<std::string> dirs;
                                          for (const QString& d : runDirs) dirs.push_back(sstr(d));
                                          return hsm::runs_table(dirs);
                                        })
      .then(this,
            [this, sweepDir, runDirs](const std::vector<hsm::SweepRow>& rows) {
              reading_ = false;
              const bool current = sweepDir == sweepDir_ && runDirs == runDirs_;
              if (current) {
                rows_ = rows;
                follow();
                emit rowsRead();
              }
              if (readAgain_ || !current) refresh();
            })
      .onFailed(this, [this, sweepDir, runDirs](const CallFailed& e) {
        reading_ = false;
        if (sweepDir == sweepDir_ && runDirs == runDirs_) {
          poll_.stop();
          emit readFailed(e.message());
        } else {
          refresh();
        }
      });
}

ExperimentsState::Counts ExperimentsState::counts() const {
  Counts n;
  for (const hsm::SweepRow& r : rows_) {
    n.running += r.state == "running";
    n.done += r.state == "done";
    n.failed += r.state == "failed";
  }
  return n;
}

void ExperimentsState::follow() {
  // Follow while something trains (this studio's sweep or another process's).
  if (counts().running > 0 || runner_->running()) {
    if (!poll_.isActive()) poll_.start();
  } else {
    poll_.stop();
  }
}

void ExperimentsState::watch() {
  if (!watcher_.directories().isEmpty()) watcher_.removePaths(watcher_.directories());
  if (sweepDir_.isEmpty()) return;
  // points/ (the points' state files) appears with the first point that starts.
  const QString points = QDir(sweepDir_).filePath(QStringLiteral("points"));
  watcher_.addPath(sweepDir_);
  if (QFileInfo::exists(points)) watcher_.addPath(points);
}

bool ExperimentsState::startSweep(const QString& dir, QString* error) {
  // One point at a time, on every core: what `hsm sweep` does by default.
  if (!runner_->start(dir, 1, error)) return false;
  runningDir_ = dir;
  return true;
}

}  // namespace studio
