// The Probe view and the Playground's provenance driven through their widgets on the tiny
// trained model (hsm_ab, attn, hsm_ab): the lens grid, the rollout heatmap and the ablation
// bars show what the engine computes (Prober::probe, Evaluator::evaluate), the ablation runs
// off the GUI thread and cancels, every plot exports; a clicked generated token tints the
// text by its rollout row, a shift-click adds a row.
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QLabel>

#include <QFileInfo>
#include <QLineEdit>
#include <QMouseEvent>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <map>
#include <optional>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/playground_view.h"
#include "gui/views/probe_view.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/token_text.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/tokenizer.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

const QString kPrompt = QStringLiteral("Once upon a time, Lily saw a red ball.");

struct Studio {
  RunList runs;
  EngineHost engine;
  ProbeView view{&runs, &engine};
};

// Row `row` of the last layer's rollout, L values.
std::vector<double> rollout_row(const hsm::Probe& p, int64_t row) {
  const auto& m = p.rollout.back().matrix;
  return std::vector<double>(m.begin() + row * p.length, m.begin() + (row + 1) * p.length);
}

}  // namespace

TEST(ProbeView, ShowsTheEnginesLensAndRollout) {
  Studio s;
  const QString run = trained_run();
  s.runs.setCurrent(s.runs.open(run));
  s.view.setPrompt(kPrompt);
  s.view.findChild<QPushButton*>(QStringLiteral("probe_run"))->click();
  ASSERT_TRUE(s.view.isProbing()) << s.view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !s.view.isProbing(); }));
  ASSERT_TRUE(s.view.hasProbe()) << s.view.lastError().toStdString();

  const hsm::Probe expected = hsm::Prober(hsm::Model::load(run.toStdString(), "cpu")).probe(kPrompt.toStdString());
  const int L = static_cast<int>(expected.length), layers = 3;
  QTableWidget* lens = s.view.lensTable();
  ASSERT_EQ(lens->rowCount(), layers + 1);
  ASSERT_EQ(lens->columnCount(), L);
  for (int r = 0; r <= layers; ++r)
    for (int c = 0; c < L; ++c) {
      const hsm::LensToken& top = expected.lens[r].top[c][0];
      EXPECT_EQ(lens->item(r, c)->background().color(), TokenText::tint(top.prob)) << r << " " << c;
      EXPECT_EQ(s.view.probe().lens[r].top[c][0].id, top.id) << r << " " << c;
    }
  const QString tip = s.view.lensTooltip(0, 1);
  EXPECT_TRUE(tip.contains(QStringLiteral("KL to the last layer"))) << tip.toStdString();
  EXPECT_TRUE(tip.contains(QStringLiteral("rank"))) << tip.toStdString();
  EXPECT_EQ(lens->item(0, 1)->toolTip(), tip);

  // The heatmap holds R of the layer the slider picks: the whole model first.
  HeatmapPanel* rollout = s.view.rolloutPanel();
  ASSERT_EQ(rollout->rows(), L);
  EXPECT_EQ(s.view.rolloutLayer(), layers - 1);
  for (int layer : {layers - 1, 0}) {
    s.view.setRolloutLayer(layer);
    const auto& m = expected.rollout[layer].matrix;
    for (int i = 0; i < L; ++i)
      for (int j = 0; j < L; ++j) EXPECT_NEAR(rollout->value(i, j), m[i * L + j], 1e-6) << layer << " " << i << " " << j;
  }
  // Which matrices the rollout ran through: the exact (a,b) maps and attention's weights.
  EXPECT_TRUE(s.view.rolloutKindText().contains(QStringLiteral("attention weights (layer 1)")))
      << s.view.rolloutKindText().toStdString();
  EXPECT_TRUE(s.view.rolloutKindText().contains(QStringLiteral("linear map, each row scaled to sum to 1 (layer 0, 2)")))
      << s.view.rolloutKindText().toStdString();
}

