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
// What it holds and asks the engine is a LossesState (losses_state.h); this is its drawing.
#include <QList>
#include <QStringList>
#include <vector>

#include "gui/views/losses_state.h"
#include "gui/views/studio_view.h"

class QComboBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTextEdit;

namespace studio {

class PlotPanel;

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
  bool isScoring() const { return state_->isScoring(); }
  // What the status line says (a task run: its test-set score, as `hsm eval` gives it).
  QString statusText() const;
  QString lastError() const { return state_->lastError(); }
  // The headline: the scored run's own evaluation on every window, as `hsm eval` and the
  // Training view's last validation give it, whatever number of windows was scored token by
  // token (NaN until scored).
  double evaluationLoss() const { return state_->evaluationLoss(); }

  // The run whose scores the view shows (empty: none) and the scores of each run scored with it.
  QString scoredRun() const { return state_->scoredRun(); }
  bool hasScores() const { return state_->hasScores(); }
  const hsm::TokenScores& scores() const { return state_->scores(); }  // the scored run's
  const hsm::TokenScores* scoresOf(const QString& runDir) const { return state_->scoresOf(runDir); }
  QStringList comparedRuns() const { return state_->comparedRuns(); }  // the other runs scored on the same windows

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
  std::vector<hsm::LensToken> alternatives(const QString& runDir, int64_t window, int32_t position) const {
    return state_->alternatives(runDir, window, position);
  }
  static constexpr int kAlternatives = LossesState::kAlternatives;
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
  QString exportTokens(const QString& path) const { return state_->exportTokens(path); }
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
  QHBoxLayout* buildControls();
  QWidget* buildDocumentPane();
  QWidget* buildPlots();
  void connectSignals();
  void updateButtons();
  void showProgress(int index, int of, const QString& runName, const QString& stage, double fraction);
  void showScores();  // every run asked has answered: the status line, the documents, the plots
  void showTaskScore(const QString& runDir, const hsm::TaskScore& s, bool edited);
  void showTaskFailure(const QString& runDir, const QString& message);
  void exportDialog();
  // A task run has no text to score token by token: its test examples' answer accuracy and loss.
  void scoreTask(const RunEntry& run);
  static QString taskRunLine(const RunEntry& run);
  void clearShown();
  void updateTintKey(const QString& compared);  // compared: the run B, empty when not comparing
  void fillCompareBox();
  void drawDocuments();
  void drawPlots();
  // The shown document's text, each token as it reads (a character of several byte tokens on
  // its first), in text order.
  std::vector<QString> documentPieces(const std::vector<size_t>& tokens) const;

  LossesState* state_;
  QLineEdit* dataEdit_;
  QSpinBox* maxWindows_;
  QPushButton* scoreButton_;
  QPushButton* cancelButton_;
  QPushButton* exportButton_;
  QComboBox* compare_;
  QProgressBar* progress_;
  QLabel* status_;
  QLabel* tintKey_;
  QTableWidget* documents_;
  QTextEdit* text_;
  PlotPanel* byPosition_;
  PlotPanel* byDistance_;
  PlotPanel* byFrequency_;  // mean loss by the target's count in the training split (decades)
  PlotPanel* histogram_;

  int64_t shownDocument_ = -1;
  hsm::Comparison comparison_;  // with compareRun() (empty: not comparing)
  std::vector<Span> spans_;
};

}  // namespace studio
