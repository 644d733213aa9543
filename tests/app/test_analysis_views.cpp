// The Architecture, Weights and Diagnostics views driven through their controls on the
// tiny trained model (hsm_ab, attn, hsm_ab): what they show is checked against the engine
// (count_params, match_ffn, receptive_field, Model::mixer_weights, Prober::diagnose).
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QApplication>
#include <QComboBox>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMouseEvent>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <cmath>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/architecture_view.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/weights_view.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/radar_chart.h"
#include "gui/widgets/receptive_field_diagram.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/prober.h"
#include "hsm/receptive_field.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

bool grab_is_drawn(QWidget& w) {
  w.resize(1400, 900);
  w.show();
  QCoreApplication::processEvents();
  const QImage image = w.grab().toImage();
  if (image.isNull() || image.width() < 100) return false;
  // Not one flat colour.
  const QRgb first = image.pixel(0, 0);
  for (int y = 0; y < image.height(); y += 7)
    for (int x = 0; x < image.width(); x += 7)
      if (image.pixel(x, y) != first) return true;
  return false;
}

}  // namespace

TEST(ArchitectureView, ParamCountFollowsTheEditorAndMatchesTheEngine) {
  RunList runs;
  ArchitectureView view(&runs);
  ASSERT_TRUE(view.setPreset(QStringLiteral("hybrid_0_6")));
  EXPECT_EQ(view.totalParams(), hsm::count_params(hsm::load_preset("hybrid_0_6")).total());
  const qint64 before = view.totalParams();
  view.setLayerFfn(0, 2048);  // through the FFN spin box
  hsm::ModelConfig edited = hsm::load_preset("hybrid_0_6");
  edited.layers[0].ffn = 2048;
  EXPECT_EQ(view.totalParams(), hsm::count_params(edited).total());
  EXPECT_EQ(view.totalParams() - before, (2048 - 1024) * (2 * 256 + 1));
  EXPECT_EQ(view.layerParams(0), hsm::count_params(edited).layers[0].total());
  EXPECT_EQ(view.config().layers[0].ffn, 2048);

  // A mixer change takes its default heads; an invalid head count is shown, not thrown.
  view.setLayerMixer(1, QStringLiteral("hsm_ab_mh"));
  EXPECT_EQ(view.config().layers[1].heads, 8);
  EXPECT_TRUE(view.error().isEmpty());
  view.setLayerHeads(1, 3);
  EXPECT_FALSE(view.error().isEmpty());
  EXPECT_EQ(view.totalParams(), -1);
  view.setLayerHeads(1, 8);
  EXPECT_TRUE(view.error().isEmpty());
}

// Issue 48: in a narrow pane (the view at 1024 px) the Mixer column still shows each layer's
// mixer whole; the numbers scroll instead.
TEST(ArchitectureView, TheMixerColumnShowsTheMixerWholeWhenNarrow) {
  RunList runs;
  ArchitectureView view(&runs);
  ASSERT_TRUE(view.setPreset(QStringLiteral("hybrid_mh_0_6")));
  view.resize(480, 560);
  view.show();
  QApplication::processEvents();
  auto* table = view.findChild<QTableWidget*>(QStringLiteral("layer_table"));
  ASSERT_NE(table, nullptr);
  for (int r = 0; r < table->rowCount(); ++r) {
    auto* mixer = qobject_cast<QComboBox*>(table->cellWidget(r, 1));
    ASSERT_NE(mixer, nullptr) << r;
    const int textWidth = mixer->fontMetrics().horizontalAdvance(mixer->currentText());
    EXPECT_GE(table->columnWidth(1), textWidth) << "layer " << r << ": " << mixer->currentText().toStdString();
  }
}

