#include "gui/views/probe_state.h"

#include <QDir>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "hsm/prober.h"

namespace studio {

ProbeState::ProbeState(EngineHost* engine, QObject* parent) : QObject(parent), engine_(engine) {}

void ProbeState::startProbe(const RunEntry& run, const QString& prompt, int example) {
  probing_ = true;
  probeRun_ = QDir(run.dir).absolutePath();
  auto failed = [this](const CallFailed& e) { onProbeFailed(e.message()); };
  if (run.task.empty()) {
    engine_->probe(run.dir, prompt)
        .then(this, [this, dir = probeRun_](const hsm::Probe& p) { onProbed(dir, p, {}); })
        .onFailed(this, failed);
  } else {
    // A task run: test example N of its task, the lens ranking the right answer at each answer.
    using Probed = std::pair<hsm::Probe, hsm::TaskPrompt>;
    engine_->interactive()
        .call<Probed>(run.dir,
                      [index = example](const CallContext& c) {
                        const hsm::Prober prober(c.model());
                        hsm::TaskPrompt example = prober.task_prompt(index);
                        hsm::Probe probe = prober.probe_tokens(example.tokens, 5, example.targets);
                        return Probed{std::move(probe), std::move(example)};
                      })
        .then(this, [this, dir = probeRun_](const Probed& p) { onProbed(dir, p.first, p.second); })
        .onFailed(this, failed);
  }
}

void ProbeState::onProbed(const QString& runDir, const hsm::Probe& p, const hsm::TaskPrompt& example) {
  probing_ = false;
  if (runDir != probeRun_) {  // of a run left meanwhile
    emit probeDropped();
    return;
  }
  if (reprobe_) {  // another example was chosen meanwhile: this one is not kept
    reprobe_ = false;
    emit reprobeWanted();
    return;
  }
  probe_ = p;
  example_ = example;
  hasProbe_ = true;
  emit probed();
}

void ProbeState::onProbeFailed(const QString& message) {
  probing_ = false;
  lastError_ = message;
  const bool again = reprobe_;
  reprobe_ = false;
  emit probeFailed(message, again);
}

void ProbeState::dropProbe(const QString& runDir) {
  probeRun_ = runDir;
  hasProbe_ = false;
  probe_ = {};
  example_ = {};
}

void ProbeState::startAblation(const RunEntry& run, const QString& data, const QString& windows, int maxWindows) {
  ablating_ = engine_->ablate(run.dir, data, windows, maxWindows);
  connect(ablating_.feed(), &CallFeed::progress, this, &ProbeState::ablationProgress);
  ablating_.result()
      .then(this,
            [this, dir = QDir(run.dir).absolutePath()](const hsm::AblationReport& r) {
              ablating_ = {};
              ablations_[dir] = r;
              if (dir != ablationRun_) {  // finished after the view moved to another run: kept for it
                emit ablatedElsewhere(dir);
                return;
              }
              ablation_ = r;
              hasAblation_ = true;
              emit ablated(dir);
            })
      .onFailed(this, [this](const CallFailed& e) {
        ablating_ = {};
        lastError_ = e.message();
        emit ablationFailed(e.message(), e.cancelled());
      });
}

void ProbeState::showAblationOf(const QString& runDir) {
  ablationRun_ = runDir;
  hasAblation_ = ablations_.contains(runDir);
  ablation_ = ablations_.value(runDir);
}

}  // namespace studio
