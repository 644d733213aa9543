#pragma once
// Generated text, token by token: each token's background is tinted by its probability
// (red for unlikely, green for likely) and hovering it shows the top alternatives the
// model weighed, with their probabilities. Clicking a generated token (shift: adding it to
// the ones clicked) asks for its provenance; showProvenance() then shows the text the model
// saw tinted by how much those tokens drew on each of its tokens, until clearProvenance().
#include <QTextEdit>
#include <QVector>
#include <functional>
#include <vector>

#include "hsm/generator.h"

namespace studio {

// A token's piece as a cell or a label shows it: a line break as ↵, a space as ␣, a tab as ⇥,
// and a byte-fallback piece ("<0x0A>", issue 69: shown raw in the logit lens) as its character
// when it is one (ASCII), else as �, a byte of a character written in several.
QString pieceLabel(const std::string& piece);

class TokenText : public QTextEdit {
  Q_OBJECT
 public:
  explicit TokenText(QWidget* parent = nullptr);

  void clearText();
  void setPrompt(const QString& prompt);  // shown in bold, untinted
  void appendToken(const hsm::GeneratedToken& token);
  void appendNote(const QString& note);   // grey, e.g. "[stopped]"

  // The text's point size. Ctrl+wheel asks for a step (textSizeStep) rather than zooming
  // itself, so the owner keeps one size for every text it shows and across generations.
  static constexpr double kMinTextSize = 6, kMaxTextSize = 96;
  static double defaultTextSize();
  void setTextSize(double points);
  double textSize() const { return font().pointSizeF(); }
  // Tint by probability (the default) or plain text; tokens already shown follow.
  void setTinted(bool tinted);
  bool tinted() const { return tinted_; }

  // Whole lines only (presentation mode, issue 48): the text scrolls to line boundaries, so a
  // story that overflows never shows its top line cut through its letters; there is room below
  // the last line to scroll so.
  void setWholeLines(bool on);
  bool wholeLines() const { return wholeLines_; }
  // The top of each line of the text, in document pixels (where whole-line scrolling stops).
  QVector<int> lineTops() const;

  int tokenCount() const { return static_cast<int>(spans_.size()); }
  QString generatedText() const { return generated_; }
  // The tooltip for the character at a document position ("" outside generated tokens).
  QString tooltipAt(int position) const;
  // The tint used for a token of probability p.
  static QColor tint(double p);

  // The ids of the generated tokens so far, in order.
  QVector<int> tokenIds() const;
  // The generated token whose text covers a document position, or -1 (also in provenance
  // mode, where the document shows the probed tokens).
  int tokenAt(int position) const;
  // Provenance mode: `pieces` are the tokens the model saw (the last of them the newest
  // selected generated token), `weights` how much the selected ones drew on each (one per
  // piece), `firstGenerated` the piece index of generated token 0 (negative when it is out
  // of the window), `selected` the selected tokens' piece indices.
  void showProvenance(const QStringList& pieces, const std::vector<double>& weights, int firstGenerated,
                      const QVector<int>& selected);
  void clearProvenance();  // back to the generated text and its probabilities
  bool provenanceShown() const { return provenance_; }
  // The weight shown on each piece in provenance mode (what the tint encodes).
  const std::vector<double>& provenanceWeights() const { return provenanceWeights_; }
  // The tint of a piece holding this share of the largest weight (0..1).
  static QColor provenanceTint(double share);

 signals:
  // A generated token was clicked; add: shift was held (sum it with the ones already chosen).
  void tokenClicked(int index, bool add);
  void textSizeStep(double points);  // Ctrl+wheel: +1 or −1 point
  void provenanceCleared();          // back from provenance mode to the probabilities

 protected:
  bool event(QEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;

 private:
  void snapToLine();  // whole lines: scrolls down to the next line's top
  struct Span {
    int start = 0, end = 0;
    hsm::GeneratedToken token;
  };
  std::vector<Span> spans_;
  bool tinted_ = true;
  bool wholeLines_ = false, snapping_ = false;
  int lastScroll_ = 0;  // the scroll value snapToLine() last left
  QString generated_;
  // Provenance mode: the generated document kept aside, each piece's span and its token.
  QTextDocument* generatedDocument_ = nullptr;
  bool provenance_ = false;
  struct PieceSpan {
    int start = 0, end = 0;
    int token = -1;  // generated token index, -1 for the prompt
    double weight = 0;
  };
  std::vector<PieceSpan> pieces_;
  std::vector<double> provenanceWeights_;
};

// Ctrl+plus (and Ctrl+=), Ctrl+minus on `host` and its children call step(+1) and step(−1).
void bindTextSizeKeys(QWidget* host, const std::function<void(double step)>& step);

}  // namespace studio
