#include "gui/widgets/token_text.h"
#include "gui/widgets/colour_maps.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QAbstractTextDocumentLayout>
#include <QScrollBar>
#include <QShortcut>
#include <QTextBlock>
#include <QTextFrame>
#include <QWheelEvent>
#include <QTextDocument>
#include <QTextCursor>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace studio {

QString pieceLabel(const std::string& piece) {
  QString s;
  if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>') {
    bool ok = false;
    const int byte = QString::fromStdString(piece.substr(3, 2)).toInt(&ok, 16);
    if (!ok) s = QString::fromStdString(piece);
    else if (byte >= 0x20 && byte < 0x7f) s = QChar(byte);
    else if (byte == '\n' || byte == '\t') s = QChar(byte);
    else s = QChar(QChar::ReplacementCharacter);
  } else {
    s = QString::fromStdString(piece);
  }
  s.replace(QLatin1Char('\n'), QStringLiteral("↵"));
  s.replace(QLatin1Char('\t'), QStringLiteral("⇥"));
  s.replace(QLatin1Char(' '), QStringLiteral("␣"));
  return s;
}

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
  setTextSize(defaultTextSize());
}

double TokenText::defaultTextSize() { return QFont().pointSizeF() * 1.15; }

void TokenText::setTextSize(double points) {
  QFont f = font();
  f.setPointSizeF(std::clamp(points, kMinTextSize, kMaxTextSize));
  setFont(f);
  document()->setDefaultFont(f);
  if (generatedDocument_) generatedDocument_->setDefaultFont(f);
  if (wholeLines_) ensureCursorVisible();
  snapToLine();
}

void TokenText::setTinted(bool tinted) {
  if (tinted == tinted_) return;
  tinted_ = tinted;
  QTextDocument* doc = generatedDocument_ ? generatedDocument_ : document();
  for (const Span& span : spans_) {
    QTextCursor c(doc);
    c.setPosition(span.start);
    c.setPosition(span.end, QTextCursor::KeepAnchor);
    QTextCharFormat fmt;
    fmt.setBackground(tinted_ ? QBrush(tint(span.token.prob)) : QBrush(Qt::NoBrush));
    c.mergeCharFormat(fmt);
  }
}

void TokenText::wheelEvent(QWheelEvent* e) {
  if (e->modifiers().testFlag(Qt::ControlModifier)) {
    if (e->angleDelta().y() != 0) emit textSizeStep(e->angleDelta().y() > 0 ? 1 : -1);
    e->accept();
    return;
  }
  QTextEdit::wheelEvent(e);
}

void bindTextSizeKeys(QWidget* host, const std::function<void(double)>& step) {
  const QPair<QKeySequence, double> keys[] = {{QKeySequence::ZoomIn, 1},
                                              {QKeySequence(Qt::CTRL | Qt::Key_Equal), 1},
                                              {QKeySequence::ZoomOut, -1}};
  for (const auto& [key, delta] : keys) {
    auto* shortcut = new QShortcut(key, host);
    shortcut->setContext(Qt::WidgetWithChildrenShortcut);
    QObject::connect(shortcut, &QShortcut::activated, host, [step, delta = delta] { step(delta); });
  }
}

QColor TokenText::tint(double p) {
  // On a log scale: a sampled token's probability is mostly between 1% and 100%, and the
  // difference between 1% and 10% matters as much as between 10% and 100%. Hue runs from
  // red (p <= 0.01) through yellow (0.1) to green (1); light, so text stays readable.
  return colours::redToGreen((std::log10(std::max(p, 1e-9)) + 2.0) / 2.0, 0.35, 1.0);
}

void TokenText::clearText() {
  clearProvenance();
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
  clearProvenance();
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat fmt;
  if (tinted_) fmt.setBackground(tint(token.prob));
  const QString text = QString::fromStdString(token.text);
  Span span;
  span.start = c.position();
  c.insertText(text, fmt);
  span.end = c.position();
  span.token = token;
  spans_.push_back(std::move(span));
  generated_ += text;
  ensureCursorVisible();
  snapToLine();
}

void TokenText::setWholeLines(bool on) {
  if (on && !wholeLines_)
    connect(verticalScrollBar(), &QScrollBar::valueChanged, this, &TokenText::snapToLine, Qt::UniqueConnection);
  wholeLines_ = on;
  snapToLine();
}

QVector<int> TokenText::lineTops() const {
  QVector<int> tops;
  QAbstractTextDocumentLayout* layout = document()->documentLayout();
  for (QTextBlock b = document()->begin(); b.isValid(); b = b.next()) {
    const double top = layout->blockBoundingRect(b).top();
    for (int i = 0; b.layout() && i < b.layout()->lineCount(); ++i)
      tops << static_cast<int>(std::floor(top + b.layout()->lineAt(i).y()));
  }
  return tops;
}

