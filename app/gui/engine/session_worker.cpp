#include "gui/engine/session_worker.h"
#include "gui/engine/model_store.h"
#include "hsm/dataset.h"
#include "hsm/errors.h"
#include "hsm/tokenizer.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <algorithm>

namespace studio {

SessionWorker::SessionWorker(std::shared_ptr<ModelStore> models, QObject* parent)
    : QObject(parent), models_(models ? std::move(models) : std::make_shared<ModelStore>()) {
  register_engine_types();
}

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

SessionWorker::Loaded& SessionWorker::loaded(const QString& runDir) {
  const QString key = QDir(runDir).absolutePath();
  const qint64 stamp = QFileInfo(key + "/model.safetensors").lastModified().toMSecsSinceEpoch();
  auto it = sessions_.find(key);
  if (it == sessions_.end() || it->second.stamp != stamp) {
    Loaded fresh;
    fresh.session = hsm::Session::over(models_->model(sstr(key), stamp, device_));
    fresh.stamp = stamp;
    // A new checkpoint of an edited run (it trains on): the same edits on the new weights.
    // (An edit the new weights refuse is dropped rather than failing every later request.)
    if (it != sessions_.end() && !it->second.edits.empty()) {
      try {
        fresh.edited = fresh.session->edited(it->second.edits);
        fresh.edits = it->second.edits;
      } catch (const std::invalid_argument&) {
      }
    }
    it = sessions_.insert_or_assign(key, std::move(fresh)).first;
  }
  return it->second;
}

const SessionWorker::CachedEvalSet& SessionWorker::evalSet(hsm::Session& s, const QString& dataPath, const hsm::EvalOptions& options) {
  const std::string path = sstr(dataPath);
  const std::string key = hsm::corpus_digest(path, options.cache_dir) + '\n' + path + '\n' + options.split + '\n' +
                          options.windows + '\n' + std::to_string(options.max_windows) + '\n' + s.tokenizer().hash() +
                          '\n' + std::to_string(s.config().context);
  auto it = std::find_if(evalSets_.begin(), evalSets_.end(), [&](const CachedEvalSet& c) { return c.key == key; });
  if (it != evalSets_.end()) {
    CachedEvalSet found = std::move(*it);
    evalSets_.erase(it);
    evalSets_.push_front(std::move(found));
  } else {
    evalSets_.push_front({key, s.eval_set(path, options)});
    if (evalSets_.size() > kEvalSetsKept) evalSets_.pop_back();
  }
  return evalSets_.front();
}

hsm::Session& SessionWorker::session(const QString& runDir) {
  Loaded& l = loaded(runDir);
  return l.edited ? *l.edited : *l.session;
}

void SessionWorker::generate(int request, const QString& runDir, const QString& prompt,
                             const hsm::GenerateOptions& options, bool trained) {
  cancel_ = false;
  try {
    hsm::Session& s = trained ? *loaded(runDir).session : session(runDir);
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
    // The trained weights even for an edited run: the Weights view draws its edits over them.
    const std::vector<hsm::MixerWeights> w = loaded(runDir).session->mixer_weights();
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

void SessionWorker::useEdits(Loaded& l, const hsm::WhatIf& edits) {
  if (l.edits == edits && (edits.empty() || l.edited)) return;
  l.edited.reset();
  l.edits = {};
  if (edits.empty()) return;
  l.edited = l.session->edited(edits);  // throws for an edit the model refuses: then none
  l.edits = edits;
}

void SessionWorker::ablate(int request, const QString& runDir, const QString& dataPath, const QString& windows,
                           int maxWindows, const hsm::WhatIf& edits) {
  try {
    Loaded& l = loaded(runDir);
    useEdits(l, edits);
    hsm::EvalOptions options;
    options.windows = sstr(windows);
    options.max_windows = maxWindows;
    options.cancel = &cancelAblation_;
    options.cache_dir = hsm::default_cache_dir();
    options.progress = [&](const std::string& stage, double f) { emit ablationProgress(request, qstr(stage), f); };
    hsm::Session& s = l.edited ? *l.edited : *l.session;
    const hsm::EvalSet set = evalSet(s, dataPath, options).set;  // a copy: shares the windows
    emit ablated(request, s.ablate(set, options));
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::setWhatIf(int request, const QString& runDir, const hsm::WhatIf& edits) {
  try {
    useEdits(loaded(runDir), edits);
    emit whatIfApplied(request);
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::evaluateWhatIf(int request, const QString& runDir, const QString& dataPath,
                                   const QString& windows, int maxWindows, const hsm::WhatIf& edits) {
  try {
    // Reset, then check: a newer request queued in between raises the flag again after this.
    whatIfStale_ = false;
    if (request != latestWhatIf_.load()) throw hsm::Cancelled();  // superseded before it began
    Loaded& l = loaded(runDir);
    useEdits(l, edits);
    hsm::EvalOptions options;
    options.windows = sstr(windows);
    options.max_windows = maxWindows;
    options.cache_dir = hsm::default_cache_dir();
    options.cancel = &whatIfStale_;
    const CachedEvalSet scored = evalSet(*l.session, dataPath, options);  // a copy: shares the windows
    const hsm::EvalSet& set = scored.set;
    WhatIfEvaluation out;
    auto cached = l.trained.find(scored.key);
    if (cached == l.trained.end()) cached = l.trained.emplace(scored.key, l.session->evaluate(set, options)).first;
    out.trained = cached->second;
    out.edits = l.edits;
    out.edited = l.edited ? l.edited->evaluate(set, options) : out.trained;
    emit whatIfEvaluated(request, out);
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::saveWhatIf(int request, const QString& runDir, const QString& newDir) {
  try {
    session(runDir).save_as(sstr(newDir));
    emit whatIfSaved(request, QDir(newDir).absolutePath());
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(hsm::error_text(e)));
  }
}

void SessionWorker::unload(const QString& runDir) { sessions_.erase(QDir(runDir).absolutePath()); }

}  // namespace studio
