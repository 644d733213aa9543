#include "gui/engine/executor.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <algorithm>
#include <deque>
#include <map>

#include "gui/engine/model_store.h"
#include "gui/engine/thread_priority.h"
#include "gui/engine/what_ifs.h"
#include "hsm/cpu_threads.h"
#include "hsm/dataset.h"
#include "hsm/errors.h"
#include "hsm/run_folder.h"
#include "hsm/tokenizer.h"

namespace studio {

// What one engine thread keeps between calls; touched only on that thread.
struct ExecutorState {
  std::shared_ptr<ModelStore> models;
  std::shared_ptr<WhatIfs> whatIfs;
  std::string device = "auto";
  int threads = 0;  // CPU threads in use (hsm::set_cpu_threads)
  struct Loaded {
    qint64 stamp = 0;  // model.safetensors' modification time when loaded
    std::shared_ptr<const hsm::Model> model;
    std::map<std::string, hsm::EvalResult> trainedLoss;  // per CachedEvalSet::key
  };
  std::map<QString, Loaded> loaded;  // by absolute run folder
  struct CachedEvalSet {
    std::string key;  // names the corpus's state, split, layout, window count, tokenizer, context
    hsm::EvalSet set;
  };
  std::deque<CachedEvalSet> evalSets;  // the most recently used first
  static constexpr size_t kEvalSetsKept = 4;

  // The run's model as loaded now: reloaded when its checkpoint changed (it trains on).
  Loaded& run(const QString& runDir) {
    const QString key = QDir(runDir).absolutePath();
    const qint64 stamp = QFileInfo(QString::fromStdString(hsm::RunFolder(key.toStdString()).weights)).lastModified().toMSecsSinceEpoch();
    auto it = loaded.find(key);
    if (it == loaded.end() || it->second.stamp != stamp)
      it = loaded.insert_or_assign(key, Loaded{stamp, models->model(sstr(key), stamp, device), {}}).first;
    return it->second;
  }

  const CachedEvalSet& evalSet(const std::shared_ptr<const hsm::Model>& model, const QString& dataPath,
                               const hsm::EvalOptions& options) {
    const std::string path = sstr(dataPath);
    const std::string key = hsm::corpus_digest(path, options.cache_dir) + '\n' + path + '\n' + options.split + '\n' +
                            options.windows + '\n' + std::to_string(options.max_windows) + '\n' +
                            model->tokenizer().hash() + '\n' + std::to_string(model->config().context);
    auto it = std::find_if(evalSets.begin(), evalSets.end(), [&](const CachedEvalSet& c) { return c.key == key; });
    if (it != evalSets.end()) {
      CachedEvalSet found = std::move(*it);
      evalSets.erase(it);
      evalSets.push_front(std::move(found));
    } else {
      evalSets.push_front({key, hsm::Evaluator(model).read(path, options)});
      if (evalSets.size() > kEvalSetsKept) evalSets.pop_back();
    }
    return evalSets.front();
  }
};

CallFailed::CallFailed(const QString& message, bool cancelled)
    : std::runtime_error(message.toStdString()), cancelled_(cancelled) {}

std::shared_ptr<const hsm::Model> CallContext::model() const {
  return state_.whatIfs->apply(runDir_, state_.run(runDir_).model);
}

std::shared_ptr<const hsm::Model> CallContext::trained() const { return state_.run(runDir_).model; }

hsm::WhatIf CallContext::edits() const {
  hsm::WhatIf applied;
  state_.whatIfs->apply(runDir_, state_.run(runDir_).model, &applied);
  return applied;
}

// Emitted on the GUI thread (the feed's), in events queued from here: a view that connects to
// the feed right after the call returned misses none, and they come before the answer.
void CallContext::progress(const std::string& stage, double fraction) const {
  if (feed_)
    QMetaObject::invokeMethod(
        feed_, [feed = feed_, stage = qstr(stage), fraction] { emit feed->progress(stage, fraction); },
        Qt::QueuedConnection);
}

void CallContext::token(const hsm::GeneratedToken& token) const {
  if (feed_)
    QMetaObject::invokeMethod(
        feed_, [feed = feed_, token] { emit feed->token(token); }, Qt::QueuedConnection);
}

std::string CallContext::device() const { return state_.device; }
int CallContext::threads() const { return state_.threads; }

hsm::EvalSet CallContext::evalSet(const QString& dataPath, const hsm::EvalOptions& options) const {
  return state_.evalSet(trained(), dataPath, options).set;  // a copy: shares the windows
}

hsm::EvalResult CallContext::trainedLoss(const QString& dataPath, const hsm::EvalOptions& options) const {
  ExecutorState::Loaded& run = state_.run(runDir_);
  const ExecutorState::CachedEvalSet scored = state_.evalSet(run.model, dataPath, options);
  auto cached = run.trainedLoss.find(scored.key);
  if (cached == run.trainedLoss.end())
    cached = run.trainedLoss.emplace(scored.key, hsm::Evaluator(run.model).evaluate(scored.set, options)).first;
  return cached->second;
}

Executor::Executor(const QString& name, std::shared_ptr<ModelStore> models, std::shared_ptr<WhatIfs> whatIfs,
                   QObject* parent)
    : QObject(parent), worker_(new QObject), state_(std::make_unique<ExecutorState>()) {
  register_engine_types();
  state_->models = std::move(models);
  state_->whatIfs = std::move(whatIfs);
  thread_.setObjectName(name);
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  // The engine threads yield the CPU to the GUI thread (thread_priority.h).
  connect(
      &thread_, &QThread::started, worker_, [] { lower_current_thread_priority(); }, Qt::DirectConnection);
  thread_.start();
}

Executor::~Executor() {
  thread_.quit();
  thread_.wait();
}

std::exception_ptr Executor::failure(const std::exception& e) {
  const bool cancelled = dynamic_cast<const hsm::Cancelled*>(&e) != nullptr;
  return std::make_exception_ptr(CallFailed(QString::fromStdString(hsm::error_text(e)), cancelled));
}

void Executor::cancelAll() {
  for (const std::weak_ptr<CallFeed>& f : feeds_)
    if (auto feed = f.lock()) feed->cancel();
}

void Executor::post(std::function<std::function<void()>(ExecutorState&)> job) {
  ++pending_;
  feeds_.erase(
      std::remove_if(feeds_.begin(), feeds_.end(), [](const std::weak_ptr<CallFeed>& f) { return f.expired(); }),
      feeds_.end());
  QMetaObject::invokeMethod(
      worker_,
      [this, job = std::move(job)] {
        std::function<void()> deliver = job(*state_);
        QMetaObject::invokeMethod(
            this,
            [this, deliver = std::move(deliver)] {
              --pending_;
              deliver();  // finishes the reply: its continuations on this thread run now
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
}

void Executor::configure(const QString& device, int threads) {
  post([d = sstr(device.isEmpty() ? QStringLiteral("auto") : device), threads](ExecutorState& state) {
    if (d != state.device) state.loaded.clear();  // reload on the new device
    state.device = d;
    state.threads = hsm::set_cpu_threads(threads);
    return std::function<void()>([] {});
  });
}

}  // namespace studio
