#include "gui/views/what_if_editor.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QLabel>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <numeric>

#include "hsm/mixer_kind.h"

namespace studio {
namespace {

QString control_name(const char* what, int layer, int head) {
  return head < 0 ? QStringLiteral("%1_L%2").arg(QLatin1String(what)).arg(layer)
                  : QStringLiteral("%1_L%2_H%3").arg(QLatin1String(what)).arg(layer).arg(head);
}

float mean(const std::vector<float>& v) {
  return v.empty() ? 0.f : std::accumulate(v.begin(), v.end(), 0.f) / static_cast<float>(v.size());
}

}  // namespace

WhatIfEditor::WhatIfEditor(QWidget* parent) : QWidget(parent) {
  grid_ = nullptr;
  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(kDebounceMs);
  connect(debounce_, &QTimer::timeout, this, [this] { emit editsChanged(edits()); });
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addStretch(1);
}

QDoubleSpinBox* WhatIfEditor::makeSpin(const QString& name, double value) {
  auto* spin = new QDoubleSpinBox;
  spin->setObjectName(name);
  spin->setRange(-20, 20);
  spin->setDecimals(3);
  spin->setSingleStep(0.05);
  spin->setValue(value);
  spin->setKeyboardTracking(false);
  return spin;
}

void WhatIfEditor::setModel(const hsm::ModelConfig& config, const std::vector<hsm::MixerWeights>& trained) {
  config_ = config;
  trained_ = trained;
  ab_.clear();
  knockOuts_.clear();
  debounce_->stop();
  delete body_;
  body_ = new QWidget;
  grid_ = new QGridLayout(body_);
  grid_->setContentsMargins(0, 0, 0, 0);
  grid_->setHorizontalSpacing(6);
  grid_->setVerticalSpacing(2);
  building_ = true;
  int row = 0;
  grid_->addWidget(new QLabel(tr("<b>Layer</b>")), row, 0);
  grid_->addWidget(new QLabel(tr("<b>Knock out</b>")), row, 1);
  grid_->addWidget(new QLabel(tr("<b>a</b>")), row, 2);
  grid_->addWidget(new QLabel(tr("<b>b</b>")), row, 3);
  ++row;
  auto addKnockOut = [&](int layer, int head, int r) {
    auto* box = new QCheckBox;
    box->setObjectName(control_name("ko", layer, head));
    box->setToolTip(head < 0 ? tr("Layer %1's mixer output replaced by zero (the residual stream and the FFN stay)")
                                   .arg(layer)
                             : tr("Head %1 of layer %2 replaced by zero").arg(head).arg(layer));
    connect(box, &QCheckBox::toggled, this, &WhatIfEditor::changed);
    knockOuts_.push_back({hsm::KnockOut{layer, head}, box});
    grid_->addWidget(box, r, 1, Qt::AlignCenter);
  };
  auto addAb = [&](int layer, int head, float a, float b, int r, const QString& tip) {
    AbControl c{layer, head, a, b, makeSpin(control_name("a", layer, head), a), makeSpin(control_name("b", layer, head), b)};
    c.a->setToolTip(tip);
    c.b->setToolTip(tip);
    const size_t index = ab_.size();
    for (QDoubleSpinBox* spin : {c.a, c.b})
      connect(spin, &QDoubleSpinBox::valueChanged, this, [this, index, isA = spin == c.a] {
        if (building_) return;
        (isA ? ab_[index].touchedA : ab_[index].touchedB) = true;
        changed();
      });
    grid_->addWidget(c.a, r, 2);
    grid_->addWidget(c.b, r, 3);
    ab_.push_back(c);
  };
  for (size_t l = 0; l < config.layers.size(); ++l) {
    const int layer = static_cast<int>(l);
    const hsm::LayerSpec& spec = config.layers[l];
    const hsm::MixerWeights* w = l < trained.size() ? &trained[l] : nullptr;
    const bool multi = hsm::is_mixer_id(spec.mixer) && hsm::mixer_info(spec.mixer).multi_head && spec.heads > 1;
    const bool perHead = w && w->has_weights() && w->shifts.size() > 1 && w->a.size() == w->shifts.size();
    QString title = tr("L%1 %2").arg(layer).arg(QString::fromStdString(spec.mixer));
    if (w && w->shifts.size() == 1) title += tr(" (shift %1)").arg(w->shifts[0]);
    grid_->addWidget(new QLabel(title), row, 0);
    addKnockOut(layer, -1, row);
    if (w && w->has_weights() && !perHead) {
      const bool vector = w->a.size() > 1;
      if (vector) {
        auto* note = new QLabel(tr("  every channel (trained mean shown)"));
        note->setStyleSheet(QStringLiteral("color: #666;"));
        grid_->addWidget(note, row + 1, 0, 1, 4);
      }
      addAb(layer, -1, mean(w->a), mean(w->b), row,
            vector ? tr("Sets every channel's a (b) to this value; the trained per-channel mean is shown")
                   : tr("Layer %1's learned a (identity) and b (shifted)").arg(layer));
      row += vector ? 2 : 1;
      continue;
    }
    ++row;
    if (!multi && !perHead) continue;
    const int heads = perHead ? static_cast<int>(w->shifts.size()) : static_cast<int>(spec.heads);
    for (int j = 0; j < heads; ++j) {
      grid_->addWidget(new QLabel(perHead ? tr("   head %1 (shift %2)").arg(j).arg(w->shifts[static_cast<size_t>(j)])
                                          : tr("   head %1").arg(j)),
                       row, 0);
      addKnockOut(layer, j, row);
      if (perHead)
        addAb(layer, j, w->a[static_cast<size_t>(j)], w->b[static_cast<size_t>(j)], row,
              tr("Head %1 of layer %2: a and b").arg(j).arg(layer));
      ++row;
    }
  }
  grid_->setRowStretch(row, 1);
  building_ = false;
  static_cast<QVBoxLayout*>(layout())->insertWidget(0, body_);
}

void WhatIfEditor::changed() {
  if (!building_) debounce_->start();
}

void WhatIfEditor::updateTrained(const std::vector<hsm::MixerWeights>& trained) {
  if (trained.size() != trained_.size()) return;
  for (size_t l = 0; l < trained.size(); ++l)
    if (trained[l].a.size() != trained_[l].a.size() || trained[l].b.size() != trained_[l].b.size()) return;
  trained_ = trained;
  building_ = true;
  for (AbControl& c : ab_) {
    const hsm::MixerWeights& w = trained_[static_cast<size_t>(c.layer)];
    const auto value = [&](const std::vector<float>& v) { return c.head < 0 ? mean(v) : v[static_cast<size_t>(c.head)]; };
    c.trainedA = value(w.a);
    c.trainedB = value(w.b);
    if (!c.touchedA) c.a->setValue(c.trainedA);
    if (!c.touchedB) c.b->setValue(c.trainedB);
  }
  building_ = false;
}

void WhatIfEditor::reset() {
  debounce_->stop();
  building_ = true;
  for (AbControl& c : ab_) {
    c.a->setValue(c.trainedA);
    c.b->setValue(c.trainedB);
    c.touchedA = c.touchedB = false;
  }
  for (auto& [k, box] : knockOuts_) box->setChecked(false);
  building_ = false;
  debounce_->stop();
}

void WhatIfEditor::setEdits(const hsm::WhatIf& edits) {
  reset();
  building_ = true;
  for (auto& [k, box] : knockOuts_)
    box->setChecked(std::find(edits.knock_out.begin(), edits.knock_out.end(), k) != edits.knock_out.end());
  for (const hsm::AbEdit& e : edits.ab) {
    if (e.layer < 0 || e.layer >= static_cast<int64_t>(trained_.size())) continue;
    const hsm::MixerWeights& t = trained_[static_cast<size_t>(e.layer)];
    if (e.a.size() != t.a.size() || e.b.size() != t.b.size()) continue;
    for (AbControl& c : ab_) {
      if (c.layer != static_cast<int>(e.layer)) continue;
      // The layer's value (every channel set alike by this editor) or one head's.
      auto show = [&](const std::vector<float>& edited, const std::vector<float>& trained, QDoubleSpinBox* spin,
                      bool& touched) {
        const size_t i = c.head < 0 ? 0 : static_cast<size_t>(c.head);
        if (i >= edited.size()) return;
        touched = c.head < 0 ? edited != trained : edited[i] != trained[i];
        if (touched) spin->setValue(edited[i]);
      };
      show(e.a, t.a, c.a, c.touchedA);
      show(e.b, t.b, c.b, c.touchedB);
    }
  }
  building_ = false;
  debounce_->stop();
}

hsm::WhatIf WhatIfEditor::edits() const {
  hsm::WhatIf w;
  for (const auto& [k, box] : knockOuts_)
    if (box->isChecked()) w.knock_out.push_back(k);
  // One AbEdit per layer: the touched values, the trained ones elsewhere.
  for (size_t l = 0; l < trained_.size(); ++l) {
    bool any = false;
    for (const AbControl& c : ab_) any = any || (c.layer == static_cast<int>(l) && (c.touchedA || c.touchedB));
    if (!any) continue;
    const hsm::MixerWeights& t = trained_[l];
    hsm::AbEdit e{static_cast<int64_t>(l), t.a, t.b};
    for (const AbControl& c : ab_) {
      if (c.layer != static_cast<int>(l)) continue;
      // A scalar layer's value, every channel of a vector layer, or one head's.
      auto set = [&](std::vector<float>& v, double value) {
        if (c.head < 0)
          v.assign(v.size(), static_cast<float>(value));
        else
          v[static_cast<size_t>(c.head)] = static_cast<float>(value);
      };
      if (c.touchedA) set(e.a, c.a->value());
      if (c.touchedB) set(e.b, c.b->value());
    }
    w.ab.push_back(e);
  }
  return w;
}

std::vector<hsm::MixerWeights> WhatIfEditor::editedWeights() const {
  std::vector<hsm::MixerWeights> out = trained_;
  const hsm::WhatIf w = edits();
  for (const hsm::AbEdit& e : w.ab) {
    hsm::MixerWeights& m = out[static_cast<size_t>(e.layer)];
    m.a = e.a;
    m.b = e.b;
  }
  for (const hsm::KnockOut& k : w.knock_out) {
    if (k.layer < 0 || k.layer >= static_cast<int64_t>(out.size())) continue;
    hsm::MixerWeights& m = out[static_cast<size_t>(k.layer)];
    if (k.head < 0) {
      std::fill(m.a.begin(), m.a.end(), 0.f);
      std::fill(m.b.begin(), m.b.end(), 0.f);
    } else if (m.a.size() == m.shifts.size() && k.head < static_cast<int64_t>(m.a.size())) {
      m.a[static_cast<size_t>(k.head)] = m.b[static_cast<size_t>(k.head)] = 0.f;
    }
  }
  return out;
}

QCheckBox* WhatIfEditor::knockOutBox(int layer, int head) const {
  return body_ ? body_->findChild<QCheckBox*>(control_name("ko", layer, head)) : nullptr;
}

QDoubleSpinBox* WhatIfEditor::spinBox(char which, int layer, int head) const {
  const char name[2] = {which, 0};
  return body_ ? body_->findChild<QDoubleSpinBox*>(control_name(name, layer, head)) : nullptr;
}

}  // namespace studio
