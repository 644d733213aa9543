#include "gui/engine/engine_host.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>

#include "gui/engine/model_store.h"
#include "gui/engine/thread_priority.h"
#include "gui/engine/training_worker.h"
#include "gui/engine/what_ifs.h"
#include "hsm/dataset.h"
#include "hsm/errors.h"
#include "hsm/prober.h"
#include "hsm/tokenizer.h"

namespace studio {

void register_engine_types() {
  static const bool once = [] {
    qRegisterMetaType<hsm::MetricRecord>();
    qRegisterMetaType<hsm::GeneratedToken>();
    qRegisterMetaType<hsm::GenerationResult>();
    qRegisterMetaType<hsm::TrainSummary>();
    qRegisterMetaType<hsm::RunSpec>();
    qRegisterMetaType<hsm::GenerateOptions>();
    qRegisterMetaType<hsm::SystemInfo>();
    qRegisterMetaType<hsm::Diagnosis>();
    qRegisterMetaType<std::vector<hsm::MixerWeights>>();
    qRegisterMetaType<hsm::Probe>();
    qRegisterMetaType<hsm::AblationReport>();
    qRegisterMetaType<hsm::WhatIf>();
    qRegisterMetaType<studio::WhatIfEvaluation>();
    return true;
  }();
  (void)once;
}

namespace {

// Queues `call` on `worker`'s thread. A lambda the compiler checks: a slot named by a string
// fails only at run time (and leaves the request counted as pending).
template <class Worker, class Call>
void post(Worker* worker, Call call) {
  QMetaObject::invokeMethod(worker, std::move(call), Qt::QueuedConnection);
}

}  // namespace

EngineHost::EngineHost(QObject* parent) : QObject(parent) {
  register_engine_types();
  trainingThread_.setObjectName(QStringLiteral("hsm-training"));
  trainer_ = new TrainingWorker;
  trainer_->moveToThread(&trainingThread_);
  connect(&trainingThread_, &QThread::finished, trainer_, &QObject::deleteLater);
  // One store of models and one of what-if edits for both executors: a run's model is loaded
  // once and edited once (model_store.h, what_ifs.h).
  auto models = std::make_shared<ModelStore>();
  whatIfs_ = std::make_shared<WhatIfs>();
  connect(whatIfs_.get(), &WhatIfs::changed, this, &EngineHost::whatIfChanged);
  interactive_ = new Executor(QStringLiteral("hsm-session"), models, whatIfs_, this);
  analysis_ = new Executor(QStringLiteral("hsm-analysis"), models, whatIfs_, this);

  connect(trainer_, &TrainingWorker::started, this, &EngineHost::trainingStarted);
  connect(trainer_, &TrainingWorker::metric, this, &EngineHost::trainingMetric);
  connect(trainer_, &TrainingWorker::progress, this, &EngineHost::trainingProgress);
  connect(trainer_, &TrainingWorker::log, this, &EngineHost::trainingLog);
  connect(trainer_, &TrainingWorker::weights, this, &EngineHost::trainingWeights);
  connect(trainer_, &TrainingWorker::paused, this, [this](bool p) {
    paused_ = p;
    emit trainingPaused(p);
    emit trainingStateChanged();
  });
  connect(trainer_, &TrainingWorker::finished, this, [this](const hsm::TrainSummary& s) {
    training_ = paused_ = false;
    emit trainingFinished(s);
    emit trainingStateChanged();
  });
  connect(trainer_, &TrainingWorker::failed, this, [this](const QString& dir, const QString& message) {
    training_ = paused_ = false;
    emit trainingFailed(dir, message);
    emit trainingStateChanged();
  });

  // The training thread yields the CPU to the GUI thread (thread_priority.h), as the
  // executors' threads do.
  connect(
      &trainingThread_, &QThread::started, trainer_, [] { lower_current_thread_priority(); }, Qt::DirectConnection);
  trainingThread_.start();
}

EngineHost::~EngineHost() {
  if (training_) trainer_->stop();
  interactive_->cancelAll();
  analysis_->cancelAll();
  trainingThread_.quit();
  trainingThread_.wait();
  delete interactive_;  // each joins its thread
  delete analysis_;
}

bool EngineHost::startTraining(const hsm::RunSpec& spec) {
  if (training_) return false;
  training_ = true;
  paused_ = false;
  trainingRunDir_ = qstr(spec.run_dir);
  post(trainer_, [w = trainer_, spec] { w->run(spec); });
  emit trainingStateChanged();
  return true;
}

void EngineHost::pauseTraining() {
  if (training_) trainer_->pause();
}

void EngineHost::resumeTraining() {
  if (training_) trainer_->resume();
}

void EngineHost::stopTraining() {
  if (training_) trainer_->stop();
}

Reply<hsm::GenerationResult> EngineHost::generate(const QString& runDir, const QString& prompt,
                                                  const hsm::GenerateOptions& options, bool trained) {
  return interactive_->stream<hsm::GenerationResult>(runDir, [prompt, options, trained](const CallContext& c) {
    return hsm::Generator(trained ? c.trained() : c.model())
        .run(sstr(prompt), options, [&](const hsm::GeneratedToken& t) {
          c.token(t);
          return !c.cancelled();
        });
  });
}

QFuture<hsm::Probe> EngineHost::probe(const QString& runDir, const QString& prompt, const QVector<int>& generated) {
  return interactive_->call<hsm::Probe>(runDir, [prompt, generated](const CallContext& c) {
    const std::shared_ptr<const hsm::Model> model = c.model();
    const hsm::Prober prober(model);
    if (generated.isEmpty()) return prober.probe(sstr(prompt));
    std::vector<int32_t> ids = {model->tokenizer().end_of_text_id()};  // generate() starts a story
    for (int32_t id : model->tokenizer().encode(sstr(prompt))) ids.push_back(id);
    ids.insert(ids.end(), generated.begin(), generated.end());
    return prober.probe_tokens(std::move(ids));
  });
}

namespace {
hsm::EvalOptions eval_options(const QString& windows, int maxWindows, const CallContext& c) {
  hsm::EvalOptions options;
  options.windows = sstr(windows);
  options.max_windows = maxWindows;
  options.cache_dir = hsm::default_cache_dir();
  options.cancel = c.cancelFlag();
  return options;
}
}  // namespace

Reply<hsm::AblationReport> EngineHost::ablate(const QString& runDir, const QString& dataPath, const QString& windows,
                                              int maxWindows) {
  return analysis_->stream<hsm::AblationReport>(runDir, [dataPath, windows, maxWindows](const CallContext& c) {
    hsm::EvalOptions options = eval_options(windows, maxWindows, c);
    options.progress = [&](const std::string& stage, double f) { c.progress(stage, f); };
    return hsm::Evaluator(c.model()).ablate(c.evalSet(dataPath, options), options);
  });
}

QFuture<void> EngineHost::setWhatIf(const QString& runDir, const hsm::WhatIf& edits) {
  whatIfs_->set(runDir, edits);
  // Applied now on the interactive thread (the refusal comes back here), once for every call.
  return interactive_->call<void>(runDir, [](const CallContext& c) { c.model(); });
}

hsm::WhatIf EngineHost::whatIf(const QString& runDir) const { return whatIfs_->edits(runDir); }

Reply<WhatIfEvaluation> EngineHost::evaluateWhatIf(const QString& runDir, const QString& dataPath,
                                                   const QString& windows, int maxWindows, bool evaluateAll) {
  whatIfEvaluation_.cancel();  // only the newest edit's loss is wanted
  whatIfEvaluation_ =
      analysis_->stream<WhatIfEvaluation>(runDir, [dataPath, windows, maxWindows, evaluateAll](const CallContext& c) {
        if (c.cancelled()) throw hsm::Cancelled();  // superseded before it began
        const hsm::EvalOptions options = eval_options(windows, maxWindows, c);
        WhatIfEvaluation out;
        if (evaluateAll) out.evaluation = c.trainedLoss(dataPath, eval_options(windows, 0, c));
        out.trained = c.trainedLoss(dataPath, options);
        const std::shared_ptr<const hsm::Model> edited = c.model();
        out.edits = c.edits();
        out.edited =
            out.edits.empty() ? out.trained : hsm::Evaluator(edited).evaluate(c.evalSet(dataPath, options), options);
        return out;
      });
  return whatIfEvaluation_;
}

QFuture<QString> EngineHost::saveWhatIf(const QString& runDir, const QString& newDir) {
  return interactive_->call<QString>(runDir, [newDir](const CallContext& c) {
    c.model()->save_as(sstr(newDir));
    return QDir(newDir).absolutePath();
  });
}

void EngineHost::configure(const QString& device, int threads) {
  interactive_->configure(device, threads);
  analysis_->configure(device, threads);
  using Info = std::pair<hsm::SystemInfo, QString>;
  interactive_
      ->call<Info>(QString(),
                   [](const CallContext& c) {
                     QString description;
                     try {
                       description = qstr(hsm::describe_device(c.device(), c.threads()));
                     } catch (const std::exception& e) {
                       description = QStringLiteral("device '%1' unavailable: %2")
                                         .arg(qstr(c.device()), QString::fromStdString(hsm::error_text(e)));
                     }
                     return Info{hsm::system_info(), description};
                   })
      .then(this, [this](const Info& info) { emit systemInfo(info.first, info.second); });
}

bool EngineHost::waitIdle(int timeoutMs) {
  QElapsedTimer timer;
  timer.start();
  while (training_ || interactive_->isBusy() || analysis_->isBusy()) {
    if (timer.elapsed() > timeoutMs) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return true;
}

}  // namespace studio
