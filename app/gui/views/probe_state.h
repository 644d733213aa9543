#pragma once
// What the Probe view (probe_view.h) holds and asks the engine, apart from its widgets
// (docs/architecture.md, "Add a view": state and widgets): the current run's logit lens and
// rollout for a prompt (or a task run's test example), and importance by ablation, each run's
// last one kept while the studio runs. It draws nothing: the view draws what it holds when it
// says so.
#include <QMap>
#include <QObject>
#include <QString>

#include "gui/engine/executor.h"
#include "hsm/probe.h"
#include "hsm/tasks.h"

namespace studio {

class EngineHost;
struct RunEntry;

class ProbeState : public QObject {
  Q_OBJECT
 public:
  explicit ProbeState(EngineHost* engine, QObject* parent = nullptr);

  // The lens and rollout of `run` for `prompt`, or of its task's test example `example` (a
  // task run): probed, probeDropped, reprobeWanted or probeFailed when it answers.
  void startProbe(const RunEntry& run, const QString& prompt, int example);
  // Another example was chosen while a probe ran: probed again when that one answers.
  void reprobeWhenAnswered() { reprobe_ = true; }
  bool isProbing() const { return probing_; }
  QString probeRun() const { return probeRun_; }  // the run the probe (or the one under way) is of
  bool hasProbe() const { return hasProbe_; }
  const hsm::Probe& probe() const { return probe_; }
  const hsm::TaskPrompt& example() const { return example_; }  // a task run's: the example probed
  // The view follows `runDir` now: the probe of another run is dropped.
  void dropProbe(const QString& runDir);

  // Importance by ablation of `run` on `data`'s validation windows: ablated (or
  // ablatedElsewhere, when the view follows another run by then) or ablationFailed.
  void startAblation(const RunEntry& run, const QString& data, const QString& windows, int maxWindows);
  void cancelAblation() { ablating_.cancel(); }
  bool isAblating() const { return ablating_.feed() != nullptr; }
  // The ablation shown is `runDir`'s last one (none yet: hasAblation() false).
  void showAblationOf(const QString& runDir);
  QString ablationRun() const { return ablationRun_; }
  bool hasAblation() const { return hasAblation_; }
  const hsm::AblationReport& ablation() const { return ablation_; }

  QString lastError() const { return lastError_; }
  void setLastError(const QString& error) { lastError_ = error; }

 signals:
  void probed();                      // probe() and example() are the current run's
  void probeDropped();                // the probe answered for a run the view left meanwhile
  void reprobeWanted();               // the probe answered after another example was chosen
  void probeFailed(const QString& message, bool reprobe);
  void ablationProgress(const QString& stage, double fraction);
  void ablated(const QString& runDir);           // ablation() is the current run's
  void ablatedElsewhere(const QString& runDir);  // kept for that run
  void ablationFailed(const QString& message, bool cancelled);

 private:
  void onProbed(const QString& runDir, const hsm::Probe& p, const hsm::TaskPrompt& example);
  void onProbeFailed(const QString& message);

  EngineHost* engine_;
  bool probing_ = false;
  bool reprobe_ = false;
  QString probeRun_;
  hsm::Probe probe_;
  hsm::TaskPrompt example_;
  bool hasProbe_ = false;
  Reply<hsm::AblationReport> ablating_;  // the ablation under way (none: no feed)
  hsm::AblationReport ablation_;
  QString ablationRun_;
  QMap<QString, hsm::AblationReport> ablations_;  // each run's last ablation
  bool hasAblation_ = false;
  QString lastError_;
};

}  // namespace studio
