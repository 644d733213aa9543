#pragma once
// The Weights view (SPEC §6.3): the learned a and b of every scalar HSM (a,b) layer as
// grouped bars (HSM Table 2), live while the current run trains and fetched again when the
// current run changes; the end-to-end offset weights of an all-(a,b) stack (SPEC §3.2);
// hsm_ab_vec's a and b as a layer × channel heatmap; the multihead variants' per-head
// shifts, a and b as a layer × head table. Layers without such weights are named in words.
#include <QWidget>
#include <vector>

#include "hsm/diagnostics.h"

class QCPBars;
class QLabel;
class QTableWidget;

namespace studio {

class EngineHost;
class HeatmapPanel;
class PlotPanel;
class RunList;

class WeightsView : public QWidget {
  Q_OBJECT
 public:
  WeightsView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  // Fetches the current run's weights from its checkpoint (on the session thread).
  void refresh();
  bool isWaiting() const { return request_ != 0; }
  // Shows a set of weights (what refresh() and the live updates call).
  void showWeights(const QString& runDir, qint64 step, const std::vector<hsm::MixerWeights>& layers);
  const std::vector<hsm::MixerWeights>& weights() const { return weights_; }
  QString shownRun() const { return shownRun_; }

  QCPBars* barsA() const { return barsA_; }
  QCPBars* barsB() const { return barsB_; }
  PlotPanel* abPlot() const { return abPlot_; }
  PlotPanel* offsetPlot() const { return offsetPlot_; }
  HeatmapPanel* vectorHeatmap() const { return vectorMap_; }
  QTableWidget* headTable() const { return headTable_; }
  QString notes() const;
  QList<PlotPanel*> plots() const;

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void onCurrentChanged();
  void drawBars();
  void drawOffsets();
  bool drawLagWeights();  // extractor layers: weight per lag; false when there are none
  void drawVectors();
  void fillHeadTable();

  RunList* runs_;
  EngineHost* engine_;
  QLabel* header_;
  QLabel* notes_;
  PlotPanel* abPlot_;
  QCPBars* barsA_;
  QCPBars* barsB_;
  PlotPanel* offsetPlot_;
  HeatmapPanel* vectorMap_;
  QTableWidget* headTable_;
  QLabel* headNote_;
  QWidget* headBox_;
  class QSplitter* bottom_;
  std::vector<hsm::MixerWeights> weights_;
  QString shownRun_;
  qint64 step_ = -1;
  int request_ = 0;
  bool dirty_ = true;
};

}  // namespace studio
