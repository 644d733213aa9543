#include "gui/widgets/receptive_field_diagram.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "gui/widgets/glossary.h"
#include "hsm/mixer_kind.h"

namespace studio {
namespace {
constexpr double kLeft = 118, kRight = 14, kTop = 14, kBottom = 50;
const QColor kLit(230, 110, 20);

// The opaque colour a translucent one takes over the white background. Qt's raster engine
// blends translucent antialiased lines 2-3x slower than opaque ones, and the diagram draws
// hundreds; only the crossings of two links look different (not darker).
QColor over_white(const QColor& c) {
  const double a = c.alphaF();
  auto mix = [a](int v) { return static_cast<int>(std::lround(255.0 - (255.0 - v) * a)); };
  return QColor(mix(c.red()), mix(c.green()), mix(c.blue()));
}
}  // namespace

ReceptiveFieldDiagram::ReceptiveFieldDiagram(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("receptive_field_diagram"));
  setAttribute(Qt::WA_OpaquePaintEvent);  // paintEvent fills every pixel: nothing beneath to draw
  setMouseTracking(false);
  setToolTip(tr("Click a node: that position's receptive field after that layer lights up down to the inputs.") +
             QStringLiteral("\n\n") + help::termToolTip(help::Term::kReceptiveField) + QLatin1Char('\n') +
             help::termToolTip(help::Term::kShift));
}

void ReceptiveFieldDiagram::setConfig(const hsm::ModelConfig& config) {
  config_ = config;
  rebuild();
}

void ReceptiveFieldDiagram::setKnockOuts(const std::vector<hsm::KnockOut>& knockOuts) {
  knockOuts_ = knockOuts;
  rebuild();
}

void ReceptiveFieldDiagram::rebuild() {
  const hsm::ModelConfig& config = config_;
  staticLayer_ = QImage();
  mixers_.clear();
  shifts_.clear();
  dense_.clear();
  for (size_t l = 0; l < config.layers.size(); ++l) {
    const hsm::LayerSpec& spec = config.layers[l];
    mixers_.push_back(spec.mixer);
    // An unknown id (a config from a newer version) is drawn as reading every earlier position.
    if (!hsm::is_mixer_id(spec.mixer)) {
      shifts_.push_back({});
      dense_.push_back(true);
      continue;
    }
    const hsm::MixerInfo& info = hsm::mixer_info(spec.mixer);
    shifts_.push_back(info.shifts(static_cast<int64_t>(l), spec.heads));
    dense_.push_back(info.reads_all_earlier);  // false for DA's mlp: only the position itself
  }
  off_.assign(shifts_.size(), false);
  std::vector<std::vector<bool>> dropped(shifts_.size());
  for (size_t l = 0; l < shifts_.size(); ++l) dropped[l].assign(shifts_[l].size(), false);
  for (const hsm::KnockOut& k : knockOuts_) {
    if (k.layer < 0 || k.layer >= layerCount()) continue;
    const size_t l = static_cast<size_t>(k.layer);
    if (k.head < 0) {
      dropped[l].assign(dropped[l].size(), true);
      dense_[l] = false;
      off_[l] = true;
    } else if (k.head < static_cast<int64_t>(dropped[l].size()) && shifts_[l].size() > 1) {
      dropped[l][static_cast<size_t>(k.head)] = true;
    }
  }
  for (size_t l = 0; l < shifts_.size(); ++l) {
    std::vector<int64_t> kept;
    for (size_t j = 0; j < shifts_[l].size(); ++j)
      if (!dropped[l][j]) kept.push_back(shifts_[l][j]);
    shifts_[l] = kept;
  }
  layer_ = std::clamp(layer_, 0, std::max(0, layerCount() - 1));
  if (layerCount() > 0 && layer_ == 0) layer_ = layerCount() - 1;
  trace();
}

void ReceptiveFieldDiagram::setLength(int tokens) {
  if (std::clamp(tokens, 2, 1024) != length_) staticLayer_ = QImage();
  length_ = std::clamp(tokens, 2, 1024);
  token_ = std::min(token_, length_ - 1);
  if (token_ < 0) token_ = length_ - 1;
  trace();
}

void ReceptiveFieldDiagram::select(int token, int layer) {
  token_ = std::clamp(token, 0, length_ - 1);
  layer_ = std::clamp(layer, 0, std::max(0, layerCount() - 1));
  trace();
  emit selectionChanged(token_, layer_);
}

