#pragma once
// Runs hsm::Trainer on its own thread. Trainer::run() blocks for the whole run (hours on a
// CPU), so training has a thread of its own; generation and evaluation run on the two
// executors' threads (executor.h) and stay responsive meanwhile. Every LibTorch call of a run
// happens on this one thread, where the trainer sets its thread-local state (docs/architecture.md, "Threads").
#include <QObject>
#include <QString>
#include <memory>
#include <mutex>

#include "gui/engine_types.h"

namespace studio {

class TrainingWorker : public QObject {
  Q_OBJECT
 public:
  explicit TrainingWorker(QObject* parent = nullptr);
  ~TrainingWorker() override;

  // Thread-safe: called from the GUI thread while run() blocks the training thread.
  void pause();
  void resume();
  void stop();
  bool running() const;

 public slots:
  // Trains to the end, to stop(), or to an error; emits finished() or failed().
  void run(const hsm::RunSpec& spec);

 signals:
  void started(const QString& runDir);
  void metric(const QString& runDir, const hsm::MetricRecord& record);
  void progress(const QString& stage, double fraction);
  void log(const QString& line);
  void paused(bool paused);
  void finished(const hsm::TrainSummary& summary);
  void failed(const QString& runDir, const QString& message);
  // The learned mixer weights at the start and after every validation (TrainCallbacks::on_weights).
  void weights(const QString& runDir, qint64 step, const std::vector<hsm::MixerWeights>& layers);

 private:
  mutable std::mutex mutex_;
  hsm::Trainer* trainer_ = nullptr;  // the run in progress (under mutex_)
  bool stop_requested_ = false;      // stop() before the trainer existed (under mutex_)
};

}  // namespace studio
