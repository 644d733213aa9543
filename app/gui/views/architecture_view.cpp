#include "gui/views/architecture_view.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "gui/engine_types.h"
#include "gui/widgets/glossary.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/receptive_field_diagram.h"
#include "gui/widgets/colour_maps.h"
#include "gui/widgets/layout_helpers.h"
#include "hsm/cost.h"
#include "hsm/mixer_kind.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/receptive_field.h"

namespace studio {
namespace {

enum Column { kLayer = 0, kMixer, kFfn, kHeads, kMixerParams, kFfnParams, kLayerTotal, kColumns };

QColor series_color(int i) {
  // tab10 without grey, red first: red, blue, green, purple, orange, brown, cyan, olive, pink.
  constexpr int kOrder[] = {3, 0, 2, 4, 1, 5, 9, 8, 6};
  return colours::category10(kOrder[i % 9]);
}

}  // namespace

ArchitectureView::ArchitectureView(RunList* runs, QWidget* parent) : StudioView(runs, nullptr, parent) {
  build();
  connectSignals();
  setPreset(preset_->findText(QStringLiteral("hsm_ab")) >= 0 ? QStringLiteral("hsm_ab") : preset_->itemText(0));
}

void ArchitectureView::build() {
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(buildEditor());            // left: the model editor
  split->addWidget(buildReceptiveField());    // right: the receptive-field diagram, coverage and cost
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  split->setSizes({620, 880});
  placeCostLegend();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split);
}

void ArchitectureView::buildModelControls() {
  preset_ = new QComboBox;
  preset_->setObjectName(QStringLiteral("arch_preset"));
  for (const std::string& name : hsm::preset_names()) preset_->addItem(qstr(name));
  help::setPresetToolTips(preset_);
  fromRunButton_ = new QPushButton(tr("From current run"));
  fromRunButton_->setToolTip(tr("Load the model of the run selected in the toolbar"));
  dModel_ = new QSpinBox;
  dModel_->setRange(8, 4096);
  dModel_->setSingleStep(8);
  context_ = new QSpinBox;
  context_->setRange(2, 8192);
  vocab_ = new QSpinBox;
  vocab_->setRange(260, 1000000);
  for (QSpinBox* s : {dModel_, context_, vocab_}) s->setKeyboardTracking(false);
  table_ = new QTableWidget(0, kColumns);
  table_->setObjectName(QStringLiteral("layer_table"));
  table_->setHorizontalHeaderLabels(
      {tr("Layer"), tr("Mixer"), tr("FFN"), tr("Heads"), tr("Mixer params"), tr("FFN params"), tr("Layer total")});
  table_->verticalHeader()->setVisible(false);
  // Every column as wide as its contents, the mixer's names whole (issue 48: stretched, the Mixer
  // column was squeezed to nothing at 1024 px by the numbers beside it); the last column takes
  // what is left, and a narrow pane scrolls.
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  addLayerButton_ = new QPushButton(tr("+ Layer"));
  removeLayerButton_ = new QPushButton(tr("− Layer"));
  removeLayerButton_->setToolTip(tr("Remove the selected layer (or the last)"));
}

void ArchitectureView::buildTotalControls() {
  totalLabel_ = new QLabel;
  totalLabel_->setObjectName(QStringLiteral("total_params"));
  totalLabel_->setWordWrap(true);
  totalLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  errorLabel_ = new QLabel;
  errorLabel_->setObjectName(QStringLiteral("config_error"));
  errorLabel_->setWordWrap(true);
  errorLabel_->setStyleSheet(QStringLiteral("color: #b00020;"));
  errorLabel_->hide();
  target_ = new QLineEdit;
  target_->setObjectName(QStringLiteral("target_params"));
  try {
    target_->setText(QString::number(hsm::count_params(hsm::load_preset("gpt")).total()));
  } catch (const std::exception&) {
  }
  target_->setToolTip(tr("Parameter count to match; the default is the GPT preset's"));
  matchButton_ = new QPushButton(tr("Match parameters"));
  matchButton_->setObjectName(QStringLiteral("match_params"));
  matchButton_->setToolTip(
      tr("Choose one FFN width (a multiple of 64) for the HSM layers so the total comes closest "
         "to the target (HSM §6.1)"));
  matchLabel_ = new QLabel;
  matchLabel_->setWordWrap(true);
  trainButton_ = new QPushButton(tr("Train this"));
  trainButton_->setObjectName(QStringLiteral("train_this"));
  trainButton_->setToolTip(tr("Open this model in the Training view"));
  saveButton_ = new QPushButton(tr("Save config…"));
  saveButton_->setObjectName(QStringLiteral("save_config"));
}

