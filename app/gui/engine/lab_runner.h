#pragma once
// Runs a lab (hsm/lab.h) for the Lab view in worker processes of `hsm lab` (one per core, each
// on one thread: what `hsm lab --jobs` does, so the studio trains a grid as fast as the CLI and
// to the same bits). A lab takes minutes to an hour: it gets processes of its own, so the
// analysis executor stays free for the other views (an ablation never waits behind a lab).
// Progress comes from the workers' "progress" lines (inside a run) and their scored-run lines;
// cancel sends SIGINT, after which each worker stops at its step and keeps its checkpoint (the
// next start continues the folder). Workers die with the studio (PR_SET_PDEATHSIG: SIGINT, so a
// crash of the studio still leaves checkpoints).
#include <QObject>
#include <QString>
#include <QPair>
#include <QVector>

class QProcess;

namespace studio {

class LabRunner : public QObject {
  Q_OBJECT
 public:
  explicit LabRunner(QObject* parent = nullptr);
  ~LabRunner() override;  // stops the workers and waits for them (a few seconds at most)

  // Starts `workers` processes on the lab folder `dir` (its lab.json already written, e.g. by
  // constructing hsm::Lab), which has `total` runs of which `scored` are done. False, with the
  // reason in *error, when the hsm program cannot be found or started.
  bool start(const QString& dir, qint64 total, qint64 scored, int workers, QString* error);
  void cancel();
  bool running() const { return live_ > 0; }
  qint64 scored() const { return scored_; }
  // The runs in training now, one per busy worker: (run folder name, fraction done).
  QVector<QPair<QString, double>> inTraining() const;

 signals:
  void line(const QString& text);  // a worker's log line: a scored run, "continuing …"
  // (runs scored + the fraction of each run in training) / runs; `run` the run that moved.
  void progress(double fraction, const QString& run);
  void runScored();
  // Every worker has ended. cancelled: cancel() was called; error: a worker's last words when
  // one failed (empty otherwise).
  void finished(bool cancelled, const QString& error);

 private:
  void readProgress(int worker);
  void readLog(int worker);
  void emitProgress(const QString& run);

  struct Worker {
    QProcess* process = nullptr;
    QString run;          // the run it is training ("" between runs)
    double fraction = 0;  // of that run
    QString lastError;
    QByteArray pendingOut, pendingErr;
  };
  QVector<Worker> workers_;
  qint64 total_ = 0, scored_ = 0;
  int live_ = 0;
  bool cancelled_ = false;
  QString error_;
};

}  // namespace studio