TEST(ProbeView, AblationRunsOffTheGuiThreadRanksEveryLayerAndHeadAndExports) {
  Studio s;
  const QString run = trained_run();
  s.runs.setCurrent(s.runs.open(run));
  s.view.setMaxWindows(8);
  s.view.findChild<QPushButton*>(QStringLiteral("ablation_run"))->click();
  ASSERT_TRUE(s.view.isAblating()) << s.view.lastError().toStdString();
  EXPECT_TRUE(s.view.findChild<QPushButton*>(QStringLiteral("ablation_cancel"))->isEnabled());
  ASSERT_TRUE(wait_for([&] { return !s.view.isAblating(); }));
  ASSERT_TRUE(s.view.hasAblation()) << s.view.lastError().toStdString();
  EXPECT_EQ(s.view.ablationProgress()->value(), 1000);

  auto model = hsm::Model::load(run.toStdString(), "cpu");
  hsm::EvalOptions o;
  o.max_windows = 8;
  const hsm::RunInfo info = hsm::read_run_info(run.toStdString());
  EXPECT_EQ(s.view.ablation().base_loss, hsm::Evaluator(model).evaluate(info.data_path, o).loss);
  // 3 layers, and the attention layer's 4 heads; ranked, one bar each.
  ASSERT_EQ(s.view.ablation().ablations.size(), 7u);
  auto* bars = qobject_cast<QCPBars*>(s.view.ablationPanel()->plot()->plottable(0));
  ASSERT_NE(bars, nullptr);
  ASSERT_EQ(bars->data()->size(), 7);
  for (const hsm::Ablation& a : s.view.ablation().ablations) {
    EXPECT_TRUE(std::isfinite(a.delta));
    EXPECT_TRUE(a.knock_out.head < 0 || a.knock_out.layer == 1) << hsm::knock_out_label(a.knock_out);
  }
  EXPECT_EQ(bars->data()->at(6)->value, s.view.ablation().ablations.front().delta);  // the largest on top

  const QString folder = QDir(temp_root()).filePath(QStringLiteral("probe_exports"));
  QString error;
  const QStringList files = s.view.exportAll(folder, &error);
  EXPECT_EQ(error, QString());
  EXPECT_EQ(files.size(), 12);  // lens, rollout, ablation × PNG, PDF, SVG, CSV
  for (const QString& f : files) EXPECT_GT(QFileInfo(f).size(), 0) << f.toStdString();
  // Named for the run and the view.
  QFile csv(QDir(folder).filePath(QFileInfo(run).fileName() + QStringLiteral("-probe-ablation.csv")));
  ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
  EXPECT_EQ(csv.readAll().count('\n'), 8);  // header and 7 rows
}

// The ablation's base is the run's loss on the windows it was trained on (its curves'), unless
// the windows box says otherwise: a run trained on story-start windows is scored on them.
TEST(ProbeView, TheAblationBaseIsScoredOnTheWindowsTheRunWasTrainedOn) {
  hsm::RunSpec spec = tiny_run_spec(QDir(temp_root()).filePath(QStringLiteral("story-start-run")));
  spec.train.windows = "story_start";
  spec.train.steps = 10;
  hsm::Trainer(spec).run();
  const QString run = QString::fromStdString(spec.run_dir);
  Studio s;
  s.runs.setCurrent(s.runs.open(run));
  s.view.setMaxWindows(8);
  s.view.findChild<QPushButton*>(QStringLiteral("ablation_run"))->click();
  ASSERT_TRUE(s.view.isAblating()) << s.view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !s.view.isAblating(); }));
  ASSERT_TRUE(s.view.hasAblation()) << s.view.lastError().toStdString();
  EXPECT_EQ(s.view.ablation().windows, "story_start");
  EXPECT_EQ(s.view.ablation().window_count, 8);
  auto model = hsm::Model::load(spec.run_dir, "cpu");
  hsm::EvalOptions o;
  o.max_windows = 8;
  o.windows = "story_start";
  EXPECT_EQ(s.view.ablation().base_loss, hsm::Evaluator(model).evaluate(spec.data_path, o).loss);
  o.windows = "packed";
  EXPECT_NE(s.view.ablation().base_loss, hsm::Evaluator(model).evaluate(spec.data_path, o).loss);  // else this proves nothing
}

TEST(ProbeView, AblationCancels) {
  Studio s;
  s.runs.setCurrent(s.runs.open(trained_run()));
  s.view.setMaxWindows(0);
  ASSERT_TRUE(s.view.runAblation()) << s.view.lastError().toStdString();
  s.view.findChild<QPushButton*>(QStringLiteral("ablation_cancel"))->click();
  ASSERT_TRUE(wait_for([&] { return !s.view.isAblating(); }));
  EXPECT_FALSE(s.view.hasAblation());
  EXPECT_TRUE(s.view.lastError().contains(QStringLiteral("cancelled"))) << s.view.lastError().toStdString();
  EXPECT_TRUE(s.view.findChild<QPushButton*>(QStringLiteral("ablation_run"))->isEnabled());
}