QWidget* ArchitectureView::buildEditor() {
  buildModelControls();
  buildTotalControls();
  auto* editor = new QWidget;
  auto* el = new QVBoxLayout(editor);
  el->addLayout(makeRow({new QLabel(tr("Preset")), preset_, fromRunButton_}, {preset_}));
  // Whose model the editor holds: the current run's own config, or a preset chosen.
  source_ = new QLabel;
  source_->setObjectName(QStringLiteral("arch_source"));
  source_->setWordWrap(true);
  el->addWidget(source_);
  QHBoxLayout* sizes = makeRow({new QLabel(tr("d_model")), dModel_, new QLabel(tr("context")), context_,
                                new QLabel(tr("vocab")), vocab_});
  sizes->addStretch(1);
  el->addLayout(sizes);
  el->addWidget(table_, 1);
  QHBoxLayout* layerButtons = makeRow({addLayerButton_, removeLayerButton_});
  layerButtons->addStretch(1);
  el->addLayout(layerButtons);
  el->addWidget(totalLabel_);
  el->addWidget(errorLabel_);
  el->addLayout(makeRow({new QLabel(tr("Target")), target_, matchButton_}, {target_}));
  el->addWidget(matchLabel_);
  auto* actions = new QHBoxLayout;
  actions->addStretch(1);
  actions->addWidget(saveButton_);
  actions->addWidget(trainButton_);
  el->addLayout(actions);
  editor->setMinimumWidth(470);
  return editor;
}

void ArchitectureView::buildDiagramControls() {
  length_ = new QSpinBox;
  length_->setObjectName(QStringLiteral("rf_length"));
  length_->setRange(8, 128);
  length_->setValue(32);
  length_->setToolTip(tr("Positions drawn (8..128)"));
  layerSlider_ = new QSlider(Qt::Horizontal);
  layerSlider_->setObjectName(QStringLiteral("rf_layer"));
  layerSlider_->setPageStep(1);
  layerSlider_->setToolTip(tr("Light the receptive field after this layer"));
  animateButton_ = new QPushButton(tr("▶ Layer by layer"));
  animateButton_->setToolTip(tr("Step the lit receptive field through the layers"));
  selectionLabel_ = new QLabel;
  diagram_ = new ReceptiveFieldDiagram;
  coverage_ = new PlotPanel(tr("Receptive-field coverage"), tr("layer"), tr("offsets reached"));
  coverage_->setToolTip(tr("How many of the drawn positions reach the last one after each layer"));
  coverage_->plot()->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
  coverage_->setObjectName(QStringLiteral("coverage_plot"));
  cost_ = new PlotPanel(tr("Cost per token per layer"), tr("context length T"), tr("multiply-adds"));
  cost_->setObjectName(QStringLiteral("cost_plot"));
  cost_->setToolTip(
      tr("Multiply-adds per token of one layer of each mixer family against the context length; "
         "dashed, this model's per layer: its mixers, FFNs and output layer over its layer count"));
}

