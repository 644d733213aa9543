#pragma once
// Owns the loaded models (hsm::Session) on the session thread: loading, generation and
// diagnosis happen there, one request after another, never on the GUI thread. Sessions
// are cached by run folder and reloaded when the folder's checkpoint changes.
#include <QObject>
#include <QString>
#include <QVector>
#include <atomic>
#include <map>
#include <memory>

#include "gui/engine_types.h"

namespace studio {

class SessionWorker : public QObject {
  Q_OBJECT
 public:
  explicit SessionWorker(QObject* parent = nullptr);
  ~SessionWorker() override;

  // Thread-safe: the generation in progress (if any) ends after its current token.
  void cancel() { cancel_ = true; }
  // Thread-safe: the ablation in progress (if any) stops before its next batch.
  void cancelAblation() { cancelAblation_ = true; }
  // Called by the GUI thread as it queues an ablation, so a cancel right after it counts.
  void armAblation() { cancelAblation_ = false; }

 public slots:
  void configure(const QString& device, int threads);
  void querySystem();
  void generate(int request, const QString& runDir, const QString& prompt, const hsm::GenerateOptions& options);
  void unload(const QString& runDir);
  // Matrices and indicators of every layer for a prompt (Session::diagnose, at most the context).
  void diagnose(int request, const QString& runDir, const QString& prompt);
  // The learned mixer weights of every layer (Session::mixer_weights).
  void mixerWeights(int request, const QString& runDir);
  // Logit lens and rollout (Session::probe); with generated ids, of <|endoftext|>, the prompt's
  // tokens and those ids, as generate() fed the model (Session::probe_tokens).
  void probe(int request, const QString& runDir, const QString& prompt, const QVector<int>& generated);
  // Importance by ablation on the validation split (Session::ablate).
  void ablate(int request, const QString& runDir, const QString& dataPath, const QString& windows, int maxWindows);

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

 private:
  hsm::Session& session(const QString& runDir);

  struct Loaded {
    std::unique_ptr<hsm::Session> session;
    qint64 stamp = 0;  // model.safetensors' modification time when loaded
  };
  std::map<QString, Loaded> sessions_;
  std::string device_ = "auto";
  int threads_ = 0;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> cancelAblation_{false};
};

}  // namespace studio