// Issue 48: the view follows the Run selector as every other view does (a run's own config, a
// preset only when chosen), shown or shown later; a preset chosen stays until the run changes.
TEST(ArchitectureView, FollowsTheCurrentRunsOwnModel) {
  const QString first = trained_run();  // 3 layers, d 32
  const QString second = trained_variant(QStringLiteral("arch-second"), [](hsm::RunSpec& spec) {  // 2 layers
    spec.run_dir = QDir(temp_root()).filePath(QStringLiteral("arch-second/two-layers")).toStdString();
    spec.model.layers.pop_back();
    spec.model.name = "two_layer_test";
    spec.train.steps = 2;
    spec.train.eval_every = 2;
    spec.train.checkpoint_every = 2;
  });
  RunList runs;
  ArchitectureView view(&runs);
  view.resize(1280, 720);
  view.show();
  QCoreApplication::processEvents();
  EXPECT_TRUE(view.modelSource().contains(QStringLiteral("preset"))) << view.modelSource().toStdString();

  const int rowA = runs.open(first), rowB = runs.open(second);
  runs.setCurrent(rowA);
  QCoreApplication::processEvents();
  EXPECT_EQ(view.layerCount(), 3);
  EXPECT_EQ(view.config().d_model, 32);
  EXPECT_EQ(view.totalParams(), hsm::count_params(runs.at(rowA).model).total());
  EXPECT_TRUE(view.modelSource().contains(QFileInfo(first).fileName())) << view.modelSource().toStdString();

  runs.setCurrent(rowB);
  QCoreApplication::processEvents();
  EXPECT_EQ(view.layerCount(), 2);
  EXPECT_EQ(view.totalParams(), hsm::count_params(runs.at(rowB).model).total());
  EXPECT_TRUE(view.modelSource().contains(QStringLiteral("two-layers"))) << view.modelSource().toStdString();

  // A preset chosen replaces it, and says so.
  view.findChild<QComboBox*>(QStringLiteral("arch_preset"))->setCurrentText(QStringLiteral("gpt"));
  EXPECT_EQ(view.totalParams(), hsm::count_params(hsm::load_preset("gpt")).total());
  EXPECT_TRUE(view.modelSource().contains(QStringLiteral("preset"))) << view.modelSource().toStdString();

  // Hidden while the run changes: shown again, the current run's model.
  view.hide();
  runs.setCurrent(rowA);
  QCoreApplication::processEvents();
  view.show();
  QCoreApplication::processEvents();
  EXPECT_EQ(view.layerCount(), 3);
  EXPECT_EQ(view.totalParams(), hsm::count_params(runs.at(rowA).model).total());
}

TEST(ArchitectureView, MatchParametersHitsTheTargetWithinOneStep) {
  RunList runs;
  ArchitectureView view(&runs);
  ASSERT_TRUE(view.setPreset(QStringLiteral("hsm_ab")));
  const qint64 target = hsm::count_params(hsm::load_preset("gpt")).total();
  EXPECT_EQ(view.targetField()->text().toLongLong(), target);  // the default target
  view.findChild<QPushButton*>(QStringLiteral("match_params"))->click();
  const hsm::ModelConfig c = view.config();
  // All 7 layers are HSM: one FFN step of 64 changes the total by 7 · 64 · (2d + 1).
  EXPECT_LE(std::abs(view.totalParams() - target), 7 * 64 * (2 * 256 + 1) / 2);
  EXPECT_EQ(view.totalParams(), hsm::count_params(c).total());
  EXPECT_EQ(c.layers[0].ffn % 64, 0);
  EXPECT_EQ(c.layers[0].ffn, hsm::match_ffn(hsm::load_preset("hsm_ab"), target).ffn);
}

TEST(ArchitectureView, TrainThisSavesTheConfigAndHandsItOver) {
  RunList runs;
  ArchitectureView view(&runs);
  ASSERT_TRUE(view.setPreset(QStringLiteral("hsm_ab_mh_ext")));
  view.setLayerFfn(2, 512);
  QString handed;
  QObject::connect(&view, &ArchitectureView::trainRequested, [&](const QString& path) { handed = path; });
  EXPECT_EQ(view.trainThis(), QString());
  ASSERT_FALSE(handed.isEmpty());
  EXPECT_EQ(hsm::load_config(handed.toStdString()), view.config());
  const QString saved = QDir(temp_root()).filePath(QStringLiteral("arch-saved.json"));
  EXPECT_EQ(view.saveConfig(saved), QString());
  EXPECT_EQ(hsm::load_config(saved.toStdString()).layers[2].ffn, 512);
}