TEST(ProbeView, SaysWhenTheRunIsEditedAndAblatesTheEditedModel) {
  Studio s;
  const QString run = trained_run();
  s.runs.setCurrent(s.runs.open(run));
  EXPECT_TRUE(s.view.whatIfBanner().isEmpty());
  s.engine.setWhatIf(run, hsm::WhatIf{{{1, -1}}, {}});  // the attention layer knocked out
  EXPECT_TRUE(s.view.whatIfBanner().contains(QStringLiteral("Edited model"))) << s.view.whatIfBanner().toStdString();
  EXPECT_TRUE(s.view.whatIfBanner().contains(QStringLiteral("layer 1 knocked out")));
  s.view.setMaxWindows(8);
  ASSERT_TRUE(s.view.runAblation()) << s.view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !s.view.isAblating(); }));
  ASSERT_TRUE(s.view.hasAblation()) << s.view.lastError().toStdString();
  // The base is the edited model's loss; layer 1 and its heads have no rows (3 of 7 left).
  auto model = hsm::Model::load(run.toStdString(), "cpu");
  hsm::EvalOptions o;
  o.max_windows = 8;
  o.knock_out = {{1, -1}};
  const hsm::RunInfo info = hsm::read_run_info(run.toStdString());
  EXPECT_EQ(s.view.ablation().base_loss, hsm::Evaluator(model).evaluate(info.data_path, o).loss);
  EXPECT_EQ(s.view.ablation().ablations.size(), 2u);  // layers 0 and 2
  for (const hsm::Ablation& a : s.view.ablation().ablations) EXPECT_NE(a.knock_out.layer, 1);
  s.engine.setWhatIf(run, {});
  EXPECT_TRUE(s.view.whatIfBanner().isEmpty());
}

// Ablation runs on the engine's analysis thread: a generation asked for while it runs is
// answered before it ends (on one thread it would queue behind every knock-out).
TEST(EngineHost, AGenerationDoesNotWaitForAnAblation) {
  const QString run = trained_run();
  // A corpus big enough that its ablation takes seconds where 8 tokens take milliseconds.
  const QString corpus = make_corpus(QDir(temp_root()).filePath(QStringLiteral("long_ablation")), 20000);
  EngineHost engine;
  QObject context;  // the continuations' receiver, as a view would be
  bool ablationEnded = false, generated = false, generatedFirst = false;
  double progress = 0;
  QString failure;
  bool cancelled = false;
  Reply<hsm::AblationReport> ablation = engine.ablate(run, corpus, QStringLiteral("packed"), 0);
  QObject::connect(ablation.feed(), &CallFeed::progress, &context, [&](const QString&, double f) { progress = f; });
  ablation.result()
      .then(&context, [&](const hsm::AblationReport&) { ablationEnded = true; })
      .onFailed(&context, [&](const CallFailed& e) {
        ablationEnded = true;
        failure = e.message();
        cancelled = e.cancelled();
      });
  ASSERT_TRUE(wait_for([&] { return progress > 0 || ablationEnded; }));  // under way
  hsm::GenerateOptions options;
  options.sampling.max_new_tokens = 8;
  options.sampling.stop_at_end = false;
  int tokens = 0;
  Reply<hsm::GenerationResult> generation = engine.generate(run, QStringLiteral("Once upon a time"), options);
  QObject::connect(generation.feed(), &CallFeed::token, &context, [&](const hsm::GeneratedToken&) { ++tokens; });
  generation.result()
      .then(&context,
            [&](const hsm::GenerationResult& r) {
              generated = true;
              generatedFirst = !ablationEnded;
              EXPECT_EQ(r.tokens.size(), 8u);
            })
      .onFailed(&context, [&](const CallFailed& e) { failure = e.message(); });
  ASSERT_TRUE(wait_for([&] { return generated; })) << failure.toStdString();
  EXPECT_TRUE(generatedFirst) << "the generation waited for the ablation";
  EXPECT_EQ(tokens, 8);  // streamed to its own feed before the result
  EXPECT_FALSE(ablationEnded);
  ablation.cancel();
  ASSERT_TRUE(wait_for([&] { return ablationEnded; }));
  EXPECT_TRUE(cancelled) << failure.toStdString();
  EXPECT_TRUE(failure.contains(QStringLiteral("cancelled"))) << failure.toStdString();
  EXPECT_TRUE(engine.waitIdle(60000));
}

