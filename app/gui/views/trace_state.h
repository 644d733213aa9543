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
#include "hsm/trace.h"

namespace studio {

class EngineHost;

// What a trace asks: a text run's clean and corrupted prompts and its answer (the position
// whose next token, -1 the last; the token as text, empty the clean run's most likely), or a
// task run's test example.
struct TraceAsk {
  bool task = false;
  std::string clean, corrupt;
  int position = -1;
  std::string answer;
  int example = 0;
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

 private:
  void finishOne();

  EngineHost* engine_;
  std::array<hsm::Trace, kColumns> traces_;
  std::array<QString, kColumns> runs_;
  std::array<bool, kColumns> has_{};
  std::array<Reply<hsm::Trace>, kColumns> replies_;  // the traces under way (none: no feed)
  std::array<double, kColumns> progress_{};
  int running_ = 0;     // traces asked for and not yet answered
  QString error_;
  bool cancelled_ = false;
};

}  // namespace studio