TEST(ArchitectureView, DiagramLightsExactlyTheReceptiveField) {
  RunList runs;
  ArchitectureView view(&runs);
  view.resize(1400, 900);
  view.show();
  QCoreApplication::processEvents();
  for (const char* preset : {"hsm_ab", "hsm_ab_mh_ext", "hybrid_0_6", "hsm_ab_mh"}) {
    ASSERT_TRUE(view.setPreset(QString::fromLatin1(preset)));
    view.findChild<QSpinBox*>(QStringLiteral("rf_length"))->setValue(64);
    ReceptiveFieldDiagram* d = view.diagram();
    ASSERT_EQ(d->length(), 64);
    const hsm::ReceptiveField rf = hsm::receptive_field(hsm::load_preset(preset));
    for (int layer : {0, 2, d->layerCount() - 1}) {
      for (int t : {63, 40, 5}) {
        click(d, d->nodeCenter(layer + 1, t));
        ASSERT_EQ(d->selectedToken(), t) << preset;
        ASSERT_EQ(d->selectedLayer(), layer) << preset;
        EXPECT_EQ(d->litOffsets(), rf.offsets(static_cast<size_t>(layer), t)) << preset << " layer " << layer
                                                                               << " token " << t;
      }
    }
  }
  // Seven (a,b) layers reach every one of 128 positions; coverage doubles per layer.
  ASSERT_TRUE(view.setPreset(QStringLiteral("hsm_ab")));
  view.findChild<QSpinBox*>(QStringLiteral("rf_length"))->setValue(128);
  view.diagram()->select(127, 6);
  EXPECT_EQ(view.diagram()->litOffsets().size(), 128u);
  const PlotSeries& coverage = view.coveragePlot()->series().at(0);
  ASSERT_EQ(coverage.y.size(), 7);
  for (int l = 0; l < 7; ++l) EXPECT_EQ(coverage.y[l], double(1 << (l + 1)));
  EXPECT_GE(view.costPlot()->series().size(), 5);
  EXPECT_TRUE(grab_is_drawn(view));
}

TEST(WeightsView, BarsEqualTheModelsMixerWeights) {
  RunList runs;
  EngineHost engine;
  WeightsView view(&runs, &engine);
  runs.setCurrent(runs.open(trained_run()));
  view.resize(1400, 900);
  view.show();  // a shown view fetches the current run's weights
  ASSERT_TRUE(wait_for([&] { return !view.weights().empty() && !view.isWaiting(); }));
  const std::vector<hsm::MixerWeights> expect = hsm::Model::load(trained_run().toStdString(), "cpu")->mixer_weights();
  ASSERT_EQ(view.weights().size(), expect.size());
  QCPBars* a = view.barsA();
  QCPBars* b = view.barsB();
  ASSERT_EQ(a->data()->size(), 2);  // layers 0 and 2 are hsm_ab
  ASSERT_EQ(b->data()->size(), 2);
  int bar = 0;
  for (const hsm::MixerWeights& w : expect) {
    if (w.mixer != "hsm_ab") continue;
    EXPECT_EQ(a->data()->at(bar)->key, w.layer);
    EXPECT_FLOAT_EQ(a->data()->at(bar)->value, w.a[0]);
    EXPECT_FLOAT_EQ(b->data()->at(bar)->value, w.b[0]);
    ++bar;
  }
  EXPECT_EQ(bar, 2);
  // The attention layer is named as having no a/b; offset weights need an all-(a,b) stack.
  EXPECT_TRUE(view.notes().contains(QStringLiteral("layer 1 (attn)"))) << view.notes().toStdString();
  EXPECT_TRUE(view.offsetPlot()->series().isEmpty());

  // Live updates: a hand-made set for the current run replaces the bars.
  std::vector<hsm::MixerWeights> live(3);
  for (int l = 0; l < 3; ++l) {
    live[l].layer = l;
    live[l].mixer = "hsm_ab";
    live[l].shifts = {int64_t(1) << l};
    live[l].a = {0.5f + l};
    live[l].b = {-0.25f * l};
  }
  emit engine.trainingWeights(runs.currentRun()->dir, 40, live);
  ASSERT_EQ(a->data()->size(), 3);
  EXPECT_FLOAT_EQ(a->data()->at(2)->value, 2.5f);
  EXPECT_FLOAT_EQ(b->data()->at(1)->value, -0.25f);
  ASSERT_EQ(view.offsetPlot()->series().size(), 1);
  const std::vector<double> offsets = hsm::offset_weights(live);
  ASSERT_EQ(view.offsetPlot()->series()[0].y.size(), static_cast<int>(offsets.size()));
  EXPECT_DOUBLE_EQ(view.offsetPlot()->series()[0].y[5], offsets[5]);

  // Vector and multihead layers.
  std::vector<hsm::MixerWeights> other(2);
  other[0].layer = 0;
  other[0].mixer = "hsm_ab_vec";
  other[0].shifts = {1};
  other[0].a = {0.1f, 0.2f, 0.3f, 0.4f};
  other[0].b = {-0.1f, -0.2f, -0.3f, -0.4f};
  other[1].layer = 1;
  other[1].mixer = "hsm_ab_mh";
  other[1].shifts = {1, 2, 4, 8};
  other[1].a = {1, 2, 3, 4};
  other[1].b = {5, 6, 7, 8};
  view.showWeights(runs.currentRun()->dir, 50, other);
  EXPECT_EQ(view.vectorHeatmap()->rows(), 2);
  EXPECT_EQ(view.vectorHeatmap()->cols(), 4);
  EXPECT_FLOAT_EQ(view.vectorHeatmap()->value(1, 2), -0.3f);
  ASSERT_EQ(view.headTable()->rowCount(), 1);
  ASSERT_EQ(view.headTable()->columnCount(), 4);
  EXPECT_TRUE(view.headTable()->item(0, 3)->text().contains(QStringLiteral("shift 8")));
  EXPECT_DOUBLE_EQ(view.headTable()->item(0, 2)->data(Qt::UserRole + 1).toDouble(), 7.0);
  EXPECT_TRUE(grab_is_drawn(view));
}

