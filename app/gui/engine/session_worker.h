#pragma once
// Calls the engine on an engine thread: loading, generation and diagnosis happen there, one
// request after another, never on the GUI thread. Sessions are cached by run folder and
// reloaded when the folder's checkpoint changes. The engine host runs two: one for generation,
// diagnosis and probes, one for the long evaluations (ablation, what-if losses), so a
// generation never waits for an ablation; both take their models from one ModelStore, so a
// run's model is loaded once for both (model_store.h).
#include <QObject>
#include <QString>
#include <QVector>
#include <atomic>
#include <deque>
#include <map>
#include <memory>

#include "gui/engine_types.h"

namespace studio {

class ModelStore;

class SessionWorker : public QObject {
  Q_OBJECT
 public:
  // models: shared with the other worker (null: a store of its own).
  explicit SessionWorker(std::shared_ptr<ModelStore> models = nullptr, QObject* parent = nullptr);
  ~SessionWorker() override;

  // Thread-safe: the generation in progress (if any) ends after its current token.
  void cancel() { cancel_ = true; }
  // Thread-safe: the ablation in progress (if any) stops before its next batch.
  void cancelAblation() { cancelAblation_ = true; }
  // Called by the GUI thread as it queues an ablation, so a cancel right after it counts.
  void armAblation() { cancelAblation_ = false; }
  // Thread-safe, called by the GUI thread as it queues what-if evaluation `request`: the one
  // running (if any) stops before its next batch and those queued before are skipped, since
  // only the newest edit's loss is shown. Both answer failed() ("cancelled").
  void supersedeWhatIf(int request) {
    latestWhatIf_ = request;
    whatIfStale_ = true;
  }

 public slots:
  void configure(const QString& device, int threads);
  void querySystem();
  // trained: with the run's trained model even when it has a what-if edit (compare mode).
  void generate(int request, const QString& runDir, const QString& prompt, const hsm::GenerateOptions& options,
                bool trained = false);
  void unload(const QString& runDir);
  // Matrices and indicators of every layer for a prompt (Session::diagnose, at most the context).
  void diagnose(int request, const QString& runDir, const QString& prompt);
  // The learned mixer weights of every layer (Session::mixer_weights), as trained (what-if
  // edits left out: the Weights view draws them over these).
  void mixerWeights(int request, const QString& runDir);
  // Logit lens and rollout (Session::probe); with generated ids, of <|endoftext|>, the prompt's
  // tokens and those ids, as generate() fed the model (Session::probe_tokens).
  void probe(int request, const QString& runDir, const QString& prompt, const QVector<int>& generated);
  // Importance by ablation on the validation split (Session::ablate), of the run's model with
  // `edits` (what-if: the GUI's edits of that run, carried with the request).
  void ablate(int request, const QString& runDir, const QString& dataPath, const QString& windows, int maxWindows,
              const hsm::WhatIf& edits = {});
  // What-if (issue 23): keeps an edited copy of the run's model (Session::edited) next to the
  // loaded one; generate, diagnose and probe for that run use it from now on (ablate and
  // evaluateWhatIf carry their edits with them; mixerWeights gives the trained weights). An
  // empty WhatIf drops it (Reset).
  void setWhatIf(int request, const QString& runDir, const hsm::WhatIf& edits);
  // Validation loss of the trained model (cached per corpus and windows) and of the copy with
  // `edits` (which become the run's edits on this worker, as setWhatIf would make them).
  void evaluateWhatIf(int request, const QString& runDir, const QString& dataPath, const QString& windows,
                      int maxWindows, const hsm::WhatIf& edits);
  // The edited copy written as a new run folder (Session::save_as).
  void saveWhatIf(int request, const QString& runDir, const QString& newDir);

 signals:
  void system(const hsm::SystemInfo& info, const QString& deviceDescription);
  void token(int request, const hsm::GeneratedToken& token);
  void generated(int request, const hsm::GenerationResult& result);
  void failed(int request, const QString& message);
  void diagnosed(int request, const hsm::Diagnosis& diagnosis);
  void weights(int request, const std::vector<hsm::MixerWeights>& layers);
  void probed(int request, const hsm::Probe& probe);
  void ablationProgress(int request, const QString& stage, double fraction);
  void ablated(int request, const hsm::AblationReport& report);
  void whatIfApplied(int request);
  void whatIfEvaluated(int request, const studio::WhatIfEvaluation& evaluation);
  void whatIfSaved(int request, const QString& newDir);

 private:
  struct Loaded {
    std::unique_ptr<hsm::Session> session;
    qint64 stamp = 0;  // model.safetensors' modification time when loaded
    hsm::WhatIf edits;
    std::unique_ptr<hsm::Session> edited;            // session->edited(edits); null without edits
    std::map<std::string, hsm::EvalResult> trained;  // the trained model's loss per CachedEvalSet::key
  };
  Loaded& loaded(const QString& runDir);
  // Makes `edits` the run's what-if (a new edited copy only when they changed; none when empty).
  void useEdits(Loaded& l, const hsm::WhatIf& edits);
  // The windows an evaluation of `s` scores (Session::eval_set), read once per corpus (as it is
  // on disk now), split, layout, window count, tokenizer and context, through the token cache
  // that training fills: each what-if edit and each ablation is then scored without reading
  // or encoding the corpus again, and runs trained with one tokenizer share their sets.
  // The key names the corpus's state: the trained model's loss is cached under it.
  struct CachedEvalSet {
    std::string key;
    hsm::EvalSet set;
  };
  const CachedEvalSet& evalSet(hsm::Session& s, const QString& dataPath, const hsm::EvalOptions& options);
  std::deque<CachedEvalSet> evalSets_;  // the most recently used first
  static constexpr size_t kEvalSetsKept = 4;
  // The run's model as the views see it: the what-if copy when there is one.
  hsm::Session& session(const QString& runDir);
  std::map<QString, Loaded> sessions_;
  std::shared_ptr<ModelStore> models_;
  std::string device_ = "auto";
  int threads_ = 0;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> cancelAblation_{false};
  std::atomic<int> latestWhatIf_{0};
  std::atomic<bool> whatIfStale_{false};
};

}  // namespace studio
