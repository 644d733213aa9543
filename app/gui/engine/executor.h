#pragma once
// One engine thread and the calls queued on it (docs/architecture.md, "Threads"). Each call
// answers its caller alone, with a typed reply, as Qt's QFuture and QNetworkReply do: a view
// queues `call<T>(runDir, f)`, where f runs on the engine thread with the run's loaded
// hsm::Model and returns a T, and continues with `.then(this, ...)` on the GUI thread;
// nothing is broadcast to other views and nothing is filtered by request id. A call that
// streams tokens or reports progress gets a Reply<T>: the same future plus a CallFeed.
// A new engine call in the studio is therefore one lambda in the view that wants it (the
// engine method it calls is the engine's two files); this file and EngineHost stay as they are.
#include <QFuture>
#include <QObject>
#include <QPromise>
#include <QString>
#include <QThread>
#include <functional>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "gui/engine_types.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/model.h"

namespace studio {

class ModelStore;
class WhatIfs;
struct ExecutorState;

// How an engine call failed: the engine's one-line message, and whether it was cancelled.
// A continuation takes it with `.onFailed(this, [](const CallFailed& e) { ... })`.
class CallFailed : public std::runtime_error {
 public:
  CallFailed(const QString& message, bool cancelled);
  QString message() const { return QString::fromStdString(what()); }
  bool cancelled() const { return cancelled_; }

 private:
  bool cancelled_;
};

// What a streaming call reports while it runs (its signals arrive on the GUI thread), and the
// flag that asks it to stop. Shared by the caller's Reply and the call on the engine thread.
class CallFeed : public QObject {
  Q_OBJECT
 public:
  void cancel() { cancelled_ = true; }
  const hsm::CancelFlag* cancelFlag() const { return &cancelled_; }

 signals:
  void token(const hsm::GeneratedToken& token);
  void progress(const QString& stage, double fraction);

 private:
  hsm::CancelFlag cancelled_{false};
};

// The reply of a streaming call: exactly one result or one CallFailed (result()), tokens and
// progress before it (feed()), and cancel(). What a cancelled call answers is the call's own:
// a generation its tokens so far, an evaluation CallFailed with cancelled() true.
template <class T>
class Reply {
 public:
  Reply() = default;
  Reply(QFuture<T> result, std::shared_ptr<CallFeed> feed) : result_(std::move(result)), feed_(std::move(feed)) {}
  QFuture<T>& result() { return result_; }
  CallFeed* feed() const { return feed_.get(); }
  void cancel() const {
    if (feed_) feed_->cancel();
  }
  bool isRunning() const { return feed_ && !result_.isFinished(); }

 private:
  QFuture<T> result_;
  std::shared_ptr<CallFeed> feed_;
};

// What a call sees on its engine thread. The models are loaded once per run folder and
// checkpoint and shared by both executors (ModelStore); the what-if edit is the run's one
// (WhatIfs), applied once and shared too.
class CallContext {
 public:
  const QString& runDir() const { return runDir_; }
  // The run's model as the views show it: with the run's what-if edit when it has one.
  std::shared_ptr<const hsm::Model> model() const;
  // The run's trained model, without its edit (the Weights view's bars, "compare with trained").
  std::shared_ptr<const hsm::Model> trained() const;
  // The edit model() carries (empty: none).
  hsm::WhatIf edits() const;
  // Raised by Reply::cancel (null for a plain call: it cannot be stopped once begun).
  const hsm::CancelFlag* cancelFlag() const { return feed_ ? feed_->cancelFlag() : nullptr; }
  bool cancelled() const { return feed_ && feed_->cancelFlag()->load(); }
  void progress(const std::string& stage, double fraction) const;
  // The device models load on and the CPU threads (Executor::configure).
  std::string device() const;
  int threads() const;
  void token(const hsm::GeneratedToken& token) const;
  // The windows an evaluation of the run scores (Evaluator::read), read once per corpus state,
  // split, layout, window count, tokenizer and context on this thread and reused, so each
  // what-if edit and each ablation is scored without reading the corpus again.
  hsm::EvalSet evalSet(const QString& dataPath, const hsm::EvalOptions& options) const;
  // The trained model's loss on evalSet(dataPath, options), computed once per set.
  hsm::EvalResult trainedLoss(const QString& dataPath, const hsm::EvalOptions& options) const;

