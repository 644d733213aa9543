#pragma once
// What the Trace view (trace_view.h) holds and asks the engine, apart from its widgets
// (docs/architecture.md, "Add a view": state and widgets): the traces of the current run and
// of the run beside it, the runs they are of, and the traces under way with their progress,
// failures and Cancel. It draws nothing: the view draws what it holds when it says so.
#include <QObject>
#include <QString>
#include <array>
#include <string>

#include "gui/engine/executor.h"
#include "hsm/formation.h"
#include "hsm/trace.h"

namespace studio {

class EngineHost;

// What a trace asks: a text run's clean and corrupted prompts and its answer (the position
// whose next token, -1 the last; the token as text, empty the clean run's most likely), or a
// task run's test example; of the model as it was at `step` (a snapshot or a kept checkpoint,
// hsm::RunFolder::model_at; -1: the newest checkpoint, with the run's what-if edit).
struct TraceAsk {
  bool task = false;
  std::string clean, corrupt;
  int position = -1;
  std::string answer;
  int example = 0;
  int64_t step = -1;
};

// What a run recorded while it trained (issue 67, hsm/formation.h): the traces of its validations
// (RUN/traces.jsonl) and the steps it keeps a model of; the Trace view's slider moves over both.
struct TraceHistory {
  QString run;
  std::vector<hsm::TraceRecord> records;  // by step, one a step
  hsm::Formation formation;               // of the records (hsm::formation)
  std::vector<int64_t> kept;              // snapshots and checkpoints (RunFolder::kept_steps)
  std::vector<int64_t> steps;             // the records' and the kept steps, ascending
  QString problem;                        // the log could not be read (or lines were skipped)
  const hsm::TraceRecord* record(int64_t step) const;
  bool keeps(int64_t step) const;
};

class TraceState : public QObject {
  Q_OBJECT
 public:
  static constexpr int kColumns = 2;  // 0: the current run, 1: the run compared with it

  explicit TraceState(EngineHost* engine, QObject* parent = nullptr);

  // A new Trace: the failures and Cancel of the last one forgotten.
  void begin();
  // Traces `runDir` for column `column` on the analysis executor: progressed while it runs,
  // then traced or failed, and finished once every trace asked for has answered.
  void start(int column, const QString& runDir, const TraceAsk& ask);
  void cancel();  // the traces under way stop between layers
  bool isTracing() const { return running_ > 0; }
  // The mean progress of the traces under way in thousandths; -1 when none is.
  int progressPerMille() const;
  bool cancelled() const { return cancelled_; }  // a trace of the last Trace was stopped by Cancel
  QString error() const { return error_; }       // the first failure of the last Trace (empty: none)

  bool hasTrace(int column) const { return has_[static_cast<size_t>(column)]; }
  const hsm::Trace& trace(int column) const { return traces_[static_cast<size_t>(column)]; }
  QString traceRun(int column) const { return runs_[static_cast<size_t>(column)]; }
  // The step of the model column c's trace is of (-1: the newest checkpoint), and whether it is
  // a record of traces.jsonl (made while the run trained: exact maps and routes, no attribution).
  int64_t traceStep(int column) const { return steps_[static_cast<size_t>(column)]; }
  bool traceRecorded(int column) const { return recorded_[static_cast<size_t>(column)]; }
  // Column c shows `record` of `runDir` (no engine call: the record holds the maps); a trace of
  // it under way is no longer kept.
  void showRecord(int column, const QString& runDir, const hsm::TraceRecord& record);
  // Column c shows nothing (its run kept): a step without a record is chosen.
  void forget(int column);

  // Reads column c's run's traces.jsonl and kept steps on the analysis executor; history(c) is
  // of it once historyLoaded(c) says so (a read of a run left meanwhile is not kept).
  void loadHistory(int column, const QString& runDir);
  const TraceHistory& history(int column) const { return histories_[static_cast<size_t>(column)]; }
  bool isLoadingHistory() const { return loading_ > 0; }
  // Every trace and the runs they are of forgotten (the view follows another run).
  void dropTraces();
  // Column 0 is of `dir` now: a trace of another run that answers is not kept.
  void setCurrentRun(const QString& dir) { runs_[0] = dir; }

 signals:
  void progressed();
  void traced(int column);  // trace(column) is of the run it was asked for
  // A trace of the column's run failed or was cancelled (one of a run left meanwhile is not said).
  void failed(int column, const QString& runDir, bool cancelled);
  void finished();  // the traces asked for answered (or failed, or were cancelled)
  void historyLoaded(int column);

 private:
  void finishOne();

  EngineHost* engine_;
  std::array<hsm::Trace, kColumns> traces_;
  std::array<QString, kColumns> runs_;
  std::array<bool, kColumns> has_{};
  std::array<int64_t, kColumns> steps_{-1, -1};
  std::array<bool, kColumns> recorded_{};
  std::array<TraceHistory, kColumns> histories_;
  std::array<QString, kColumns> historyRuns_;  // the runs whose history was asked for last
  int loading_ = 0;
  std::array<Reply<hsm::Trace>, kColumns> replies_;  // the traces under way (none: no feed)
  std::array<double, kColumns> progress_{};
  int running_ = 0;     // traces asked for and not yet answered
  QString error_;
  bool cancelled_ = false;
};

}  // namespace studio