// Walks the drawn links backwards from the selected node: row r+1's lit positions light
// themselves (the residual/identity path) and, through layer r, p - s for each shift s,
// or every j <= p for attention.
void ReceptiveFieldDiagram::trace() {
  const int rows = layerCount() + 1;
  lit_.assign(rows, std::vector<bool>(length_, false));
  if (layerCount() == 0) {
    lit_[0][token_] = true;
    update();
    return;
  }
  lit_[layer_ + 1][token_] = true;
  for (int l = layer_; l >= 0; --l) {
    const auto& above = lit_[l + 1];
    auto& below = lit_[l];
    int highest = -1;
    for (int p = 0; p < length_; ++p) {
      if (!above[p]) continue;
      highest = p;
      below[p] = true;
      for (int64_t s : shifts_[l])
        if (p - s >= 0) below[p - s] = true;
    }
    if (dense_[l])
      for (int j = 0; j <= highest; ++j) below[j] = true;
  }
  update();
}

std::vector<int> ReceptiveFieldDiagram::litPositions(int row) const {
  std::vector<int> out;
  if (row < 0 || row >= static_cast<int>(lit_.size())) return out;
  for (int p = 0; p < length_; ++p)
    if (lit_[row][p]) out.push_back(p);
  return out;
}

std::vector<int64_t> ReceptiveFieldDiagram::litOffsets() const {
  std::vector<int64_t> out;
  for (int p : litPositions(0)) out.push_back(token_ - p);
  std::sort(out.begin(), out.end());
  return out;
}

double ReceptiveFieldDiagram::rowY(int row) const {
  const int rows = layerCount() + 1;
  const double h = height() - kTop - kBottom;
  return rows <= 1 ? kTop + h : kTop + h - h * row / (rows - 1);
}

double ReceptiveFieldDiagram::columnX(int t) const {
  const double w = width() - kLeft - kRight;
  return kLeft + (t + 0.5) * w / length_;
}

QPointF ReceptiveFieldDiagram::nodeCenter(int row, int t) const { return {columnX(t), rowY(row)}; }

void ReceptiveFieldDiagram::mousePressEvent(QMouseEvent* event) {
  const QPointF pos = event->position();
  const double w = width() - kLeft - kRight;
  const int t = static_cast<int>(std::floor((pos.x() - kLeft) / w * length_));
  if (t < 0 || t >= length_ || layerCount() == 0) return;
  int best = 0;
  for (int r = 1; r <= layerCount(); ++r)
    if (std::abs(rowY(r) - pos.y()) < std::abs(rowY(best) - pos.y())) best = r;
  // A click on the input row selects that position at the top of the stack.
  select(t, best == 0 ? layerCount() - 1 : best - 1);
}