// ensureCursorVisible() and a resize leave the view at any pixel: the line at its top is then
// cut. Moved down to that line's end (the next line's top), the newest line stays in view.
void TokenText::snapToLine() {
  if (!wholeLines_ || snapping_) return;
  snapping_ = true;
  // Room for one more line below the last while the text overflows: a line's top can always be
  // scrolled to the top (a text that fits keeps the plain margin, and no scroll bar).
  QTextFrameFormat frame = document()->rootFrame()->frameFormat();
  const double plain = document()->documentMargin();
  const double text = document()->documentLayout()->documentSize().height() - frame.bottomMargin() + plain;
  const double room = text > viewport()->height() ? fontMetrics().lineSpacing() * 1.5 : plain;
  if (frame.bottomMargin() != room) {
    frame.setBottomMargin(room);
    document()->rootFrame()->setFrameFormat(frame);
  }
  // Scrolled up (by the user): to the top of the line cut there; else down to the next line's.
  QScrollBar* bar = verticalScrollBar();
  const int at = bar->value();
  int target = at;
  const QVector<int> tops = lineTops();
  if (at < lastScroll_) {
    for (int top : tops)
      if (top <= at) target = top;
  } else {
    for (int top : tops)
      if (top >= at) {
        target = top;
        break;
      }
  }
  if (at > 0 && target != at && target <= bar->maximum()) bar->setValue(target);
  lastScroll_ = bar->value();
  snapping_ = false;
}

void TokenText::resizeEvent(QResizeEvent* e) {
  QTextEdit::resizeEvent(e);
  if (wholeLines_) ensureCursorVisible();
  snapToLine();
}

void TokenText::appendNote(const QString& note) {
  clearProvenance();
  QTextCursor c(document());
  c.movePosition(QTextCursor::End);
  QTextCharFormat fmt;
  fmt.setForeground(Qt::gray);
  fmt.setFontItalic(true);
  c.insertText(QStringLiteral(" ") + note, fmt);
}

QVector<int> TokenText::tokenIds() const {
  QVector<int> ids;
  for (const Span& s : spans_) ids << s.token.id;
  return ids;
}

int TokenText::tokenAt(int position) const {
  if (provenance_) {
    for (const PieceSpan& p : pieces_)
      if (position >= p.start && position < p.end) return p.token;
    return -1;
  }
  for (size_t i = 0; i < spans_.size(); ++i)
    if (position >= spans_[i].start && position < spans_[i].end) return static_cast<int>(i);
  return -1;
}

QColor TokenText::provenanceTint(double share) {
  // Blue, from white (drew nothing) to a saturated blue (the most drawn-on token).
  return colours::whiteToBlue(std::clamp(share, 0.0, 1.0), 0.75, 0.55);
}

void TokenText::showProvenance(const QStringList& pieces, const std::vector<double>& weights, int firstGenerated,
                               const QVector<int>& selected) {
  if (!provenance_) {  // keep the generated text (its spans stay valid) for clearProvenance()
    generatedDocument_ = document();
    generatedDocument_->setParent(this);
    setDocument(new QTextDocument(this));
    document()->setDefaultFont(font());
    provenance_ = true;
  }
  document()->clear();
  pieces_.clear();
  provenanceWeights_ = weights;
  // The tint is relative to the largest weight on a token that was not selected (a selected
  // token draws on itself through the residual path, which would wash the rest out).
  double top = 0;
  for (int i = 0; i < pieces.size() && i < static_cast<int>(weights.size()); ++i)
    if (!selected.contains(i)) top = std::max(top, weights[static_cast<size_t>(i)]);
  QTextCursor c(document());
  for (int i = 0; i < pieces.size(); ++i) {
    const double w = i < static_cast<int>(weights.size()) ? weights[static_cast<size_t>(i)] : 0.0;
    QTextCharFormat fmt;
    if (selected.contains(i)) {
      fmt.setBackground(QColor(255, 190, 90));
      fmt.setFontWeight(QFont::Bold);
      fmt.setFontUnderline(true);
    } else {
      fmt.setBackground(provenanceTint(top > 0 ? w / top : 0.0));
    }
    PieceSpan span;
    span.start = c.position();
    c.insertText(pieces[i], fmt);
    span.end = c.position();
    span.token = i >= firstGenerated ? i - firstGenerated : -1;  // -1: the prompt (or <|endoftext|>)
    span.weight = w;
    pieces_.push_back(span);
  }
}

void TokenText::clearProvenance() {
  if (!provenance_) return;
  QTextDocument* shown = document();
  setDocument(generatedDocument_);
  shown->deleteLater();
  generatedDocument_ = nullptr;
  provenance_ = false;
  pieces_.clear();
  provenanceWeights_.clear();
  emit provenanceCleared();
}

void TokenText::mouseReleaseEvent(QMouseEvent* e) {
  QTextEdit::mouseReleaseEvent(e);
  if (e->button() != Qt::LeftButton) return;
  const int token = tokenAt(cursorForPosition(e->position().toPoint()).position());
  if (token >= 0) {
    emit tokenClicked(token, e->modifiers().testFlag(Qt::ShiftModifier));
  } else if (provenance_) {
    clearProvenance();  // a click outside the generated tokens returns to the probabilities
  }
}

QString TokenText::tooltipAt(int position) const {
  if (provenance_) {
    for (const PieceSpan& p : pieces_)
      if (position >= p.start && position < p.end)
        return tr("drew <b>%1</b> of its input from this token (attention rollout)").arg(p.weight, 0, 'f', 4);
    return {};
  }
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
