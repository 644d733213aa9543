#pragma once
// `hsm-studio --smoke`: a scripted, headless session that drives the real widgets as a
// user would (fill the Training view, Start, generate in the Playground while a second
// model trains, export a plot) and reports one JSON object, with the longest GUI stall
// measured by the event-loop heartbeat. Tests, benchmarks and reviewers use it.
//
// The studio's budget: the GUI thread never works longer than kBusyBudgetMs at a stretch
// (max_busy_ms), with the paper-size models too; the report says so per phase and names the
// slowest events (slowest_events) when it does not.
#include <QJsonObject>
#include <QString>
#include <functional>

namespace studio {

class MainWindow;

constexpr double kBusyBudgetMs = 50;

struct SmokeOptions {
  QString target;        // a run folder, a preset name or a model config JSON
  QString data;          // corpus to train on
  QString out;           // where runs and exports go (a fresh temporary folder by default)
  QString prompt = QStringLiteral("Once upon a time");
  int steps = 20;        // per trained run
  int batch = 8;
  int threads = 0;
  int max_tokens = 60;
  quint64 seed = 7;
  int timeout_s = 900;
  QString screenshots;   // a folder: PNGs of the start page and of every view
};

class SmokeDriver {
 public:
  SmokeDriver(MainWindow* window, SmokeOptions options);
  // Runs the session to the end (processing events); returns the report:
  // steps, generated_tokens, text, exports, weight_layers, diagnosed_layers, max_stall_ms,
  // traced_layers (and trace_error when the trace failed),
  // max_busy_ms (and both by phase), busy_budget_ms, slowest_events, mean_gap_ms, runs,
  // seconds, error: every phase that failed, "; " between them (null when none did).
  QJsonObject run();

 private:
  bool train(const QString& runDir, const QString& model, const QString& tokenizer, QString& error);
  bool waitFor(const std::function<bool()>& done, QString& error);
  void screenshot(const QString& name);
  void settle(int ms = 150);  // processes events for a while: lets a view paint
  static void runEventLoopFor(int ms);

  MainWindow* window_;
  SmokeOptions options_;
  qint64 deadlineMs_ = 0;
  qint64 stepsTrained_ = 0;
};

}  // namespace studio
