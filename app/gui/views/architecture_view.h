#pragma once
// The Architecture view (README.md, "The studio"): a preset picker and a per-layer editor (mixer, FFN
// width, heads) with the parameter count per layer and in total (hsm::count_params), FFN
// matching to a target count (hsm::match_ffn), "Train this" and "Save config…"; the
// receptive-field diagram of HSM Figure 4 with its coverage per layer; and the cost per
// token against the context length of attention and each HSM mixer (hsm/cost.h).
#include <QWidget>

#include "gui/views/studio_view.h"
#include "hsm/config.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QSpinBox;
class QTableWidget;

namespace studio {

class PlotPanel;
class ReceptiveFieldDiagram;
class RunList;

class ArchitectureView : public StudioView {
  Q_OBJECT
 public:
  explicit ArchitectureView(RunList* runs, QWidget* parent = nullptr);

  bool setPreset(const QString& name);  // false (reason shown) for an unknown name
  void setConfig(const hsm::ModelConfig& config);
  // The model as the editor holds it (validated by the caller: see error()).
  hsm::ModelConfig config() const;
  // Editing through the table's widgets, as a user would.
  void setLayerFfn(int layer, int ffn);
  void setLayerMixer(int layer, const QString& mixer);
  void setLayerHeads(int layer, int heads);
  int layerCount() const;
  // The total shown (-1 while the config is invalid) and the per-layer totals shown.
  qint64 totalParams() const { return total_; }
  qint64 layerParams(int layer) const;
  QString error() const { return error_; }  // hsm::validate's message, empty when valid

  // As the "Match parameters" button with this target in the field; false when refused.
  bool matchParameters(qint64 target);
  QLineEdit* targetField() const { return target_; }
  // Writes the config as JSON; returns the reason on failure.
  QString saveConfig(const QString& path) const;
  // As "Train this": saves the config under the app's data folder and emits trainRequested.
  QString trainThis();

  // Whose model is shown: "The model of run X …" or "The preset X …".
  QString modelSource() const;

  ReceptiveFieldDiagram* diagram() const { return diagram_; }
  PlotPanel* coveragePlot() const { return coverage_; }
  PlotPanel* costPlot() const { return cost_; }
  QList<PlotPanel*> plots() const override;

 signals:
  void trainRequested(const QString& configPath);

 private:
  void build();
  void buildModelControls();  // the preset, the sizes and the layer table
  void buildTotalControls();  // the parameter total, the match to a target, save and train
  QWidget* buildEditor();
  void buildDiagramControls();
  QWidget* buildReceptiveField();
  void placeCostLegend();
  void connectSignals();
  void showRun() override;
  void showRunModel();  // the current run's own config in the editor
  QPushButton* fromRunButton_;
  QPushButton* addLayerButton_;
  QPushButton* removeLayerButton_;
  QPushButton* matchButton_;
  QPushButton* trainButton_;
  QPushButton* saveButton_;
  QPushButton* animateButton_;
  void rebuildTable();
  void addRow(int row);
  void onEdited();
  void refreshCounts();
  void refreshDiagram();
  void refreshCost();
  void saveDialog();

  hsm::ModelConfig base_;  // name, description, sizes; layers come from the table
  QComboBox* preset_;
  QSpinBox* dModel_;
  QSpinBox* context_;
  QSpinBox* vocab_;
  QTableWidget* table_;
  QLabel* totalLabel_;
  QLabel* errorLabel_;
  QLineEdit* target_;
  QLabel* matchLabel_;
  QSpinBox* length_;
  QSlider* layerSlider_;
  QLabel* selectionLabel_;
  ReceptiveFieldDiagram* diagram_;
  PlotPanel* coverage_;
  PlotPanel* cost_;
  qint64 total_ = -1;
  QVector<qint64> layerTotals_;
  QString error_;
  bool building_ = false;
  QLabel* source_;
  QString followedRun_;  // the run whose model the view last took
};

}  // namespace studio
