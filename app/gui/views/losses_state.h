#pragma once
// What the Losses view (losses_view.h) holds and asks the engine, apart from its widgets
// (docs/architecture.md, "Add a view": state and widgets). The scores of the current run's
// validation windows token by token (Evaluator::score_tokens), then of every other open run with
// the same tokenizer on the same windows; a task run's test-set score; the top alternatives of
// the shown document's tokens; the scores as CSV. It draws nothing: the view draws what it holds
// when it says so.
#include <QMap>
#include <QObject>
#include <QString>
#include <QStringList>
#include <cmath>
#include <string>
#include <vector>

#include "gui/engine/executor.h"
#include "hsm/probe.h"
#include "hsm/tasks.h"
#include "hsm/token_scores.h"

namespace studio {

class EngineHost;
class RunList;
struct RunEntry;

// One run's scores and the text of each token of its vocabulary (for showing the documents).
struct LossScoring {
  hsm::TokenScores scores;
  std::vector<std::string> pieces;  // Tokenizer::piece of each id
  // The run's own evaluation on every window (run_evaluation.h), computed beside the scores
  // when fewer windows were scored and the run records none; window_count 0: not computed.
  hsm::EvalResult evaluation;
};

class LossesState : public QObject {
  Q_OBJECT
 public:
  LossesState(RunList* runs, EngineHost* engine, QObject* parent = nullptr);

  // Scores `run` on its trained windows of `data` (the first maxWindows, 0: all), then every
  // other open run with a checkpoint that reads text, on the same windows.
  void start(const RunEntry& run, const QString& data, int maxWindows);
  // A task run: its first test examples' answer accuracy and loss (taskScored or taskFailed).
  void startTask(const RunEntry& run);
  void cancel();
  // Forgets every score (cancelling what is under way).
  void clear();
  bool isScoring() const { return !scoring_.isEmpty() || taskScoring_; }

  QString scoredRun() const { return scoredRun_; }
  qint64 scoredStamp() const { return scoredStamp_; }
  // Whether the scores held are the current run's (or are being scored for it).
  bool following() const;
  bool hasScores() const { return scores_.contains(scoredRun_); }
  const hsm::TokenScores& scores() const;  // the scored run's
  const hsm::TokenScores* scoresOf(const QString& runDir) const;
  QStringList comparedRuns() const;          // the other runs scored on the same windows
  const QStringList& order() const { return order_; }  // the runs in the order they were asked
  const std::vector<std::string>& pieces() const { return pieces_; }  // the scored run's tokenizer
  int maxWindows() const { return ask_.maxWindows; }  // as asked: 0, every window
  // The scored run's own evaluation on every window (NaN until known) and its window count
  // (0: a record, which does not count them).
  double evaluationLoss() const { return evaluationLoss_; }
  qint64 evaluationWindows() const { return evaluationWindows_; }
  QStringList notes() const { return notes_; }  // runs left out, and why
  QString lastError() const { return lastError_; }
  void setLastError(const QString& error) { lastError_ = error; }

  // Every scored token as CSV (window, position, input, target, text, document, distance, then
  // each run's loss, prob and rank); returns "" on success, else the reason.
  QString exportTokens(const QString& path) const;

  // Asks every scored run for its top alternatives at each token of `document` (Prober's last
  // lens: the model's own next-token distribution); alternativesArrived when each comes.
  void askAlternatives(int64_t document);
  void clearAlternatives();
  std::vector<hsm::LensToken> alternatives(const QString& runDir, int64_t window, int32_t position) const;
  bool hasAlternatives() const;  // of every scored run
  static constexpr int kAlternatives = 3;
  static constexpr int64_t kTaskExamples = 256;  // a task run's test examples scored

 signals:
  // Scoring the index-th of `of` runs asked is at `fraction` of `stage`.
  void progress(int index, int of, const QString& runName, const QString& stage, double fraction);
  void finished();  // every run asked has answered (or failed, or was cancelled)
  void taskScored(const QString& runDir, const hsm::TaskScore& score, bool edited);
  void taskFailed(const QString& runDir, const QString& message);

 private:
  void ask(int index);  // queues the scoring of order_[index]
  void onScored(const QString& dir, const LossScoring& s);
  void onFailed(const QString& dir, const CallFailed& e);
  void finishOne(const QString& dir);

  RunList* runs_;
  EngineHost* engine_;
  bool taskScoring_ = false;  // a task run's test set is being scored
  QString scoredRun_;
  qint64 scoredStamp_ = 0;  // the scored run's checkpoint (RunEntry::config_stamp)
  QMap<QString, hsm::TokenScores> scores_;  // run dir → its scores on scoredRun_'s windows
  std::vector<std::string> pieces_;
  QStringList order_;
  QMap<QString, Reply<LossScoring>> scoring_;
  struct Ask {
    QString data;
    std::string windows;
    int maxWindows = 0;
    bool evaluateAll = false;  // the scored run's own evaluation to compute (none recorded)
  } ask_;
  double evaluationLoss_ = std::nan("");
  qint64 evaluationWindows_ = 0;
  QStringList notes_;
  QString lastError_;
  // Per run, per window of the document asked: each position's top alternatives.
  using WindowTops = QMap<qint64, std::vector<std::vector<hsm::LensToken>>>;
  QMap<QString, WindowTops> alternatives_;
  int64_t alternativesDocument_ = -1;
};

}  // namespace studio