// What does not change with the selection, drawn once per size, model and length: the white
// ground, attention bands, every link, every node unlit, the row labels. A click or a step of
// the layer-by-layer animation then draws only the lit part over it (a multihead model at 128
// positions has ~8,000 links: 40 ms to draw them all on every paint).
void ReceptiveFieldDiagram::paintStatic(QPainter& p) {
  p.fillRect(rect(), Qt::white);
  const int rows = layerCount() + 1;
  const double colW = (width() - kLeft - kRight) / length_;
  const bool crowded = colW < 9;
  const double linkWidth = crowded ? 0.6 : 1.0;
  // Opaque colours: translucent antialiased lines blend 2-3x slower, and only crossings differ.
  const QPen identityPen(over_white(QColor(180, 180, 180, crowded ? 40 : 90)), linkWidth);
  const QPen linkPen(over_white(QColor(90, 110, 150, crowded ? 45 : 110)), linkWidth);
  QVector<QPair<QRectF, QString>> bandLabels;  // drawn last, between the node rows (issue 69: over the nodes)
  for (int l = 0; l < layerCount(); ++l) {
    const double yTop = rowY(l + 1), yBottom = rowY(l);
    if (dense_[l]) {  // a shaded band, not T² links
      p.fillRect(QRectF(kLeft, yTop, width() - kLeft - kRight, yBottom - yTop), QColor(120, 140, 200, 38));
      p.setPen(QColor(70, 80, 130));
      const std::string& id = mixers_[static_cast<size_t>(l)];
      const hsm::MixerFamily family =
          hsm::is_mixer_id(id) ? hsm::mixer_info(id).family : hsm::MixerFamily::kAttention;
      const QString who = family == hsm::MixerFamily::kAttention ? tr("attention")
                          : family == hsm::MixerFamily::kExtractor
                              ? tr("%1 (extractor, window = context)").arg(QString::fromStdString(id))
                              : QString::fromStdString(id);
      bandLabels << qMakePair(QRectF(kLeft, yTop, width() - kLeft - kRight, yBottom - yTop),
                              tr("%1: every earlier position and its own").arg(who));
      continue;
    }
    QVector<QLineF> identity, shifted;
    for (int t = 0; t < length_; ++t) {
      const QPointF top(columnX(t), yTop);
      identity << QLineF(top, QPointF(columnX(t), yBottom));  // the residual path, faint
      for (int64_t s : shifts_[l])
        if (t - s >= 0) shifted << QLineF(top, QPointF(columnX(static_cast<int>(t - s)), yBottom));
    }
    p.setPen(identityPen);
    p.drawLines(identity);
    p.setPen(linkPen);
    p.drawLines(shifted);
  }
  p.setPen(QPen(QColor(150, 150, 150), 0.8));
  p.setBrush(QColor(245, 245, 245));
  const double nodeR = nodeRadius();
  for (int r = 0; r < rows; ++r)
    for (int t = 0; t < length_; ++t) p.drawEllipse(nodeCenter(r, t), nodeR, nodeR);
  p.setBrush(Qt::NoBrush);
  p.setFont(labelFont());
  p.setPen(QColor(40, 40, 40));
  for (int r = 0; r < rows; ++r) p.drawText(rowLabelRect(r), Qt::AlignRight | Qt::AlignVCenter, rowLabel(r));
  // A dense layer's words in the band's middle, on a white ground of their own, clear of the
  // node rows above and below it.
  const QFontMetricsF metrics(p.font());
  for (const auto& [band, text] : bandLabels) {
    QRectF box = metrics.boundingRect(band, Qt::AlignCenter, text).adjusted(-6, -1, 6, 1);
    const double room = band.height() - 2 * nodeR - 2;
    if (box.height() > room) box.setHeight(std::max(room, 0.0)), box.moveCenter(band.center());
    p.fillRect(box, QColor(255, 255, 255, 235));
    p.setPen(QColor(70, 80, 130));
    p.drawText(box, Qt::AlignCenter, text);
  }
}

QFont ReceptiveFieldDiagram::labelFont() const {
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  return small;
}

double ReceptiveFieldDiagram::nodeRadius() const {
  return std::clamp((width() - kLeft - kRight) / length_ * 0.3, 1.2, 4.0);
}

QRectF ReceptiveFieldDiagram::rowLabelRect(int row) const { return QRectF(2, rowY(row) - 9, kLeft - 8, 18); }

// The layer, its mixer and shifts ("L3 hsm_ab s=8", "L2 ab_mh ×8"), or "input".
QString ReceptiveFieldDiagram::rowLabel(int row) const {
  if (row == 0) return tr("input");
  const auto& s = shifts_[row - 1];
  QString mixer = QString::fromStdString(mixers_[row - 1]);
  // A variant (its id extends another mixer's: "hsm_ab_mh_ext") without the first word of
  // its id, which the variant shares, so it fits the margin: "ab_mh_ext".
  const bool variant = std::any_of(hsm::all_mixers().begin(), hsm::all_mixers().end(), [&](const hsm::MixerInfo& m) {
    return mixer.startsWith(QString::fromLatin1(m.id) + QLatin1Char('_'));
  });
  if (variant) mixer = mixer.section(QLatin1Char('_'), 1);
  QString label = tr("L%1 %2").arg(row - 1).arg(mixer);
  if (off_[static_cast<size_t>(row - 1)]) return label + tr(" off");  // knocked out: its residual only
  if (s.size() == 1)
    label += tr(" s=%1").arg(s[0]);
  else if (s.size() > 1)
    label += tr(" ×%1").arg(s.size());
  return label;
}

void ReceptiveFieldDiagram::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  staticLayer_ = QImage();
}

