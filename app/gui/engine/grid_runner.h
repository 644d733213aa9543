#pragma once
// Runs a grid of runs (a lab or a sweep, hsm/sweep.h) for the Lab and Experiments views: one
// process of the one launcher, `hsm sweep --out DIR --jobs N --events`, the CLI's own, so the
// studio trains a grid as `hsm lab` and `hsm sweep` do and to the same bits. Its workers are
// processes (hsm_executable.h says why), so the analysis executor stays free meanwhile. The
// launcher is read asynchronously (QProcess's signals on the GUI thread: no thread of its own,
// no polling). Progress comes from the workers' structured events (hsm/grid_workers.h:
// started, step, finished with its metrics), never from their log text, which is shown to
// people and nothing else. Cancel sends the launcher SIGTERM, which it passes on: each worker
// stops at a step with a checkpoint, and the folder continues where it stopped when run again.
// The launcher gets the same when the studio ends, even killed (PR_SET_PDEATHSIG).
#include <QJsonObject>
#include <QMap>
#include <QObject>
#include <QPair>
#include <QString>
#include <QStringList>
#include <QVector>

class QProcess;

namespace studio {

class GridRunner : public QObject {
  Q_OBJECT
 public:
  explicit GridRunner(QObject* parent = nullptr);
  ~GridRunner() override;  // stops the grid and waits for its workers' checkpoints (seconds)

  // Starts the launcher on the grid folder `dir` (its sweep.json written already), `jobs`
  // points at a time. False, with the reason in *error, when a grid runs already or the hsm
  // program cannot be found.
  bool start(const QString& dir, int jobs, QString* error);
  void cancel();
  bool running() const;
  int points() const { return points_; }
  int done() const { return done_; }
  // The points in training now: (name, fraction of its run done).
  QVector<QPair<QString, double>> inTraining() const;
  // (points done + the fraction of each in training) / points.
  double fraction() const;

 signals:
  void started(int points, int done);  // the launcher's first event
  void pointStarted(int point, const QString& name, bool resumed);
  void progress(double fraction);  // after each event that moves it
  // A point ended: state "done", "stopped" or "failed"; event: the whole event (its metrics).
  void pointFinished(int point, const QString& name, const QString& state, const QJsonObject& event);
  void line(const QString& text);  // a line the launcher wrote for people
  // The launcher has ended. cancelled: cancel() was called; failures: "point: error", a line
  // each, or the launcher's own last line when it failed otherwise (empty: none).
  void finished(bool cancelled, const QString& failures);

 private:
  void readEvents();
  void readLines();
  void handle(const QJsonObject& event);

  QProcess* process_ = nullptr;
  QByteArray pendingOut_, pendingErr_;
  int points_ = 0, done_ = 0;
  QMap<QString, double> training_;  // point name -> fraction
  QStringList failures_;
  QString lastLine_;
  bool cancelled_ = false;
};

}  // namespace studio
