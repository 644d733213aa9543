#include "gui/widgets/token_text.h"

#include <QHelpEvent>
#include <QTextCursor>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace studio {

namespace {

QString show_piece(const std::string& piece) {
  QString s = QString::fromStdString(piece).toHtmlEscaped();
  s.replace(QLatin1Char('\n'), QStringLiteral("↵"));
  s.replace(QLatin1Char(' '), QStringLiteral("␣"));
  return s;
}

}  // namespace

TokenText::TokenText(QWidget* parent) : QTextEdit(parent) {
  setReadOnly(true);
  setMouseTracking(true);
  setAcceptRichText(false);
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 1.15);
  setFont(f);
}

QColor TokenText::tint(double p) {
  // On a log scale: a sampled token's probability is mostly between 1% and 100%, and the
  // difference between 1% and 10% matters as much as between 10% and 100%. Hue runs from
  // red (p <= 0.01) through yellow (0.1) to green (1); light, so text stays readable.
  const double t = std::clamp((std::log10(std::max(p, 1e-9)) + 2.0) / 2.0, 0.0, 1.0);
  return QColor::fromHsvF(static_cast<float>(t / 3.0), 0.35f, 1.0f);
}

void TokenText::clearText() {
  clear();
  spans_.clear();
  generated_.clear();
}

void TokenText::setPrompt(const QString& prompt) {
  clearText();
  QTextCursor c(document());
  QTextCharFormat fmt;
  fmt.setFontWeight(QFont::Bold);
  c.insertText(prompt, fmt);
}

void TokenText::appendToken(const hsm::GeneratedToken& token) {
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat fmt;
  fmt.setBackground(tint(token.prob));
  const QString text = QString::fromStdString(token.text);
  Span span;
  span.start = c.position();
  c.insertText(text, fmt);
  span.end = c.position();
  span.token = token;
  spans_.push_back(std::move(span));
  generated_ += text;
  ensureCursorVisible();
}

void TokenText::appendNote(const QString& note) {
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat fmt;
  fmt.setForeground(Qt::gray);
  fmt.setFontItalic(true);
  c.insertText(QStringLiteral(" ") + note, fmt);
}

QString TokenText::tooltipAt(int position) const {
  // A token whose text is pending (a UTF-8 character split across byte tokens) has an
  // empty span; the next non-empty one carries the character.
  auto it = std::find_if(spans_.begin(), spans_.end(),
                         [&](const Span& s) { return position >= s.start && position < s.end; });
  if (it == spans_.end()) return {};
  const hsm::GeneratedToken& t = it->token;
  QString html = QStringLiteral("<b>%1</b> &nbsp; p = %2<br><table>")
                     .arg(show_piece(t.piece))
                     .arg(QString::number(t.prob, 'f', 3));
  for (const auto& alt : t.top) {
    const bool chosen = alt.id == t.id;
    html += QStringLiteral("<tr><td>%1%2%3</td><td align=right>&nbsp;%4</td></tr>")
                .arg(chosen ? QStringLiteral("<b>") : QString(), show_piece(alt.piece),
                     chosen ? QStringLiteral("</b>") : QString())
                .arg(QString::number(alt.prob, 'f', 3));
  }
  return html + QStringLiteral("</table>");
}

bool TokenText::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QPoint viewportPos = viewport()->mapFromGlobal(help->globalPos());
    const QString tip = tooltipAt(cursorForPosition(viewportPos).position());
    if (tip.isEmpty()) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(help->globalPos(), tip, this);
    }
    return true;
  }
  return QTextEdit::event(e);
}

}  // namespace studio