void ReceptiveFieldDiagram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const int rows = layerCount() + 1;
  if (rows < 2 || lit_.empty()) {
    p.fillRect(rect(), Qt::white);
    p.setPen(QColor(110, 110, 110));
    p.drawText(rect(), Qt::AlignCenter, tr("No layers."));
    return;
  }
  const qreal dpr = devicePixelRatioF();
  if (staticLayer_.isNull()) {
    staticLayer_ = QImage((QSizeF(size()) * dpr).toSize(), QImage::Format_ARGB32_Premultiplied);
    staticLayer_.setDevicePixelRatio(dpr);
    QPainter sp(&staticLayer_);
    sp.setRenderHint(QPainter::Antialiasing);
    paintStatic(sp);
  }
  p.drawImage(0, 0, staticLayer_);
  p.setRenderHint(QPainter::Antialiasing);
  const double colW = (width() - kLeft - kRight) / length_;
  const bool crowded = colW < 9;

  // The lit part: a cone in each attention band, the lit links, the lit nodes.
  for (int l = 0; l < layerCount(); ++l) {
    const double yTop = rowY(l + 1), yBottom = rowY(l);
    const auto& above = lit_[l + 1];
    if (dense_[l]) {
      int highest = -1;
      for (int t = 0; t < length_; ++t)
        if (above[t]) highest = t;
      if (highest >= 0) {
        QPolygonF cone;
        cone << QPointF(columnX(highest), yTop) << QPointF(columnX(0) - colW / 2, yBottom)
             << QPointF(columnX(highest), yBottom);
        p.setPen(Qt::NoPen);
        p.setBrush(QColor(kLit.red(), kLit.green(), kLit.blue(), 80));
        p.drawPolygon(cone);
        p.setBrush(Qt::NoBrush);
      }
      continue;
    }
    QVector<QLineF> lit;
    for (int t = 0; t < length_; ++t) {
      if (!above[t]) continue;
      const QPointF top(columnX(t), yTop);
      lit << QLineF(top, QPointF(columnX(t), yBottom));
      for (int64_t s : shifts_[l])
        if (t - s >= 0) lit << QLineF(top, QPointF(columnX(static_cast<int>(t - s)), yBottom));
    }
    // Many heads' lit links at once are drawn thinner and paler so the crossings stay readable.
    const bool dense = crowded || shifts_[l].size() > 2;
    p.setPen(QPen(dense ? over_white(QColor(kLit.red(), kLit.green(), kLit.blue(), 150)) : kLit, dense ? 1.0 : 2.0));
    p.drawLines(lit);
  }
  const double nodeR = nodeRadius();
  p.setPen(QPen(kLit.darker(130), 1));
  p.setBrush(kLit);
  for (int r = 0; r < rows; ++r)
    for (int t = 0; t < length_; ++t)
      if (lit_[r][t]) p.drawEllipse(nodeCenter(r, t), nodeR, nodeR);
  p.setBrush(QColor(200, 40, 20));
  p.drawEllipse(nodeCenter(layer_ + 1, token_), nodeR + 1.5, nodeR + 1.5);
  p.setBrush(Qt::NoBrush);

  // The selected row's label in red, over its unselected one.
  const QFont small = labelFont();
  p.setFont(small);
  p.fillRect(rowLabelRect(layer_ + 1), Qt::white);
  p.setPen(QColor(200, 40, 20));
  p.drawText(rowLabelRect(layer_ + 1), Qt::AlignRight | Qt::AlignVCenter, rowLabel(layer_ + 1));
  // Position labels, thinned to fit; the selected one always.
  int every = 1;
  while (every * colW < 22 && every < length_) every *= 2;
  QFont bold = small;
  bold.setBold(true);
  for (int t = 0; t < length_; ++t) {
    const bool selected = t == token_;
    if (!selected && t % every != 0) continue;
    if (!selected && std::abs(t - token_) * colW < 18) continue;
    p.setFont(selected ? bold : small);
    p.setPen(selected ? QColor(200, 40, 20) : QColor(60, 60, 60));
    p.drawText(QRectF(columnX(t) - 20, rowY(0) + 6, 40, 16), Qt::AlignHCenter | Qt::AlignTop, QString::number(t));
  }
  p.setFont(small);
  p.setPen(QColor(90, 90, 90));
  const std::vector<int64_t> offsets = litOffsets();
  p.drawText(QRectF(kLeft, height() - 16, width() - kLeft - kRight, 16), Qt::AlignLeft | Qt::AlignVCenter,
             tr("position %1 after layer %2 reads %3 of its %4 inputs (lit)")
                 .arg(token_)
                 .arg(layer_)
                 .arg(offsets.size())
                 .arg(token_ + 1));
}

}  // namespace studio