// Only the newest what-if edit's loss is wanted: a newer evaluation stops the one before
// (between batches, or before it begins) instead of queueing behind it.
TEST(EngineHost, ANewerWhatIfEvaluationSupersedesTheOneBefore) {
  const QString run = trained_run();
  const QString corpus = make_corpus(QDir(temp_root()).filePath(QStringLiteral("superseded")), 20000);
  EngineHost engine;
  QObject context;
  engine.setWhatIf(run, hsm::WhatIf{{{1, -1}}, {}});
  std::map<int, CallFailed> failed;
  QMap<int, WhatIfEvaluation> evaluated;
  auto follow = [&](int id, Reply<WhatIfEvaluation> reply) {
    reply.result()
        .then(&context, [&, id](const WhatIfEvaluation& e) { evaluated.insert(id, e); })
        .onFailed(&context, [&, id](const CallFailed& e) { failed.emplace(id, e); });
  };
  follow(1, engine.evaluateWhatIf(run, corpus, QStringLiteral("packed"), 0));  // every window: seconds
  follow(2, engine.evaluateWhatIf(run, corpus, QStringLiteral("packed"), 8));
  ASSERT_TRUE(wait_for([&] { return (failed.count(1) || evaluated.contains(1)) && evaluated.contains(2); }))
      << (failed.count(2) ? failed.at(2).what() : "");
  ASSERT_TRUE(failed.count(1));
  EXPECT_TRUE(failed.at(1).cancelled()) << failed.at(1).what();
  EXPECT_EQ(evaluated[2].edited.tokens, 8 * 32);
  EXPECT_EQ(evaluated[2].edits, engine.whatIf(run));
  EXPECT_TRUE(engine.waitIdle(60000));
}

// A new engine call needs no change to EngineHost: a lambda on an executor, with the run's
// shared model, answers its caller alone with a typed value or a CallFailed naming the cause.
TEST(EngineHost, AnyCallOnAnExecutorAnswersItsCallerWithATypedReply) {
  const QString run = trained_run();
  EngineHost engine;
  QObject context;
  std::optional<int64_t> layers;
  QString failure;
  bool skippedRan = false;
  engine.interactive()
      .call<int64_t>(run, [](const CallContext& c) { return static_cast<int64_t>(c.model()->config().layers.size()); })
      .then(&context, [&](int64_t n) { layers = n; });
  engine.analysis()
      .call<int>(run, [](const CallContext&) -> int { throw std::invalid_argument("layer 9: the model has 3 layers"); })
      .then(&context, [](int) {})
      .onFailed(&context, [&](const CallFailed& e) { failure = e.message(); });
  QFuture<void> skipped = engine.interactive().call<void>(run, [&](const CallContext&) { skippedRan = true; });
  skipped.cancel();  // before it begins (the first call is still queued or running): it never runs
  ASSERT_TRUE(wait_for([&] { return layers.has_value() && !failure.isEmpty(); }));
  EXPECT_EQ(*layers, static_cast<int64_t>(hsm::read_run_info(run.toStdString()).model.layers.size()));
  EXPECT_EQ(failure, QStringLiteral("layer 9: the model has 3 layers"));
  EXPECT_TRUE(engine.waitIdle(60000));
  EXPECT_FALSE(skippedRan);
}

