#pragma once
// `hsm-studio --smoke`: a scripted, headless session that drives the real widgets as a
// user would (fill the Training view, Start, generate in the Playground while a second
// model trains, export a plot) and reports one JSON object, with the longest GUI stall
// measured by the event-loop heartbeat. Tests, benchmarks and reviewers use it.
//
// The studio's budget: the GUI thread never works longer than kBusyBudgetMs at a stretch
// (max_busy_ms), with the paper-size models too; the report says so per phase and names the
// slowest events (slowest_events) when it does not.
#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>
#include <QString>
#include <functional>

namespace studio {

class MainWindow;
class StallMonitor;

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
  // What the session has found so far: the report's fields, and the runs it made.
  struct Session {
    QString out;         // where runs and exports go
    QString model;       // the first model's config (or preset), which the second run trains too
    QString source;      // the first run's folder
    QString second;      // the run trained while the first generates
    QString trainError;  // what the last failed training said
    QJsonArray exports, runs;
    QString text;
    int generated = 0;
    int weightLayers = 0, diagnosedLayers = 0;
    double labAccuracy = -1;  // the smoke lab's one cell (-1: not reached)
    int experimentRows = 0;   // the Experiments view's rows for the open runs
    int tracedLayers = 0;     // the Trace view's layers of the first run (0: no trace shown)
    QString traceError;       // what the engine refused of the trace
    QStringList failed;       // the phases that failed and the session went on past: each in "error"
    QString error;            // the phase the session stopped at
  };

  // The phases, in order (run() calls them through runPhases()); each false when the session
  // cannot go on, the reason in s_.error.
  bool runPhases();
  bool openWindow();
  bool firstModel();             // the given run folder, or one trained here
  bool noTrainingFailure();           // false, saying so, when the last training failed
  bool generateWhileTraining();  // a second run trains while the first generates
  bool showTraining();
  bool showArchitectureAndWeights();
  bool diagnose();
  bool probe();
  bool trace();
  bool lab();
  bool experiments();
  bool exportPlots();
  QJsonObject report(double seconds) const;
  void insertStalls(QJsonObject& report) const;

  bool train(const QString& runDir, const QString& model, const QString& tokenizer, QString& error);
  bool waitFor(const std::function<bool()>& done, QString& error);
  void screenshot(const QString& name);
  void settle(int ms = 150);  // processes events for a while: lets a view paint
  static void runEventLoopFor(int ms);

  MainWindow* window_;
  SmokeOptions options_;
  qint64 deadlineMs_ = 0;
  qint64 stepsTrained_ = 0;
  Session s_;
  StallMonitor* stalls_ = nullptr;  // while run() runs
};

}  // namespace studio
