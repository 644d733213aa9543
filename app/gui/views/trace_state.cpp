#include "gui/views/trace_state.h"

#include <QFileInfo>
#include <stdexcept>
#include <vector>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "hsm/tokenizer.h"

namespace studio {
namespace {

// The id of the one token `text` is (or " " + text, the same word inside a sentence).
int32_t answer_id(const hsm::Tokenizer& tokenizer, const std::string& text) {
  for (const std::string& t : {text, " " + text}) {
    const std::vector<int32_t> ids = tokenizer.encode(t);
    if (ids.size() == 1) return ids.front();
  }
  throw std::invalid_argument("the answer \"" + text + "\" is " + std::to_string(tokenizer.encode(text).size()) +
                              " tokens; give one token of the vocabulary (or leave it empty for the model's top)");
}

}  // namespace

TraceState::TraceState(EngineHost* engine, QObject* parent) : QObject(parent), engine_(engine) {}

void TraceState::begin() {
  cancelled_ = false;
  error_.clear();
}

void TraceState::start(int column, const QString& runDir, const TraceAsk& ask) {
  const auto i = static_cast<size_t>(column);
  has_[i] = false;
  runs_[i] = runDir;
  progress_[i] = 0;
  ++running_;
  // The analysis executor: seconds of patching never hold up a generation or a diagnosis.
  replies_[i] = engine_->analysis().stream<hsm::Trace>(runDir, [ask](const CallContext& c) {
    const hsm::Tracer tracer(c.model());
    hsm::TraceRequest r = ask.task ? tracer.task_request(ask.example) : tracer.text_request(ask.clean, ask.corrupt);
    if (!ask.task) {
      r.answer_position = ask.position;
      if (!ask.answer.empty()) r.answer_token = answer_id(c.model()->tokenizer(), ask.answer);
    }
    r.routes = true;
    return tracer.trace(
        r, [&c](double f) { c.progress("trace", f); }, c.cancelFlag());
  });
  connect(replies_[i].feed(), &CallFeed::progress, this, [this, i](const QString&, double f) {
    progress_[i] = f;
    emit progressed();
  });
  replies_[i]
      .result()
      .then(this,
            [this, column, i, runDir](const hsm::Trace& t) {
              replies_[i] = {};
              progress_[i] = 1;
              // A trace of a run left meanwhile is not kept; one that finished as Cancel was pressed is.
              if (runDir == runs_[i]) {
                traces_[i] = t;
                has_[i] = true;
                emit traced(column);
              }
              finishOne();
            })
      .onFailed(this, [this, column, i, runDir](const CallFailed& e) {
        replies_[i] = {};
        if (e.cancelled()) cancelled_ = true;  // the engine stopped it
        if (runDir == runs_[i]) {
          if (!e.cancelled() && error_.isEmpty())
            error_ = tr("%1: %2").arg(QFileInfo(runDir).fileName(), e.message());  // the run's name
          emit failed(column, runDir, e.cancelled());
        }
        finishOne();
      });
}

void TraceState::finishOne() {
  if (--running_ > 0) {
    emit progressed();
    return;
  }
  running_ = 0;
  emit finished();
}

int TraceState::progressPerMille() const {
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < kColumns; ++i)
    if (replies_[i].feed()) sum += progress_[i], ++n;
  return n > 0 ? static_cast<int>(1000 * sum / n) : -1;
}

void TraceState::cancel() {
  for (const Reply<hsm::Trace>& r : replies_) r.cancel();
}

void TraceState::dropTraces() {
  for (size_t i = 0; i < kColumns; ++i) {
    has_[i] = false;
    traces_[i] = {};
    runs_[i].clear();
  }
}

}  // namespace studio
