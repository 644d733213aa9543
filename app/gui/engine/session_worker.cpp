#include "gui/engine/session_worker.h"
#include "hsm/errors.h"
#include "hsm/tokenizer.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>

namespace studio {

SessionWorker::SessionWorker(QObject* parent) : QObject(parent) { register_engine_types(); }

SessionWorker::~SessionWorker() = default;

void SessionWorker::configure(const QString& device, int threads) {
  const std::string d = sstr(device.isEmpty() ? QStringLiteral("auto") : device);
  if (d != device_) sessions_.clear();  // reload on the new device
  device_ = d;
  threads_ = hsm::set_cpu_threads(threads);
}

void SessionWorker::querySystem() {
  QString description;
  try {
    description = qstr(hsm::describe_device(device_, threads_));
  } catch (const std::exception& e) {
    description = QStringLiteral("device '%1' unavailable: %2").arg(qstr(device_), QString::fromStdString(hsm::error_text(e)));
  }
  emit system(hsm::system_info(), description);
}

hsm::Session& SessionWorker::session(const QString& runDir) {
  const QString key = QDir(runDir).absolutePath();
  const qint64 stamp = QFileInfo(key + "/model.safetensors").lastModified().toMSecsSinceEpoch();
  auto it = sessions_.find(key);
  if (it == sessions_.end() || it->second.stamp != stamp) {
    Loaded loaded{hsm::Session::open(sstr(key), device_), stamp};
    it = sessions_.insert_or_assign(key, std::move(loaded)).first;
  }
  return *it->second.session;
}

void SessionWorker::generate(int request, const QString& runDir, const QString& prompt,
                             const hsm::GenerateOptions& options) {
  cancel_ = false;
  try {
    hsm::Session& s = session(runDir);
    const hsm::GenerationResult result = s.generate(sstr(prompt), options, [&](const hsm::GeneratedToken& t) {
      emit token(request, t);
      return !cancel_.load();
    });
    emit generated(request, result);
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::diagnose(int request, const QString& runDir, const QString& prompt) {
  try {
    const hsm::Diagnosis d = session(runDir).diagnose(sstr(prompt));
    emit diagnosed(request, d);
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::mixerWeights(int request, const QString& runDir) {
  try {
    const std::vector<hsm::MixerWeights> w = session(runDir).mixer_weights();
    emit weights(request, w);
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::probe(int request, const QString& runDir, const QString& prompt, const QVector<int>& generated) {
  try {
    hsm::Session& s = session(runDir);
    if (generated.isEmpty()) {
      emit probed(request, s.probe(sstr(prompt)));
      return;
    }
    std::vector<int32_t> ids = {s.tokenizer().end_of_text_id()};  // generate() starts a story
    for (int32_t id : s.tokenizer().encode(sstr(prompt))) ids.push_back(id);
    ids.insert(ids.end(), generated.begin(), generated.end());
    emit probed(request, s.probe_tokens(std::move(ids)));
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::ablate(int request, const QString& runDir, const QString& dataPath, const QString& windows,
                           int maxWindows) {
  try {
    hsm::EvalOptions options;
    options.windows = sstr(windows);
    options.max_windows = maxWindows;
    options.cancel = &cancelAblation_;
    options.progress = [&](const std::string& stage, double f) { emit ablationProgress(request, qstr(stage), f); };
    emit ablated(request, session(runDir).ablate(sstr(dataPath), options));
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::unload(const QString& runDir) { sessions_.erase(QDir(runDir).absolutePath()); }

}  // namespace studio
