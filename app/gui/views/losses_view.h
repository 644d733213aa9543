#pragma once
#include <cmath>
// The Losses view (issue 40, docs/diagnostics.md §8): where a model loses. Every predicted
// token of the current run's validation windows (the windows it was trained on) is scored off
// the GUI thread with progress and cancel (Evaluator::score_tokens, the evaluation itself, so
// the tokens' mean loss is the run's evaluation loss), and so is every other open run with the
// same tokenizer, on the same windows. The documents sorted by loss; the chosen document's text
// tinted per token by loss (hover: each run's loss, probability and rank); loss against
// position and against distance back to the token's previous occurrence, one curve per run; a
// histogram of the losses. Every plot exports PNG/PDF/SVG and CSV (File › Export).
#include <QList>
#include <QMap>
#include <QStringList>
#include <vector>

#include "gui/engine/executor.h"
#include "gui/views/studio_view.h"
#include "hsm/probe.h"
#include "hsm/token_scores.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTextEdit;

namespace studio {

class PlotPanel;

// One run's scores and the text of each token of its vocabulary (for showing the documents).
struct LossScoring {
  hsm::TokenScores scores;
  std::vector<std::string> pieces;  // Tokenizer::piece of each id
  // The run's own evaluation on every window (run_evaluation.h), computed beside the scores
  // when fewer windows were scored and the run records none; window_count 0: not computed.
  hsm::EvalResult evaluation;
};

class LossesView : public StudioView {
  Q_OBJECT
 public:
  LossesView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  void setMaxWindows(int windows);  // 0: every validation window
  // The corpus whose validation split is scored (empty: the run's own).
  void setDataPath(const QString& path);
  // As the Score button: the current run and every other open run with a checkpoint. False
  // when nothing could start (reason in lastError()).
  bool score();
  void cancel();  // as the Cancel button
  bool isScoring() const { return !scoring_.isEmpty() || taskScoring_; }
  // What the status line says (a task run: its test-set score, as `hsm eval` gives it).
  QString statusText() const;
  QString lastError() const { return lastError_; }
  // The headline: the scored run's own evaluation on every window, as `hsm eval` and the
  // Training view's last validation give it, whatever number of windows was scored token by
  // token (NaN until scored).
  double evaluationLoss() const { return evaluationLoss_; }

  // The run whose scores the view shows (empty: none) and the scores of each run scored with it.
  QString scoredRun() const { return scoredRun_; }
  bool hasScores() const { return scores_.contains(scoredRun_); }
  const hsm::TokenScores& scores() const;  // the scored run's
  const hsm::TokenScores* scoresOf(const QString& runDir) const;
  QStringList comparedRuns() const;  // the other runs scored on the same windows

  // Documents, hardest first: (document, tokens, mean loss of the scored run) per row.
  QTableWidget* documentTable() const { return documents_; }
  void showDocument(int64_t document);
  int64_t shownDocument() const { return shownDocument_; }
  QTextEdit* documentText() const { return text_; }
  // The shown document's tokens (indices into scores().tokens), in text order, and where each
  // begins and ends in the text.
  struct Span {
    int start = 0, end = 0;
    size_t token = 0;
  };
  const std::vector<Span>& spans() const { return spans_; }
  QString tooltipAt(int position) const;  // "" outside the tokens
  // Whether the shown document's top alternatives of every scored run have arrived.
  bool hasAlternatives() const;
  // A run's top alternatives at a window's position (empty until they arrive).
  std::vector<hsm::LensToken> alternatives(const QString& runDir, int64_t window, int32_t position) const;
  static constexpr int kAlternatives = 3;
  // The tint of a token of this loss (nats): a sequential palette, pale for small losses.
  static QColor lossTint(double loss);
  static constexpr double kTintMaxLoss = 8;  // the darkest tint

  // Compare mode: B, another run scored on the same windows (empty: off, the plain losses).
  // The documents are then sorted by mean difference B − A (B's best first) and the text is
  // tinted by each token's difference.
  void setCompareRun(const QString& runDir);
  QString compareRun() const;
  QComboBox* compareBox() const { return compare_; }
  // The tint of a token whose loss differs by `difference` = B − A (nats): a diverging
  // palette, colour-blind safe (ColorBrewer RdBu): blue where B does better, red where worse.
  static QColor differenceTint(double difference);
  static constexpr double kTintMaxDifference = 3;