QWidget* ArchitectureView::buildReceptiveField() {
  buildDiagramControls();
  auto* rfBox = new QWidget;
  auto* rl = new QVBoxLayout(rfBox);
  rl->setContentsMargins(0, 0, 0, 0);
  auto* rfTitle = new QLabel(tr("<b>Receptive field</b> (HSM Fig. 4) · positions"));
  rfTitle->setToolTip(help::termToolTip(help::Term::kReceptiveField));
  rl->addLayout(makeRow({rfTitle, length_, new QLabel(tr("after layer")), layerSlider_, animateButton_}, {layerSlider_}));
  rl->addWidget(diagram_, 1);
  rl->addWidget(selectionLabel_);
  // The two plots one at a time, each the pane's whole width (issue 69: side by side at 1024x600
  // their axes were 35 px high and their labels cut, "multiply-…", "Recep…").
  auto* plots = new QTabWidget;
  plots->setObjectName(QStringLiteral("architecture_plots"));
  plots->setDocumentMode(true);
  plots->addTab(coverage_, tr("Coverage per layer"));
  plots->addTab(cost_, tr("Cost per token"));
  auto* right = new QSplitter(Qt::Vertical);
  right->addWidget(rfBox);
  right->addWidget(plots);
  right->setStretchFactor(0, 1);
  right->setStretchFactor(1, 1);
  return right;
}

void ArchitectureView::placeCostLegend() {
  // The cost plot's legend (up to seven mixer groups) sits right of the axes, not over the curves.
  QCustomPlot* cp = cost_->plot();
  cp->axisRect()->insetLayout()->take(cp->legend);
  cp->plotLayout()->addElement(0, 1, cp->legend);
  cp->plotLayout()->setColumnStretchFactor(1, 0.001);
  cp->legend->setMargins(QMargins(4, 2, 4, 2));
  // Seven entries in the pane's height at 1280×720: a smaller font, no row spacing.
  QFont legendFont = cp->legend->font();
  legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
  cp->legend->setFont(legendFont);
  cp->legend->setRowSpacing(0);
  cp->legend->setIconSize(16, 8);
  // One entry a row: the panel's legend filled its columns first (its place under the axes), which
  // beside them made one row of seven entries and left the axes 40 px wide at 1024x600.
  cp->legend->setWrap(0);
  cp->legend->setFillOrder(QCPLayoutGrid::foRowsFirst, true);
}

void ArchitectureView::connectSignals() {
  connect(preset_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
    if (!building_) setPreset(name);
  });
  connect(fromRunButton_, &QPushButton::clicked, this, [this] { showRunModel(); });
  for (QSpinBox* s : {dModel_, context_, vocab_}) connect(s, &QSpinBox::valueChanged, this, [this] { onEdited(); });
  connect(addLayerButton_, &QPushButton::clicked, this, [this] {
    hsm::ModelConfig c = config();
    c.layers.push_back(c.layers.empty() ? hsm::LayerSpec{} : c.layers.back());
    setConfig(c);
  });
  connect(removeLayerButton_, &QPushButton::clicked, this, [this] {
    hsm::ModelConfig c = config();
    if (c.layers.size() <= 1) return;
    const int row = table_->currentRow();
    c.layers.erase(c.layers.begin() + (row >= 0 && row < int(c.layers.size()) ? row : int(c.layers.size()) - 1));
    setConfig(c);
  });
  connect(matchButton_, &QPushButton::clicked, this, [this] {
    bool ok = false;
    const qint64 target = target_->text().trimmed().remove(QLatin1Char(',')).toLongLong(&ok);
    if (!ok || target <= 0) {
      matchLabel_->setText(tr("Target: enter a positive whole number of parameters."));
      return;
    }
    matchParameters(target);
  });
  connect(saveButton_, &QPushButton::clicked, this, &ArchitectureView::saveDialog);
  connect(trainButton_, &QPushButton::clicked, this, [this] {
    const QString e = trainThis();
    if (!e.isEmpty()) QMessageBox::warning(this, tr("Cannot train this model"), e);
  });
  connect(length_, &QSpinBox::valueChanged, this, [this] { refreshDiagram(); });
  connect(layerSlider_, &QSlider::valueChanged, this, [this](int l) {
    if (l != diagram_->selectedLayer()) diagram_->select(diagram_->selectedToken(), l);
  });
  connect(diagram_, &ReceptiveFieldDiagram::selectionChanged, this, [this](int token, int layer) {
    if (layerSlider_->value() != layer) layerSlider_->setValue(layer);
    selectionLabel_->setText(tr("Position %1 after layer %2: offsets %3 reach it.")
                                 .arg(token)
                                 .arg(layer)
                                 .arg(diagram_->litOffsets().size()));
  });
  auto* timer = new QTimer(this);
  timer->setInterval(700);
  connect(animateButton_, &QPushButton::clicked, this, [this, timer] {
    diagram_->select(diagram_->selectedToken(), 0);
    timer->start();
  });
  connect(timer, &QTimer::timeout, this, [this, timer] {
    const int next = diagram_->selectedLayer() + 1;
    if (next >= diagram_->layerCount()) {
      timer->stop();
      return;
    }
    diagram_->select(diagram_->selectedToken(), next);
  });
}

