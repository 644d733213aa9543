#pragma once
// The Weights view's what-if controls (issue 23): per layer a "knocked out" box, per separable
// head another; spin boxes for a and b where the layer has them (one pair per head for the
// multihead (a,b) mixers; one value setting every channel for the vector (a,b) mixer). A change
// (debounced) emits the edits as an hsm::WhatIf; only touched values become edits, so an
// untouched spin box never rounds a trained value. Plain widgets: the view talks to the engine.
#include <QWidget>
#include <vector>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "hsm/what_if.h"

class QCheckBox;
class QDoubleSpinBox;
class QGridLayout;
class QTimer;

namespace studio {

class WhatIfEditor : public QWidget {
  Q_OBJECT
 public:
  explicit WhatIfEditor(QWidget* parent = nullptr);

  // Builds the controls for a model: its layers (config) and trained weights. Clears every edit.
  void setModel(const hsm::ModelConfig& config, const std::vector<hsm::MixerWeights>& trained);
  // New trained weights of the same model (a run training live): untouched controls show them,
  // touched ones keep the user's value; edits() then fills untouched values from these.
  // No signal. A model of another shape is ignored (setModel is for that).
  void updateTrained(const std::vector<hsm::MixerWeights>& trained);
  // Every control back to the trained values (no signal).
  void reset();
  // The controls set to hold `edits` (no signal): a run's edits shown again when the view comes
  // back to it. Edits of layers or heads the model has no control for are left out; a value
  // equal to the trained one is not an edit. edits() then gives them back.
  void setEdits(const hsm::WhatIf& edits);
  // The edits the controls hold now.
  hsm::WhatIf edits() const;
  // The trained weights with the edits applied (a knocked-out layer or head: a = b = 0, its
  // mixer output is zero): what the bars and the offset weights draw.
  std::vector<hsm::MixerWeights> editedWeights() const;

  // Object names the tests use: ko_L<l>, ko_L<l>_H<j>, a_L<l>, b_L<l>, a_L<l>_H<j>, b_L<l>_H<j>.
  QCheckBox* knockOutBox(int layer, int head = -1) const;
  QDoubleSpinBox* spinBox(char which, int layer, int head = -1) const;

  static constexpr int kDebounceMs = 300;

 signals:
  void editsChanged(const hsm::WhatIf& edits);  // debounced

 private:
  struct AbControl {
    int layer = 0;
    int head = -1;           // -1: the whole layer (scalar, or every channel of a vector layer)
    float trainedA = 0, trainedB = 0;
    QDoubleSpinBox* a = nullptr;
    QDoubleSpinBox* b = nullptr;
    bool touchedA = false, touchedB = false;  // set by the user: only these become edits
  };
  QDoubleSpinBox* makeSpin(const QString& name, double value);
  void changed();

  hsm::ModelConfig config_;
  std::vector<hsm::MixerWeights> trained_;
  std::vector<AbControl> ab_;
  std::vector<std::pair<hsm::KnockOut, QCheckBox*>> knockOuts_;
  QGridLayout* grid_;
  QWidget* body_ = nullptr;
  QTimer* debounce_;
  bool building_ = false;
};

}  // namespace studio
