#pragma once
// The receptive-field diagram in the style of HSM Figure 4: token positions along the
// bottom, one row per layer above them, each layer's mixed pairs drawn as links (an HSM
// layer with shift s links position t to t - s; a multihead layer draws one link per head
// shift; an attention layer reaches every earlier position and is drawn as a shaded band,
// not T² lines). Click a node: the output token at that layer and every path that reaches
// it light up down to the inputs, whose offsets are exactly receptive_field().offsets().
// Crowded lengths (up to 128) are summarised: thin faint links, thinned position labels.
#include <QImage>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "hsm/config.h"
#include "hsm/knock_out.h"

namespace studio {

class ReceptiveFieldDiagram : public QWidget {
  Q_OBJECT
 public:
  explicit ReceptiveFieldDiagram(QWidget* parent = nullptr);

  void setConfig(const hsm::ModelConfig& config);
  // What-if knock-outs (issue 23): a knocked-out layer keeps only its residual path (each
  // position reads itself); a knocked-out head of a multihead shift layer drops its shift.
  void setKnockOuts(const std::vector<hsm::KnockOut>& knockOuts);
  void setLength(int tokens);  // 8..128 positions drawn
  int length() const { return length_; }
  int layerCount() const { return static_cast<int>(shifts_.size()); }
  // The output token (0..length-1) and the layer (0-based) whose receptive field is lit.
  void select(int token, int layer);
  int selectedToken() const { return token_; }
  int selectedLayer() const { return layer_; }

  // Offsets t - j of the input positions j lit for the selection, ascending: what the
  // diagram shows, traced back through the drawn links (not read from receptive_field()).
  std::vector<int64_t> litOffsets() const;
  // Positions lit in row r (0 = the inputs, r = l + 1 the output of layer l).
  std::vector<int> litPositions(int row) const;
  // The centre of the node of position t in row r, in widget coordinates (click target).
  QPointF nodeCenter(int row, int t) const;

  QSize sizeHint() const override { return {900, 380}; }
  QSize minimumSizeHint() const override { return {320, 160}; }

 signals:
  void selectionChanged(int token, int layer);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  void rebuild();
  void trace();
  void paintStatic(QPainter& p);
  QFont labelFont() const;
  double nodeRadius() const;
  QRectF rowLabelRect(int row) const;
  QString rowLabel(int row) const;
  double rowY(int row) const;
  double columnX(int t) const;

  hsm::ModelConfig config_;
  std::vector<hsm::KnockOut> knockOuts_;
  std::vector<std::string> mixers_;
  std::vector<std::vector<int64_t>> shifts_;  // per layer; empty = attention (or DA's mlp: see dense_)
  std::vector<bool> dense_;
  std::vector<bool> off_;                     // per layer: knocked out (setKnockOuts)                   // per layer: reads every earlier position (attention, DA)
  int length_ = 32;
  int token_ = 31;
  int layer_ = 0;
  std::vector<std::vector<bool>> lit_;  // per row (layers + 1), per position
  QImage staticLayer_;                  // paintStatic's drawing; null when it must be redrawn
};

}  // namespace studio