QList<PlotPanel*> ArchitectureView::plots() const { return {coverage_, cost_}; }

void ArchitectureView::showRun() {
  // The view follows the Run selector as every other view does: the current run's own model.
  // A new checkpoint of the same run (it trains) leaves the editor as it is.
  const RunEntry* run = currentRun();
  if (!run || run->dir == followedRun_) return;
  showRunModel();
}

void ArchitectureView::showRunModel() {
  const RunEntry* run = currentRun();
  if (!run) return;
  followedRun_ = run->dir;
  setConfig(run->model);
  source_->setText(tr("The model of run <b>%1</b> (its own config.json). A preset chosen above replaces it here.")
                       .arg(runName(run->dir).toHtmlEscaped()));
}

QString ArchitectureView::modelSource() const { return source_->text(); }

bool ArchitectureView::setPreset(const QString& name) {
  try {
    setConfig(hsm::load_preset(sstr(name)));
    source_->setText(tr("The preset <b>%1</b> (HSM Table 1), not a run's model.").arg(name.toHtmlEscaped()));
    return true;
  } catch (const std::exception& e) {
    error_ = QString::fromUtf8(e.what());
    errorLabel_->setText(error_);
    errorLabel_->show();
    return false;
  }
}

void ArchitectureView::setConfig(const hsm::ModelConfig& config) {
  if (table_->rowCount() > 0 && config == base_ && this->config() == base_) return;  // shown already, unedited
  building_ = true;
  base_ = config;
  const int i = preset_->findText(qstr(config.name));
  if (i >= 0) preset_->setCurrentIndex(i);
  dModel_->setValue(static_cast<int>(config.d_model));
  context_->setValue(static_cast<int>(config.context));
  vocab_->setValue(static_cast<int>(config.vocab_size));
  building_ = false;
  rebuildTable();
  onEdited();
}

void ArchitectureView::rebuildTable() {
  building_ = true;
  const int rows = static_cast<int>(base_.layers.size());
  // Rows past the new count go; rows that stay keep their widgets (only values change).
  // Old cell widgets are deleted now: Qt would only deleteLater() them, and nested event
  // loops (tests, the smoke mode) may never get there, leaving them drawn over the new ones.
  for (int r = rows; r < table_->rowCount(); ++r)
    for (int c : {kMixer, kFfn, kHeads})
      if (QWidget* w = table_->cellWidget(r, c)) {
        table_->removeCellWidget(r, c);
        delete w;
      }
  const int kept = std::min(rows, table_->rowCount());
  table_->setRowCount(rows);
  for (int r = kept; r < rows; ++r) addRow(r);
  for (int r = 0; r < rows; ++r) {
    const hsm::LayerSpec& spec = base_.layers[r];
    static_cast<QComboBox*>(table_->cellWidget(r, kMixer))->setCurrentText(qstr(spec.mixer));
    static_cast<QSpinBox*>(table_->cellWidget(r, kFfn))->setValue(static_cast<int>(spec.ffn));
    static_cast<QSpinBox*>(table_->cellWidget(r, kHeads))->setValue(static_cast<int>(spec.heads));
  }
  building_ = false;
}

