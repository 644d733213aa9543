#pragma once
// Generated text, token by token: each token's background is tinted by its probability
// (red for unlikely, green for likely) and hovering it shows the top alternatives the
// model weighed, with their probabilities.
#include <QTextEdit>
#include <vector>

#include "hsm/session.h"

namespace studio {

class TokenText : public QTextEdit {
  Q_OBJECT
 public:
  explicit TokenText(QWidget* parent = nullptr);

  void clearText();
  void setPrompt(const QString& prompt);  // shown in bold, untinted
  void appendToken(const hsm::GeneratedToken& token);
  void appendNote(const QString& note);   // grey, e.g. "[stopped]"

  int tokenCount() const { return static_cast<int>(spans_.size()); }
  QString generatedText() const { return generated_; }
  // The tooltip for the character at a document position ("" outside generated tokens).
  QString tooltipAt(int position) const;
  // The tint used for a token of probability p.
  static QColor tint(double p);

 protected:
  bool event(QEvent* e) override;

 private:
  struct Span {
    int start = 0, end = 0;
    hsm::GeneratedToken token;
  };
  std::vector<Span> spans_;
  QString generated_;
};

}  // namespace studio