  PlotPanel* positionPlot() const { return byPosition_; }
  PlotPanel* distancePlot() const { return byDistance_; }
  PlotPanel* frequencyPlot() const { return byFrequency_; }
  PlotPanel* histogramPlot() const { return histogram_; }
  QList<PlotPanel*> plots() const override { return {byPosition_, byDistance_, byFrequency_, histogram_}; }
  // Every scored token as CSV (window, position, input, target, text, document, distance, then
  // each run's loss, prob and rank); returns "" on success, else the reason. The Export…
  // button writes it beside the plots as <run>-losses-tokens.csv.
  QString exportTokens(const QString& path) const;
  QProgressBar* progress() const { return progress_; }
  QLabel* statusLabel() const { return status_; }
  // The colour key of the text's tint (empty until scored): the loss palette, or in compare
  // mode the difference's, naming which run each colour favours.
  QString tintKey() const;

 protected:
  void leaveRun() override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void build();
  void connectSignals();
  void updateButtons();
  // Whether the view still shows (or waits for) the current run's scores.
  bool following() const { return !scoredRun_.isEmpty() && scoredRun_ == currentRunDir(); }
  void ask(int index);  // queues the scoring of order_[index]
  void onScored(const QString& dir, const LossScoring& s);
  void onFailed(const QString& dir, const CallFailed& e);
  void finishOne(const QString& dir);
  // A task run has no text to score token by token: its test examples' answer accuracy and loss.
  void scoreTask(const RunEntry& run);
  static QString taskRunLine(const RunEntry& run);
  void clearShown();
  void updateTintKey(const QString& compared);  // compared: the run B, empty when not comparing
  void fillCompareBox();
  void drawDocuments();
  void drawPlots();
  // Asks every scored run for its top alternatives at each of the shown document's tokens
  // (Prober::probe_tokens on each window's inputs: the last layer's lens is the model's own
  // next-token distribution); the tooltips show them when they arrive.
  void askAlternatives();

  QLineEdit* dataEdit_;
  QSpinBox* maxWindows_;
  QPushButton* scoreButton_;
  QPushButton* cancelButton_;
  QPushButton* exportButton_;
  QComboBox* compare_;
  QProgressBar* progress_;
  QLabel* status_;
  QLabel* tintKey_;
  bool taskScoring_ = false;  // a task run's test set is being scored
  QTableWidget* documents_;
  QTextEdit* text_;
  PlotPanel* byPosition_;
  PlotPanel* byDistance_;
  PlotPanel* byFrequency_;  // mean loss by the target's count in the training split (decades)
  PlotPanel* histogram_;

  QString scoredRun_;
  qint64 scoredStamp_ = 0;  // the scored run's checkpoint (RunEntry::config_stamp)
  QMap<QString, hsm::TokenScores> scores_;  // run dir → its scores on scoredRun_'s windows
  std::vector<std::string> pieces_;         // scoredRun_'s tokenizer
  QStringList order_;                       // the runs in the order they were asked
  QMap<QString, Reply<LossScoring>> scoring_;
  int asked_ = 0;
  struct Ask {
    QString data;
    std::string windows;
    int maxWindows = 0;
    bool evaluateAll = false;  // the scored run's own evaluation to compute (none recorded)
  } ask_;
  // The scored run's headline loss: its own evaluation on every window (recorded or computed);
  // NaN until known. Its window count (0: a record, which does not count them).
  double evaluationLoss_ = std::nan("");
  qint64 evaluationWindows_ = 0;  // what score() asked, for the runs asked after the first
  QStringList notes_;  // runs left out, and why
  QString lastError_;
  int64_t shownDocument_ = -1;
  hsm::Comparison comparison_;  // with compareRun() (empty: not comparing)
  std::vector<Span> spans_;
  // Per run, per window of the shown document: each position's top alternatives.
  using WindowTops = QMap<qint64, std::vector<std::vector<hsm::LensToken>>>;
  QMap<QString, WindowTops> alternatives_;
};

}  // namespace studio