// The widgets of row r: the layer number, a mixer menu, FFN width and heads, and the
// parameter counts (filled by refreshCounts).
void ArchitectureView::addRow(int r) {
  auto* layerItem = new QTableWidgetItem(QString::number(r));
  layerItem->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  table_->setItem(r, kLayer, layerItem);
  auto* mixer = new QComboBox;
  mixer->setMinimumContentsLength(9);
  mixer->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  for (const hsm::MixerInfo& m : hsm::all_mixers()) {
    mixer->addItem(QString::fromLatin1(m.id));
    mixer->setItemData(mixer->count() - 1, QString::fromLatin1(m.title), Qt::ToolTipRole);
  }
  auto* ffn = new QSpinBox;
  ffn->setRange(1, 1 << 20);
  ffn->setSingleStep(64);
  ffn->setKeyboardTracking(false);
  auto* heads = new QSpinBox;
  heads->setRange(1, 64);
  heads->setKeyboardTracking(false);
  table_->setCellWidget(r, kMixer, mixer);
  table_->setCellWidget(r, kFfn, ffn);
  table_->setCellWidget(r, kHeads, heads);
  for (int c : {kMixerParams, kFfnParams, kLayerTotal}) {
    auto* item = new QTableWidgetItem;
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(r, c, item);
  }
  connect(mixer, &QComboBox::currentTextChanged, this, [this, heads](const QString& id) {
    if (building_ || !hsm::is_mixer_id(sstr(id))) return;
    const hsm::MixerInfo& info = hsm::mixer_info(sstr(id));
    building_ = true;
    heads->setValue(static_cast<int>(info.default_heads));
    building_ = false;
    onEdited();
  });
  connect(ffn, &QSpinBox::valueChanged, this, [this] {
    if (!building_) onEdited();
  });
  connect(heads, &QSpinBox::valueChanged, this, [this] {
    if (!building_) onEdited();
  });
}

int ArchitectureView::layerCount() const { return table_->rowCount(); }

hsm::ModelConfig ArchitectureView::config() const {
  hsm::ModelConfig c = base_;
  c.d_model = dModel_->value();
  c.context = context_->value();
  c.vocab_size = vocab_->value();
  c.layers.clear();
  for (int r = 0; r < table_->rowCount(); ++r) {
    hsm::LayerSpec s;
    s.mixer = sstr(static_cast<QComboBox*>(table_->cellWidget(r, kMixer))->currentText());
    s.ffn = static_cast<QSpinBox*>(table_->cellWidget(r, kFfn))->value();
    s.heads = static_cast<QSpinBox*>(table_->cellWidget(r, kHeads))->value();
    c.layers.push_back(s);
  }
  if (c.layers != base_.layers || c.d_model != base_.d_model || c.context != base_.context ||
      c.vocab_size != base_.vocab_size) {
    c.name = base_.name.rfind("custom", 0) == 0 ? base_.name : base_.name + "-custom";
    c.description = "edited in the Architecture view from " + base_.name;
  }
  return c;
}

void ArchitectureView::setLayerFfn(int layer, int ffn) {
  static_cast<QSpinBox*>(table_->cellWidget(layer, kFfn))->setValue(ffn);
}

void ArchitectureView::setLayerMixer(int layer, const QString& mixer) {
  static_cast<QComboBox*>(table_->cellWidget(layer, kMixer))->setCurrentText(mixer);
}

void ArchitectureView::setLayerHeads(int layer, int heads) {
  static_cast<QSpinBox*>(table_->cellWidget(layer, kHeads))->setValue(heads);
}

qint64 ArchitectureView::layerParams(int layer) const { return layerTotals_.value(layer, -1); }

void ArchitectureView::onEdited() {
  if (building_) return;
  for (int r = 0; r < table_->rowCount(); ++r) {
    const QString id = static_cast<QComboBox*>(table_->cellWidget(r, kMixer))->currentText();
    const bool multi = hsm::is_mixer_id(sstr(id)) && hsm::mixer_info(sstr(id)).multi_head;
    table_->cellWidget(r, kHeads)->setEnabled(multi);
  }
  refreshCounts();
  refreshDiagram();
  refreshCost();
}