TEST(Playground, AClickedTokenTintsTheTextByItsRolloutRowAndShiftClickAddsRows) {
  RunList runs;
  EngineHost engine;
  PlaygroundView view(&runs, &engine);
  const QString run = trained_run();
  runs.setCurrent(runs.open(run));
  view.setPrompt(kPrompt);
  view.setSeed(7);
  view.resize(1200, 800);
  view.show();
  ASSERT_TRUE(view.generate()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isGenerating(); }));
  TokenText* out = view.output(0);
  ASSERT_GE(out->tokenCount(), 6);

  // Click generated token 5 where its text starts.
  int start = 0;
  while (out->tokenAt(start) != 5) ++start;
  QTextCursor cursor(out->document());
  cursor.setPosition(start);
  click(out->viewport(), out->cursorRect(cursor).center() + QPoint(2, 0));
  ASSERT_TRUE(view.isProbing());
  ASSERT_TRUE(wait_for([&] { return !view.isProbing(); }));
  ASSERT_TRUE(out->provenanceShown()) << view.lastError().toStdString();

  // Independently: the rollout of <|endoftext|>, the prompt and tokens 0..5, its last row.
  auto model = hsm::Model::load(run.toStdString(), "cpu");
  std::vector<int32_t> ids = {model->tokenizer().end_of_text_id()};
  for (int32_t id : model->tokenizer().encode(kPrompt.toStdString())) ids.push_back(id);
  const QVector<int> generated = out->tokenIds();
  const auto upTo = [&](int last) {
    std::vector<int32_t> seq = ids;
    seq.insert(seq.end(), generated.begin(), generated.begin() + last + 1);
    return hsm::Prober(model).probe_tokens(seq);
  };
  const hsm::Probe p5 = upTo(5);
  const std::vector<double> row5 = rollout_row(p5, p5.length - 1);
  ASSERT_EQ(out->provenanceWeights().size(), row5.size());
  for (size_t j = 0; j < row5.size(); ++j) EXPECT_NEAR(out->provenanceWeights()[j], row5[j], 1e-6) << j;
  EXPECT_GT(row5[0], 0.0);  // it drew on the story start too
  EXPECT_TRUE(view.provenanceNote(0).contains(QStringLiteral("attention weights")))
      << view.provenanceNote(0).toStdString();

  // Shift-click adds token 2: the rows of positions 5 and 2 (counted back from the last).
  ASSERT_TRUE(view.showProvenance(0, {5, 2}));
  ASSERT_TRUE(wait_for([&] { return !view.isProbing(); }));
  const std::vector<double> row2 = rollout_row(p5, p5.length - 1 - 3);
  for (size_t j = 0; j < row5.size(); ++j)
    EXPECT_NEAR(out->provenanceWeights()[j], row5[j] + row2[j], 1e-6) << j;

  // A click on the prompt returns to the probabilities, and the rollout's caption goes with it:
  // the column says again what it generated (issue 36).
  auto* status = view.findChild<QLabel*>(QStringLiteral("status_0"));
  ASSERT_NE(status, nullptr);
  EXPECT_TRUE(status->text().contains(QStringLiteral("Rollout")));
  cursor.setPosition(1);
  click(out->viewport(), out->cursorRect(cursor).center());
  EXPECT_FALSE(out->provenanceShown());
  EXPECT_EQ(out->tokenCount(), generated.size());
  EXPECT_FALSE(status->text().contains(QStringLiteral("Rollout"))) << status->text().toStdString();
  EXPECT_TRUE(status->text().contains(QStringLiteral("seed 7"))) << status->text().toStdString();
}

// The ablation of a bundled model on a machine without the corpus it was trained on (a user's,
// a fresh Debian root) said "Choose a corpus: … does not exist"; it is scored on the starter
// corpus that ships beside the models (hsm::scoring_corpus), says so, and leaves the corpus field
// empty so that the next run is scored on its own corpus.
TEST(ProbeView, ABundledModelWhoseCorpusIsMissingIsAblatedOnTheStarterCorpus) {
  const ResourcesElsewhere resources(QStringLiteral("probe-resources-elsewhere"));
  Studio s;
  s.runs.setCurrent(s.runs.open(resources.model()));
  s.view.setMaxWindows(2);
  ASSERT_TRUE(s.view.runAblation()) << s.view.lastError().toStdString();
  const QString status = s.view.findChild<QLabel*>(QStringLiteral("probe_status"))->text();
  EXPECT_TRUE(status.contains(QStringLiteral("starter corpus"))) << status.toStdString();
  EXPECT_TRUE(status.contains(QString::fromLatin1(ResourcesElsewhere::kMissingCorpus))) << status.toStdString();
  EXPECT_TRUE(s.view.findChild<QLineEdit*>(QStringLiteral("ablation_data"))->text().isEmpty());
  ASSERT_TRUE(wait_for([&] { return !s.view.isAblating(); }));
  EXPECT_TRUE(s.view.hasAblation()) << s.view.lastError().toStdString();
  EXPECT_EQ(s.view.ablation().window_count, 2);
}
