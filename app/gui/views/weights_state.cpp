#include "gui/views/weights_state.h"

#include <QDir>

#include "gui/engine/engine_host.h"
#include "hsm/evaluator.h"

namespace studio {

WeightsState::WeightsState(EngineHost* engine, QObject* parent) : QObject(parent), engine_(engine) {}

void WeightsState::read(const QString& runDir) {
  reading_ = true;
  engine_->interactive()
      .call<std::vector<hsm::MixerWeights>>(runDir, [](const CallContext& c) { return c.trained()->mixer_weights(); })
      .then(this,
            [this, runDir](const std::vector<hsm::MixerWeights>& w) {
              reading_ = false;
              emit weightsRead(runDir, w);
            })
      .onFailed(this, [this](const CallFailed& e) {
        reading_ = false;
        emit readFailed(e.message());
      });
}

void WeightsState::setShown(const QString& runDir, qint64 step, const std::vector<hsm::MixerWeights>& trained) {
  trained_ = trained;
  shownRun_ = runDir;
  step_ = step;
}

void WeightsState::forget() {
  shownRun_.clear();
  trained_.clear();
  step_ = -1;
}

void WeightsState::setEditorRun(const QString& runDir) {
  editorRun_ = runDir;
  hasEval_ = false;
  evaluationLoss_ = std::nan("");
}

hsm::WhatIf WeightsState::edits() const { return engine_->whatIf(editorRun_); }

void WeightsState::setEdits(const hsm::WhatIf& edits) {
  engine_->setWhatIf(editorRun_, edits).onFailed(this, [this](const CallFailed& e) {
    lastError_ = e.message();
    emit editRefused(e.message());
  });
}

void WeightsState::evaluate(const QString& data, const QString& windows, int maxWindows,
                            const std::optional<RunEvaluation>& recorded) {
  evaluating_ = engine_->evaluateWhatIf(editorRun_, data, windows, maxWindows, !recorded);
  // A newer edit's evaluation supersedes this one (EngineHost::evaluateWhatIf): only the
  // newest answers the view.
  evaluating_.result()
      .then(this,
            [this, feed = evaluating_.feed(), recorded](const WhatIfEvaluation& e) {
              if (feed != evaluating_.feed()) return;
              evaluating_ = {};
              eval_ = e;
              hasEval_ = true;
              recorded_ = recorded;
              evaluationLoss_ = recorded ? recorded->loss : e.evaluation.loss;
              emit evaluated();
            })
      .onFailed(this, [this, feed = evaluating_.feed()](const CallFailed& e) {
        if (feed != evaluating_.feed()) return;
        evaluating_ = {};
        lastError_ = e.message();
        emit evaluationFailed(e.message());
      });
}

void WeightsState::evaluateTask() {
  // A task run reads no text: the edit is scored on the task's test examples, trained against
  // edited, as the Losses view and `hsm eval` score them.
  const int ticket = ++taskEvaluation_;
  using Scores = std::pair<hsm::TaskScore, hsm::TaskScore>;
  engine_->analysis()
      .call<Scores>(editorRun_,
                    [](const CallContext& c) {
                      return Scores{hsm::Evaluator(c.trained()).score_task(kTaskExamples),
                                    hsm::Evaluator(c.model()).score_task(kTaskExamples)};
                    })
      .then(this,
            [this, ticket](const Scores& s) {
              if (ticket != taskEvaluation_) return;  // a newer edit's answers the view
              emit taskEvaluated(s.first, s.second, !engine_->whatIf(editorRun_).empty());
            })
      .onFailed(this, [this, ticket](const CallFailed& e) {
        if (ticket != taskEvaluation_) return;
        lastError_ = e.message();
        emit taskEvaluationFailed(e.message());
      });
}

void WeightsState::saveAs(const QString& folder) {
  saving_ = true;
  engine_->saveWhatIf(editorRun_, folder)
      .then(this,
            [this](const QString& dir) {
              saving_ = false;
              savedRun_ = dir;
              emit saved(dir);
            })
      .onFailed(this, [this](const CallFailed& e) {
        saving_ = false;
        lastError_ = e.message();
        emit saveFailed(e.message());
      });
}

}  // namespace studio