void ArchitectureView::refreshCounts() {
  const hsm::ModelConfig c = config();
  layerTotals_ = QVector<qint64>(table_->rowCount(), -1);
  try {
    hsm::validate(c);
    error_.clear();
    errorLabel_->hide();
  } catch (const std::exception& e) {
    error_ = QString::fromUtf8(e.what());
    errorLabel_->setText(error_);
    errorLabel_->show();
    total_ = -1;
    totalLabel_->setText(tr("Total: — (fix the error below)"));
    for (int r = 0; r < table_->rowCount(); ++r)
      for (int col : {kMixerParams, kFfnParams, kLayerTotal}) table_->item(r, col)->setText(QStringLiteral("—"));
    return;
  }
  const hsm::ParamCount p = hsm::count_params(c);
  const QLocale loc;
  for (int r = 0; r < table_->rowCount(); ++r) {
    const hsm::LayerParams& lp = p.layers[r];
    table_->item(r, kMixerParams)->setText(loc.toString(qint64(lp.mixer)));
    table_->item(r, kFfnParams)->setText(loc.toString(qint64(lp.ffn)));
    table_->item(r, kLayerTotal)->setText(loc.toString(qint64(lp.total())));
    table_->item(r, kLayerTotal)
        ->setToolTip(
            tr("mixer %1 + FFN %2 + two LayerNorms %3")
                .arg(loc.toString(qint64(lp.mixer)), loc.toString(qint64(lp.ffn)), loc.toString(qint64(lp.norms))));
    layerTotals_[r] = lp.total();
  }
  total_ = p.total();
  totalLabel_->setText(tr("<b>Total %1 parameters</b> = token embedding %2 (tied with the output) + positions %3 + "
                          "final norm %4 + layers %5")
                           .arg(loc.toString(total_), loc.toString(qint64(p.token_embedding)),
                                loc.toString(qint64(p.position_embedding)), loc.toString(qint64(p.final_norm)),
                                loc.toString(total_ - p.token_embedding - p.position_embedding - p.final_norm)));
}

void ArchitectureView::refreshDiagram() {
  hsm::ModelConfig c = config();
  const int length = length_->value();
  try {
    hsm::validate(c);
  } catch (const std::exception&) {
    return;  // the editor shows the error; the diagram keeps the last valid model
  }
  diagram_->setConfig(c);
  diagram_->setLength(length);
  layerSlider_->setRange(0, std::max(0, diagram_->layerCount() - 1));
  diagram_->select(diagram_->selectedToken(), diagram_->selectedLayer());

  // Coverage of the drawn positions: offsets 0..length-1 reaching the last one. A model
  // whose context is shorter than the drawing is drawn as if its context were longer
  // (the links do not depend on it).
  c.context = std::max<int64_t>(c.context, length);
  hsm::ReceptiveField rf;
  try {
    rf = hsm::receptive_field(c);
  } catch (const std::exception&) {
    return;
  }
  PlotSeries covered{tr("this model"), QColor(230, 110, 20), {}, {}};
  PlotSeries all{tr("all %1 positions").arg(length), QColor(120, 120, 120), {}, {}, PlotSeries::Style::kDashedLine};
  for (size_t l = 0; l < c.layers.size(); ++l) {
    covered.x << double(l);
    covered.y << double(rf.offsets(l, length - 1).size());
    all.x << double(l);
    all.y << double(length);
  }
  coverage_->setSeries({covered, all});
  coverage_->plot()->xAxis->ticker()->setTickCount(static_cast<int>(c.layers.size()));
}

