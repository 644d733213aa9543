#include "gui/views/trace_state.h"

#include <QFileInfo>
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "hsm/model.h"
#include "hsm/run_folder.h"
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

// What a record of traces.jsonl shows as a trace: its exact maps and the routes it kept (pruned
// at hsm::kTraceRouteThreshold when it was recorded); no attribution.
hsm::Trace trace_of_record(const hsm::TraceRecord& r) {
  hsm::Trace t;
  t.clean = r.clean;
  t.corrupt = r.corrupt;
  t.clean_labels = r.clean_labels;
  t.corrupt_labels = r.corrupt_labels;
  t.corrupted_positions = r.corrupted_positions;
  t.layers = r.layers;
  t.positions = r.positions;
  t.answer_position = r.answer_position;
  t.answer_token = r.answer_token;
  t.answer_label = r.answer_label;
  t.clean_logprob = r.clean_logprob;
  t.corrupt_logprob = r.corrupt_logprob;
  t.exact = r.exact;
  t.no_effect = r.no_effect;
  t.agreement = std::numeric_limits<double>::quiet_NaN();
  t.exact_seconds = r.seconds;
  t.routes.tokens = r.clean;
  t.routes.labels = r.clean_labels;
  t.routes.layers = r.layers;
  t.routes.positions = r.positions;
  t.routes.answer_position = r.answer_position;
  t.routes.edges = r.routes;
  return t;
}

TraceHistory read_history(const QString& runDir) {
  TraceHistory h;
  h.run = runDir;
  const std::string dir = runDir.toStdString();
  hsm::TraceLogReader reader(dir);
  std::map<int64_t, hsm::TraceRecord> by_step;  // a step recorded twice: the later line
  for (hsm::TraceRecord& r : reader.poll()) by_step[r.step] = std::move(r);
  if (!reader.problems().empty())
    h.problem = QString::fromStdString(reader.problems().front()) +
                (reader.skipped() > 1 ? QObject::tr(" (and %1 more)").arg(reader.skipped() - 1) : QString());
  for (auto& [step, r] : by_step) h.records.push_back(std::move(r));
  h.formation = hsm::formation(h.records);
  h.kept = hsm::RunFolder(dir).kept_steps();
  std::set<int64_t> steps(h.kept.begin(), h.kept.end());
  for (const hsm::TraceRecord& r : h.records) steps.insert(r.step);
  h.steps.assign(steps.begin(), steps.end());
  return h;
}

}  // namespace

const hsm::TraceRecord* TraceHistory::record(int64_t step) const {
  auto it = std::lower_bound(records.begin(), records.end(), step,
                             [](const hsm::TraceRecord& r, int64_t s) { return r.step < s; });
  return it != records.end() && it->step == step ? &*it : nullptr;
}

bool TraceHistory::keeps(int64_t step) const { return std::binary_search(kept.begin(), kept.end(), step); }

TraceState::TraceState(EngineHost* engine, QObject* parent) : QObject(parent), engine_(engine) {}

void TraceState::begin() {
  cancelled_ = false;
  error_.clear();
}

void TraceState::start(int column, const QString& runDir, const TraceAsk& ask) {
  const auto i = static_cast<size_t>(column);
  has_[i] = false;
  runs_[i] = runDir;
  steps_[i] = ask.step;
  recorded_[i] = false;
  progress_[i] = 0;
  ++running_;
  // The analysis executor: seconds of patching never hold up a generation or a diagnosis.
  replies_[i] = engine_->analysis().stream<hsm::Trace>(runDir, [ask](const CallContext& c) {
    // A step: the model as it was then, loaded for this trace (no what-if edit).
    const hsm::Tracer tracer(ask.step >= 0 ? hsm::Model::load(c.runDir().toStdString(), c.device(), ask.step)
                                           : c.model());
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
            [this, column, i, runDir, step = ask.step](const hsm::Trace& t) {
              replies_[i] = {};
              progress_[i] = 1;
              // A trace of a run left meanwhile (or of a step since shown from its record) is not
              // kept; one that finished as Cancel was pressed is.
              if (runDir == runs_[i] && !recorded_[i] && step == steps_[i]) {
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

void TraceState::showRecord(int column, const QString& runDir, const hsm::TraceRecord& record) {
  const auto i = static_cast<size_t>(column);
  traces_[i] = trace_of_record(record);
  runs_[i] = runDir;
  steps_[i] = record.step;
  recorded_[i] = true;
  has_[i] = true;
  emit traced(column);
}

void TraceState::forget(int column) {
  const auto i = static_cast<size_t>(column);
  has_[i] = false;
  traces_[i] = {};
  steps_[i] = -1;
  recorded_[i] = false;
}

void TraceState::loadHistory(int column, const QString& runDir) {
  const auto i = static_cast<size_t>(column);
  historyRuns_[i] = runDir;
  if (runDir.isEmpty()) {
    histories_[i] = {};
    emit historyLoaded(column);
    return;
  }
  ++loading_;
  // On the analysis executor: a long log is read and parsed off the GUI thread (no model loaded).
  engine_->analysis()
      .call<TraceHistory>(runDir, [](const CallContext& c) { return read_history(c.runDir()); })
      .then(this,
            [this, column, i, runDir](const TraceHistory& h) {
              --loading_;
              if (runDir != historyRuns_[i]) return;
              histories_[i] = h;
              emit historyLoaded(column);
            })
      .onFailed(this, [this, column, i, runDir](const CallFailed& e) {
        --loading_;
        if (runDir != historyRuns_[i]) return;
        histories_[i] = {};
        histories_[i].run = runDir;
        histories_[i].problem = e.message();
        emit historyLoaded(column);
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
    steps_[i] = -1;
    recorded_[i] = false;
  }
}

}  // namespace studio