 private:
  friend class Executor;
  CallContext(ExecutorState& state, QString runDir, CallFeed* feed)
      : state_(state), runDir_(std::move(runDir)), feed_(feed) {}
  ExecutorState& state_;
  QString runDir_;
  CallFeed* feed_;
};

class Executor : public QObject {
  Q_OBJECT
 public:
  // name: the thread's name; models and whatIfs are shared with the other executor.
  Executor(const QString& name, std::shared_ptr<ModelStore> models, std::shared_ptr<WhatIfs> whatIfs,
           QObject* parent = nullptr);
  ~Executor() override;  // joins the thread (after the call under way returns)

  // Queues f(const CallContext&) -> T on the engine thread; calls run one after another in
  // the order queued. An exception of f becomes CallFailed. A future cancelled before its
  // call begins skips the call.
  template <class T, class F>
  QFuture<T> call(const QString& runDir, F f) {
    return queue<T>(runDir, nullptr, std::move(f));
  }
  // The same with a feed: f reports through CallContext::token / progress and checks
  // CallContext::cancelFlag.
  template <class T, class F>
  Reply<T> stream(const QString& runDir, F f) {
    std::shared_ptr<CallFeed> feed(new CallFeed, [](CallFeed* p) { p->deleteLater(); });  // the GUI thread's object
    feeds_.push_back(feed);
    QFuture<T> result = queue<T>(runDir, feed, std::move(f));
    return Reply<T>(std::move(result), std::move(feed));
  }

  // Device ("auto", "cpu", "cuda", "cuda:N") and CPU threads for models loaded from now on.
  void configure(const QString& device, int threads);
  // Calls queued and not yet answered on the GUI thread.
  bool isBusy() const { return pending_ > 0; }
  // Asks every streaming call queued or under way to stop (shutdown).
  void cancelAll();

 private:
  // The call runs on the engine thread; its answer is delivered on the GUI thread, in an event
  // queued after the feed's tokens and progress: a continuation attached right after call()
  // never runs before them (or before it is attached), and waitIdle() returns after it ran.
  template <class T, class F>
  QFuture<T> queue(const QString& runDir, std::shared_ptr<CallFeed> feed, F f) {
    auto promise = std::make_shared<QPromise<T>>();
    QFuture<T> future = promise->future();
    promise->start();
    post([promise, feed, runDir, f = std::move(f)](ExecutorState& state) mutable -> std::function<void()> {
      if (promise->isCanceled()) return [promise] { promise->finish(); };
      try {
        const CallContext context(state, runDir, feed.get());
        if constexpr (std::is_void_v<T>) {
          f(context);
          return [promise] { promise->finish(); };
        } else {
          auto result = std::make_shared<T>(f(context));
          return [promise, result] {
            promise->addResult(std::move(*result));
            promise->finish();
          };
        }
      } catch (const std::exception& e) {
        return [promise, error = failure(e)] {
          promise->setException(error);
          promise->finish();
        };
      }
    });
    return future;
  }
  static std::exception_ptr failure(const std::exception& e);
  // Runs job on the engine thread, then what it returns on the GUI thread.
  void post(std::function<std::function<void()>(ExecutorState&)> job);

  QThread thread_;
  QObject* worker_;                       // lives on thread_: the receiver of the queued jobs
  std::unique_ptr<ExecutorState> state_;  // used only on thread_
  int pending_ = 0;
  std::vector<std::weak_ptr<CallFeed>> feeds_;  // of the streaming calls, for cancelAll()
};

}  // namespace studio