TEST(DiagnosticsView, HeatmapAndTableShowTheModelsDiagnosis) {
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  const QString run = trained_run();
  runs.setCurrent(runs.open(run));
  const QString prompt = QStringLiteral("Once upon a time, Lily saw a red ball.");
  view.setPrompt(prompt);
  view.findChild<QPushButton*>(QStringLiteral("diag_run"))->click();
  ASSERT_TRUE(view.isRunning()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isRunning(); }));
  ASSERT_EQ(view.lastError(), QString());
  ASSERT_TRUE(view.hasResult(0));

  const hsm::Diagnosis expect = hsm::Prober(hsm::Model::load(run.toStdString(), "cpu")).diagnose(prompt.toStdString());
  const int L = static_cast<int>(expect.length);
  ASSERT_EQ(view.diagnosis(0).length, L);
  ASSERT_EQ(expect.layers.size(), 3u);
  for (int layer = 0; layer < 3; ++layer) {
    view.setLayer(layer);
    const auto& heads = expect.layers[layer].heads;
    for (int h = 0; h < static_cast<int>(heads.size()); ++h) {
      view.setHead(h);
      HeatmapPanel* m = view.matrixPanel();
      ASSERT_EQ(m->rows(), L);
      ASSERT_EQ(m->cols(), L);
      for (int i = 0; i < L; ++i)
        for (int k = 0; k < L; ++k)
          ASSERT_NEAR(m->value(i, k), heads[h].matrix[static_cast<size_t>(i) * L + k], 1e-5)
              << "layer " << layer << " head " << h << " cell " << i << "," << k;
    }
    const QString kind = QString::fromLatin1(hsm::matrix_kind_name(expect.layers[layer].kind));
    EXPECT_TRUE(view.matrixKindText().contains(kind)) << view.matrixKindText().toStdString();
  }
  // Layer 1 is attention with 4 heads; the head selector offers them.
  view.setLayer(1);
  EXPECT_EQ(view.findChild<QComboBox*>(QStringLiteral("diag_head"))->count(), 4);
  EXPECT_TRUE(view.matrixKindText().contains(QStringLiteral("attention")));
  // Hover text names the tokens and the exact value.
  view.setHead(0);
  const QString hover = view.matrixPanel()->hoverText(2, 1);
  EXPECT_TRUE(hover.contains(QString::fromStdString(expect.tokens[2]))) << hover.toStdString();
  EXPECT_TRUE(hover.contains(QString::number(expect.layers[1].heads[0].matrix[2 * L + 1], 'g', 6)));

  // The table: raw and normalised indicators per layer.
  QTableWidget* table = view.indicatorTable();
  ASSERT_EQ(table->rowCount(), 3);
  QStringList headers;
  for (int c = 0; c < table->columnCount(); ++c) headers << table->horizontalHeaderItem(c)->text();
  auto cell = [&](int row, const QString& header) {
    return table->item(row, static_cast<int>(headers.indexOf(header)))->data(Qt::UserRole).toDouble();
  };
  for (int l = 0; l < 3; ++l) {
    const hsm::LayerDiagnostics& e = expect.layers[l];
    EXPECT_NEAR(cell(l, QStringLiteral("ENTROPY")), e.indicators.entropy, 1e-5);
    EXPECT_NEAR(cell(l, QStringLiteral("ENTROPY (norm)")), e.normalised.entropy, 1e-5);
    EXPECT_NEAR(cell(l, QStringLiteral("CONC")), e.indicators.conc, 1e-5);
    EXPECT_NEAR(cell(l, QStringLiteral("HEADDIV")), e.indicators.headdiv, 1e-5);
    EXPECT_NEAR(cell(l, QStringLiteral("SINK")), e.indicators.sink, 1e-5);
    EXPECT_NEAR(cell(l, QStringLiteral("LocFoc2")), e.indicators.locfoc[2], 1e-5);
  }
  // Radar: one polygon per layer, normalised values; overview layer × indicator.
  ASSERT_EQ(view.radar()->series().size(), 3);
  EXPECT_NEAR(view.radar()->series()[1].values[0], expect.layers[1].normalised.entropy, 1e-9);
  EXPECT_EQ(view.overviewPanel()->rows(), 3);
  EXPECT_EQ(view.overviewPanel()->cols(), 8);
  EXPECT_NEAR(view.overviewPanel()->value(2, 3), expect.layers[2].normalised.sink, 1e-9);

  // Exports: every plot as PNG/PDF/SVG and the numbers as CSV, every layer's and head's matrix
  // among them, each file named for its run and the view, and a note of the run and the tokens.
  QString error;
  const QString folder = QDir(temp_root()).filePath(QStringLiteral("diag-export"));
  const QStringList files = view.exportAll(folder, &error);
  EXPECT_EQ(error, QString());
  const QString stem = QFileInfo(trained_run()).fileName() + QStringLiteral("-diagnostics");
  EXPECT_EQ(files.size(), 1 + 6 + 3 + 4 + 4 + 1);  // note, 6 matrices' numbers, one shown, overview, radar, indicators
  for (const QString& f : files) {
    EXPECT_GT(QFileInfo(f).size(), 0) << f.toStdString();
    EXPECT_TRUE(QFileInfo(f).fileName().startsWith(stem)) << f.toStdString();
  }
  QFile matrix(QDir(folder).filePath(stem + QStringLiteral("-matrix-L1-H3.csv")));
  ASSERT_TRUE(matrix.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = matrix.readAll().trimmed().split('\n');
  ASSERT_EQ(lines.size(), L + 1);  // the keys, then one row per query
  // The last query's weight on itself (the last field: a token label may hold a comma).
  EXPECT_NEAR(lines[L].split(',').last().toDouble(), expect.layers[1].heads[3].matrix[static_cast<size_t>(L) * L - 1],
              1e-6);
  QFile note(QDir(folder).filePath(stem + QStringLiteral(".json")));
  ASSERT_TRUE(note.open(QIODevice::ReadOnly));
  EXPECT_EQ(QJsonDocument::fromJson(note.readAll()).object().value(QStringLiteral("run")).toString(), trained_run());
  EXPECT_TRUE(grab_is_drawn(view));
}

