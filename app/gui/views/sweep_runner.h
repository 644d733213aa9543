#pragma once
// Starting a sweep from the Experiments view (issue 39): the small form's fields made into a
// spec (docs/sweeps.md, "The spec"), and the runner that checks it, makes the sweep folder and
// trains its points one after another, each in a process of its own (`hsm sweep run DIR
// --point K`, what the launcher and each Slurm array task run), watched from a thread of the
// runner's: not on an executor, since a sweep takes minutes and the views' calls must not wait
// behind it, and not in the studio's process, where LibTorch's one random generator would be
// shared with a run the Training view trains meanwhile (the point's bits would then depend on
// it; the Lab view's workers are processes for the same reason). Cancel sends the point SIGTERM:
// it stops at a step with a checkpoint ("stopped"), so the folder continues where it stopped
// when started again; the point gets the same when the studio ends, even killed.
#include <QObject>
#include <QString>
#include <atomic>
#include <string>
#include <memory>
#include <thread>

namespace hsm {
struct SweepPoint;
}

namespace studio {

struct SweepForm {
  QString name = QStringLiteral("sweep");
  QString base;  // a preset name, or a model config file (.json)
  QString data;  // a corpus, or
  QString task;  // a synthetic task (hsm task list)
  int steps = 300, batch = 16, evalEvery = 100;
  // One axis a line: "path = v1, v2, ..." (a value with a comma in quotes, "hsm_ab@0,6"; or
  // the values as a JSON list). An axis of one value sets it for every point.
  QString axes;
};

// The spec (JSON text) of the form; on a line it cannot read returns "" with the reason in
// *error, naming the line.
QString sweep_spec_json(const SweepForm& form, QString* error);

class SweepRunner : public QObject {
  Q_OBJECT
 public:
  explicit SweepRunner(QObject* parent = nullptr);
  ~SweepRunner() override;  // cancels and waits for the point under way to stop

  // Starts on the runner's thread: checks the spec (relative paths from baseDir), makes or
  // continues the sweep folder outDir, then trains the points not done. False when a sweep
  // runs already. A refused spec or folder: refused(), nothing trained.
  bool start(const QString& specJson, const QString& baseDir, const QString& outDir);
  void cancel();
  bool isRunning() const { return running_; }
  // Whether the calling thread is the runner's (tests: the training is off the GUI thread).
  bool onRunnerThread() const;

 signals:
  void refused(const QString& message);
  void started(const QString& dir, int points);
  void progress(int done, int points, const QString& point);  // before each point, and at the end
  void log(const QString& line);
  // done / points finished; cancelled: stopped by cancel(); failures: "point: error" lines.
  void finished(const QString& dir, int done, int points, bool cancelled, const QString& failures);

 private:
  void run(QString specJson, QString baseDir, QString outDir);
  // Trains one point in a child process until it ends (or stop_: SIGTERM); returns its state,
  // with *error set when it failed.
  std::string runPoint(const QString& exe, const std::string& dir, const hsm::SweepPoint& point, QString* error);

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
};

}  // namespace studio
