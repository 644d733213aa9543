#include "gui/views/playground_state.h"

#include <algorithm>

#include "gui/engine/engine_host.h"

namespace studio {

PlaygroundState::PlaygroundState(EngineHost* engine, QObject* parent) : QObject(parent), engine_(engine) {}

void PlaygroundState::start(const QVector<QPair<QString, bool>>& runs, const QString& prompt,
                            const hsm::GenerateOptions& options) {
  ++generation_;
  columns_.clear();
  queue_.clear();
  for (const auto& [dir, trained] : runs) {
    queue_ << static_cast<int>(columns_.size());
    columns_.push_back(Column{dir, trained, false, {}});
  }
  prompt_ = prompt;
  options_ = options;
  stopping_ = false;
  sendNext();
}

void PlaygroundState::sendNext() {
  active_ = {};
  activeColumn_ = -1;
  if (stopping_ || queue_.isEmpty()) {
    const QVector<int> notRun = queue_;
    queue_.clear();
    emit finished(notRun);
    return;
  }
  activeColumn_ = queue_.takeFirst();
  emit columnStarted(activeColumn_);
  const Column& c = columns_[activeColumn_];
  active_ = engine_->generate(c.runDir, prompt_, options_, c.trained);
  connect(active_.feed(), &CallFeed::token, this, [this](const hsm::GeneratedToken& token) {
    if (activeColumn_ >= 0) emit tokenGenerated(activeColumn_, token);
  });
  active_.result()
      .then(this,
            [this](const hsm::GenerationResult& r) {
              if (activeColumn_ < 0) return;
              emit columnGenerated(activeColumn_, r);
              sendNext();
            })
      .onFailed(this, [this](const CallFailed& e) {
        if (activeColumn_ < 0) return;
        emit columnFailed(activeColumn_, e.message());
        sendNext();
      });
}

void PlaygroundState::stop() {
  if (!isGenerating()) return;
  stopping_ = true;
  active_.cancel();
}

bool PlaygroundState::isProbing() const {
  return std::any_of(columns_.begin(), columns_.end(), [](const Column& c) { return c.probing; });
}

void PlaygroundState::startProvenance(int column, const QVector<int>& tokenIds) {
  Column& c = columns_[column];
  c.probing = true;
  // Answered to the column of this generation: a column rebuilt meanwhile drops its answer.
  engine_->probe(c.runDir, prompt_, tokenIds)
      .then(this,
            [this, column, generation = generation_](const hsm::Probe& p) {
              if (generation != generation_) return;
              columns_[column].probing = false;
              columns_[column].probe = p;
              emit probed(column);
            })
      .onFailed(this, [this, column, generation = generation_](const CallFailed& e) {
        if (generation != generation_) return;
        columns_[column].probing = false;
        emit probeFailed(column, e.message());
      });
}

}  // namespace studio