TEST(DiagnosticsView, ComparesTwoRunsSideBySide) {
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  // A second run folder of the same model (a copy) stands in for a second model.
  const QString first = trained_run();
  const QString second = QDir(temp_root()).filePath(QStringLiteral("compare-copy"));
  QDir().mkpath(second);
  for (const QString& f : QDir(first).entryList(QDir::Files))
    QFile::copy(QDir(first).filePath(f), QDir(second).filePath(f));
  runs.setCurrent(runs.open(first));
  runs.open(second);
  view.setCompare(true, second);
  view.setPrompt(QStringLiteral("Tom saw a big dog."));
  ASSERT_TRUE(view.run()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isRunning(); }));
  ASSERT_TRUE(view.hasResult(0));
  ASSERT_TRUE(view.hasResult(1));
  EXPECT_TRUE(view.matrixPanel(1)->isVisibleTo(&view));
  EXPECT_EQ(view.matrixPanel(1)->rows(), view.matrixPanel(0)->rows());
  EXPECT_DOUBLE_EQ(view.matrixPanel(1)->value(3, 2), view.matrixPanel(0)->value(3, 2));
  EXPECT_EQ(view.indicatorTable(1)->rowCount(), 3);
  // An empty prompt is refused in words.
  view.setPrompt(QString());
  EXPECT_FALSE(view.run());
  EXPECT_FALSE(view.lastError().isEmpty());
}


// Issue 69: "Compare with" never starts on the run it would be compared with. The first run
// opened was the only choice and stayed chosen when a second opened (hsm_ab against hsm_ab).
TEST(DiagnosticsView, CompareWithStartsOnAnotherRunThanTheCurrentOne) {
  RunList runs;
  EngineHost engine;
  DiagnosticsView view(&runs, &engine);
  const QString models = QStringLiteral(HSM_RESOURCES_PATH "/models/");
  runs.setCurrent(runs.open(models + QStringLiteral("hsm_ab")));
  runs.open(models + QStringLiteral("gpt"));
  auto* compareRun = view.findChild<QComboBox*>(QStringLiteral("diag_compare_run"));
  ASSERT_NE(compareRun, nullptr);
  ASSERT_EQ(compareRun->count(), 2);
  EXPECT_NE(compareRun->currentData().toString(), runs.currentRun()->dir) << "compared with itself";
  runs.setCurrent(1);  // gpt current: hsm_ab to compare with
  EXPECT_NE(compareRun->currentData().toString(), runs.currentRun()->dir) << "compared with itself";
}