void ArchitectureView::refreshCost() {
  const hsm::ModelConfig c = config();
  try {
    hsm::validate(c);
  } catch (const std::exception&) {
    return;
  }
  // The curves of the papers this model draws its mixers from (the HSM family for a plain
  // GPT), attention always: all 21 mixers at once would bury the plot in its legend.
  enum Family { kHsm = 1, kDa = 2, kEx = 4 };
  auto family = [](hsm::MixerKind k) {
    return hsm::is_da_mixer(k) ? kDa : hsm::is_extractor(k) ? kEx : hsm::is_shift_mixer(k) ? kHsm : 0;
  };
  int families = 0;
  for (const hsm::LayerSpec& l : c.layers) families |= family(hsm::mixer_info(l.mixer).kind);
  if (families == 0) families = kHsm;
  // Mixers with the same formula share one curve (the (a,b) family is 2d for all of them).
  QVector<PlotSeries> series;
  QVector<QPair<int64_t, int64_t>> keys;
  for (const hsm::MixerInfo& m : hsm::all_mixers()) {
    const int f = family(m.kind);
    if (f != 0 && (families & f) == 0) continue;
    const int64_t heads = c.d_model % m.default_heads == 0 ? m.default_heads : 1;
    const QPair<int64_t, int64_t> key(hsm::mixer_macs_per_token(m.id, c.d_model, heads, 8),
                                      hsm::mixer_macs_per_token(m.id, c.d_model, heads, 2048));
    const int found = static_cast<int>(keys.indexOf(key));
    if (found >= 0) {
      // An id that extends the curve's first id is written as its tail: "hsm_ab, _vec, _mh".
      const QString id = QString::fromLatin1(m.id);
      const QString first = series[found].name.section(QStringLiteral(", "), 0, 0);
      series[found].name += QStringLiteral(", ") + (id.startsWith(first) ? id.mid(first.size()) : id);
      continue;
    }
    keys << key;
    PlotSeries s{QString::fromLatin1(m.id), series_color(static_cast<int>(series.size())), {}, {}};
    for (int64_t T = 8; T <= 2048; T += 8) {
      s.x << double(T);
      s.y << double(hsm::mixer_macs_per_token(m.id, c.d_model, heads, T));
    }
    series << s;
  }
  PlotSeries model{tr("this model per layer"), QColor(0, 0, 0), {}, {}, PlotSeries::Style::kDashedLine};
  for (int64_t T = 8; T <= 2048; T += 8) {
    model.x << double(T);
    model.y << double(hsm::model_macs_per_token(c, T)) / std::max<size_t>(1, c.layers.size());
  }
  series << model;
  // A tick every 1000 tokens: four-digit labels do not fit closer in a narrow pane; every 2000
  // when the pane is narrower still (1024x600: "10002000").
  QSharedPointer<QCPAxisTickerFixed> ticks(new QCPAxisTickerFixed);
  ticks->setTickStep(1000);
  ticks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // PlotPanel::fitTicks sets how many
  cost_->plot()->xAxis->setTicker(ticks);
  cost_->setSeries(series);
  if (!cost_->logY()) cost_->setLogY(true);
}

QString ArchitectureView::saveConfig(const QString& path) const {
  try {
    const hsm::ModelConfig c = config();
    hsm::validate(c);
    hsm::save_config(c, sstr(path));
    return {};
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
}

void ArchitectureView::saveDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save model config"),
                                                    StudioSettings::dialogPath(qstr(config().name) + ".json"),
                                                    tr("Model config (*.json)"));
  if (path.isEmpty()) return;
  StudioSettings::setDialogFolder(path);
  const QString e = saveConfig(path);
  if (!e.isEmpty()) QMessageBox::warning(this, tr("Cannot save the config"), e);
}

QString ArchitectureView::trainThis() {
  const QString folder =
      QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(QStringLiteral("configs"));
  QDir().mkpath(folder);
  const QString path = QDir(folder).filePath(qstr(config().name) + QStringLiteral(".json"));
  const QString e = saveConfig(path);
  if (!e.isEmpty()) return e;
  emit trainRequested(path);
  return {};
}

bool ArchitectureView::matchParameters(qint64 target) {
  target_->setText(QString::number(target));
  try {
    const hsm::FfnMatch m = hsm::match_ffn(config(), target);
    hsm::ModelConfig c = m.config;
    setConfig(c);
    const QLocale loc;
    matchLabel_->setText(tr("FFN %1 on %2 layer(s): %3 parameters, %4 from the target.")
                             .arg(m.ffn)
                             .arg(m.matched_layers.size())
                             .arg(loc.toString(qint64(m.params)), loc.toString(qint64(m.params - target))));
    return true;
  } catch (const std::exception& e) {
    matchLabel_->setText(QString::fromUtf8(e.what()));
    return false;
  }
}

}  // namespace studio
