#include "gui/engine/training_worker.h"
#include "hsm/errors.h"

namespace studio {

TrainingWorker::TrainingWorker(QObject* parent) : QObject(parent) { register_engine_types(); }

TrainingWorker::~TrainingWorker() = default;

void TrainingWorker::pause() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!trainer_) return;
  trainer_->pause();
  emit paused(true);
}

void TrainingWorker::resume() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!trainer_) return;
  trainer_->resume();
  emit paused(false);
}

void TrainingWorker::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stop_requested_ = true;
  if (trainer_) {
    trainer_->resume();  // a paused trainer must wake up to stop
    trainer_->stop();
  }
}

bool TrainingWorker::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trainer_ != nullptr;
}

void TrainingWorker::run(const hsm::RunSpec& spec) {
  const QString dir = qstr(spec.run_dir);
  hsm::TrainCallbacks cb;
  cb.on_metric = [this, dir](const hsm::MetricRecord& m) { emit metric(dir, m); };
  // Data preparation reports often (per MB read); the GUI needs a few updates a second at
  // most, so only changes of a whole percent or of stage are sent across threads.
  auto last_stage = std::make_shared<std::string>();
  auto last_percent = std::make_shared<int>(-2);
  cb.on_progress = [this, last_stage, last_percent](const std::string& stage, double f) {
    const int percent = f < 0 ? -1 : static_cast<int>(f * 100);
    if (stage == *last_stage && percent == *last_percent) return;
    *last_stage = stage;
    *last_percent = percent;
    emit progress(qstr(stage), f);
  };
  cb.on_log = [this](const std::string& line) { emit log(qstr(line)); };
  cb.on_weights = [this, dir](int64_t step, const std::vector<hsm::MixerWeights>& w) { emit weights(dir, step, w); };
  try {
    hsm::Trainer trainer(spec, cb);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      trainer_ = &trainer;
      if (stop_requested_) trainer.stop();
    }
    emit started(dir);
    hsm::TrainSummary summary = trainer.run();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      trainer_ = nullptr;
      stop_requested_ = false;
    }
    emit finished(summary);
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      trainer_ = nullptr;
      stop_requested_ = false;
    }
    emit failed(dir, QString::fromStdString(hsm::error_text(e)));
  }
}

}  // namespace studio
