#pragma once
// A matrix as a heatmap: a PlotPanel (title bar, zoom, PNG/PDF/SVG/CSV export) holding one
// QCPColorMap with a colour scale. Rows run down from the top as in a printed matrix; rows
// and columns carry text labels (token pieces, layer names), thinned when crowded; hovering
// a cell shows its row, column and exact value. Used for attention / mixing matrices, the
// layer × indicator overview and the layer × channel a/b vectors.
#include <QStringList>
#include <QVector>
#include <vector>

#include "gui/widgets/plot_panel.h"

class QCPColorMap;
class QCPColorScale;
class QCPItemText;
class QLabel;

namespace studio {

class HeatmapPanel : public PlotPanel {
  Q_OBJECT
 public:
  enum class Palette {
    kSequential,  // white → blue, from min(0, lowest) to the highest value
    kDiverging,   // red → white → blue, symmetric around 0
  };
  HeatmapPanel(const QString& title, const QString& xLabel, const QString& yLabel, QWidget* parent = nullptr);

  // values: row-major rows × cols. Empty label lists number the rows / columns.
  void setMatrix(int rows, int cols, const std::vector<double>& values, const QStringList& rowLabels = {},
                 const QStringList& colLabels = {}, Palette palette = Palette::kSequential);
  // Rows whose labels are shown however many are thinned out (a task example's answer rows),
  // for the next setMatrix; empty: none.
  void setPinnedRows(const QVector<int>& rows);
  // No data: an empty plot saying why.
  void clearWithMessage(const QString& message);
  void setScaleLabel(const QString& label);
  QString scaleLabel() const { return scaleLabel_; }  // as set (shown whole, on lines that fit the scale)

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  // The value the colour map holds at (row, col); NaN outside.
  double value(int row, int col) const;
  // What hovering the cell shows: row and column with their labels, and the exact value.
  QString hoverText(int row, int col) const;
  QString message() const { return message_; }
  QCPColorMap* colorMap() const { return map_; }

 signals:
  void hovered(const QString& text);

 private:
  void applyLabels();
  void fitScaleLabel();
  // How many tick labels fit along the x (rotated) and y axes at the plot's present size.
  QPair<int, int> labelsThatFit() const;
  QString csv() const;

  QCPColorMap* map_;
  QCPColorScale* scale_;
  QCPItemText* messageItem_;
  QLabel* hoverLabel_;
  int rows_ = 0, cols_ = 0;
  std::vector<double> values_;
  QStringList rowLabels_, colLabels_;
  QVector<int> pinnedRows_;
  QString message_;
  QString scaleLabel_;                 // as set; shown whole (fitScaleLabel)
  QFont scaleFont_;                    // the scale label's own font (shrunk to fit)
  QPair<int, int> labelsShown_{0, 0};  // what applyLabels() last fitted
};

}  // namespace studio
