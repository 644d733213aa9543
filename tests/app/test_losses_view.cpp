// The Losses view (issue 40) driven through its widgets on the tiny trained model: every token
// scored off the GUI thread, the tokens' mean loss the run's evaluation loss on the same
// windows, the documents sorted hardest first, the chosen document tinted by loss, the plots
// drawn per run, cancel, and nothing of a run left when the view follows another.
#include <gtest/gtest.h>

#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTextCursor>
#include <QTextEdit>
#include <cmath>
#include <map>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/losses_view.h"
#include "gui/widgets/plot_panel.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/run_folder.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

struct Studio {
  RunList runs;
  EngineHost engine;
  LossesView view{&runs, &engine};
};

// A second run of the tiny model on the fixture's corpus (so the same tokenizer), another seed
// and fewer steps (so its losses differ), in a folder named "run-b".
QString second_run() {
  static const QString run = [] {
    hsm::RunSpec spec = tiny_run_spec(QDir(temp_root()).filePath(QStringLiteral("losses-second")));
    spec.run_dir = QDir(temp_root()).filePath(QStringLiteral("losses-second/run-b")).toStdString();
    spec.data_path = hsm::read_run_info(trained_run().toStdString()).data_path;
    spec.train.seed = 4242;
    spec.train.steps = 10;
    hsm::Trainer(spec).run();
    return QString::fromStdString(spec.run_dir);
  }();
  return run;
}

}  // namespace

TEST(LossesView, ScoresEveryTokenOffTheGuiThreadAsTheEvaluationDoes) {
  Studio s;
  const QString run = trained_run();
  s.runs.setCurrent(s.runs.open(run));
  s.view.setMaxWindows(8);
  s.view.findChild<QPushButton*>(QStringLiteral("losses_score"))->click();
  ASSERT_TRUE(s.view.isScoring()) << s.view.lastError().toStdString();
  EXPECT_TRUE(s.view.findChild<QPushButton*>(QStringLiteral("losses_cancel"))->isEnabled());
  ASSERT_TRUE(wait_for([&] { return !s.view.isScoring(); }));
  ASSERT_TRUE(s.view.hasScores()) << s.view.lastError().toStdString();
  EXPECT_EQ(s.view.progress()->value(), 1000);

  // The mean of the view's per-token losses is the evaluation's loss on the same windows (the
  // ones the run was trained on, as hsm eval without --windows).
  auto model = hsm::Model::load(run.toStdString(), "cpu");
  hsm::EvalOptions o;
  o.max_windows = 8;
  const hsm::RunInfo info = hsm::read_run_info(run.toStdString());
  const hsm::EvalResult expected = hsm::Evaluator(model).evaluate(info.data_path, o);
  const hsm::TokenScores& scores = s.view.scores();
  ASSERT_EQ(static_cast<int64_t>(scores.tokens.size()), expected.tokens);
  EXPECT_EQ(scores.result.loss, expected.loss);
  double sum = 0;
  for (const hsm::TokenScore& t : scores.tokens) sum += t.loss;
  EXPECT_NEAR(sum / static_cast<double>(scores.tokens.size()), expected.loss, 1e-12 * expected.loss);
  // Every result names its run.
  const QString name = QFileInfo(run).fileName();
  EXPECT_TRUE(s.view.statusLabel()->text().contains(name)) << s.view.statusLabel()->text().toStdString();

  // The documents, hardest first, each with its tokens' mean loss.
  std::map<int64_t, std::pair<double, int64_t>> docs;
  for (const hsm::TokenScore& t : scores.tokens) {
    docs[t.document].first += t.loss;
    ++docs[t.document].second;
  }
  QTableWidget* table = s.view.documentTable();
  ASSERT_EQ(table->rowCount(), static_cast<int>(docs.size()));
  ASSERT_GE(table->rowCount(), 2);  // else the order proves nothing
  double previous = 1e300;
  for (int r = 0; r < table->rowCount(); ++r) {
    const int64_t d = table->item(r, 0)->data(Qt::UserRole).toLongLong();
    ASSERT_TRUE(docs.count(d)) << d;
    const double mean = docs[d].first / static_cast<double>(docs[d].second);
    EXPECT_LE(mean, previous) << "row " << r;
    EXPECT_EQ(table->item(r, 1)->text().toLongLong(), docs[d].second);
    EXPECT_NEAR(table->item(r, 2)->text().toDouble(), mean, 1e-3);
    previous = mean;
  }
  EXPECT_TRUE(table->horizontalHeaderItem(2)->text().contains(name));

  // The hardest document is shown, each of its tokens tinted by its loss.
  const int64_t hardest = table->item(0, 0)->data(Qt::UserRole).toLongLong();
  EXPECT_EQ(s.view.shownDocument(), hardest);
  ASSERT_EQ(static_cast<int64_t>(s.view.spans().size()), docs[hardest].second);
  QTextCursor cursor(s.view.documentText()->document());
  for (const LossesView::Span& span : s.view.spans()) {
    const hsm::TokenScore& t = scores.tokens[span.token];
    EXPECT_EQ(t.document, hardest);
    ASSERT_GT(span.end, span.start);
    cursor.setPosition(span.end);  // the format of the character before: the token's last
    EXPECT_EQ(cursor.charFormat().background().color(), LossesView::lossTint(t.loss)) << span.token;
  }
  // The palette is sequential: darker for a larger loss.
  EXPECT_GT(LossesView::lossTint(0.5).lightness(), LossesView::lossTint(3).lightness());
  EXPECT_GT(LossesView::lossTint(3).lightness(), LossesView::lossTint(7).lightness());
  const QString tip = s.view.tooltipAt(s.view.spans().front().start);
  EXPECT_TRUE(tip.contains(name) && tip.contains(QStringLiteral("rank"))) << tip.toStdString();
  // Hover shows the run's first choices there, once they arrive (a probe of the window):
  // its first choice is the true token exactly where the rank is 1.
  ASSERT_TRUE(wait_for([&] { return s.view.hasAlternatives(); }));
  for (const LossesView::Span& span : s.view.spans()) {
    const hsm::TokenScore& t = scores.tokens[span.token];
    const QString at = s.view.tooltipAt(span.start);
    ASSERT_TRUE(at.contains(QStringLiteral("first choices"))) << at.toStdString();
    const std::vector<hsm::LensToken> top = s.view.alternatives(run, t.window, t.position);
    ASSERT_EQ(top.size(), static_cast<size_t>(LossesView::kAlternatives));
    EXPECT_EQ(top[0].id == t.target, t.rank == 1) << span.token;
    EXPECT_GE(top[0].prob, t.prob - 1e-4) << span.token;  // nothing more probable than the first (float)
  }

  // Loss by position: one point per position, each the mean of that position's tokens.
  const QVector<PlotSeries>& position = s.view.positionPlot()->series();
  ASSERT_EQ(position.size(), 1);
  EXPECT_EQ(position[0].name, name);
  ASSERT_EQ(position[0].x.size(), static_cast<int>(info.model.context));
  std::vector<double> at(static_cast<size_t>(info.model.context), 0.0);
  std::vector<int64_t> n(at.size(), 0);
  for (const hsm::TokenScore& t : scores.tokens) {
    at[static_cast<size_t>(t.position)] += t.loss;
    ++n[static_cast<size_t>(t.position)];
  }
  for (int i = 0; i < position[0].x.size(); ++i)
    EXPECT_NEAR(position[0].y[i], at[static_cast<size_t>(position[0].x[i])] / n[static_cast<size_t>(position[0].x[i])],
                1e-9);
  ASSERT_EQ(s.view.distancePlot()->series().size(), 1);
  // Loss by training frequency: each decade's point the mean of its tokens' losses.
  const QVector<PlotSeries>& frequency = s.view.frequencyPlot()->series();
  ASSERT_EQ(frequency.size(), 1);
  ASSERT_FALSE(frequency[0].x.isEmpty());
  std::map<int, std::pair<double, int64_t>> byDecade;
  for (const hsm::TokenScore& t : scores.tokens) {
    auto& [sum, count] = byDecade[hsm::frequency_bucket(t.train_count)];
    sum += t.loss;
    ++count;
  }
  ASSERT_EQ(frequency[0].x.size(), static_cast<int>(byDecade.size()));
  for (int i = 0; i < frequency[0].x.size(); ++i) {
    const auto& [sum, count] = byDecade.at(static_cast<int>(frequency[0].x[i]));
    EXPECT_NEAR(frequency[0].y[i], sum / static_cast<double>(count), 1e-9);
  }
  // The histogram's shares add up to every token.
  const QVector<PlotSeries>& histogram = s.view.histogramPlot()->series();
  ASSERT_EQ(histogram.size(), 1);
  double share = 0;
  for (double y : histogram[0].y) share += y;
  EXPECT_NEAR(share, 1.0, 1e-9);

  // The plots export (PNG, PDF, SVG, CSV each).
  const QString folder = QDir(temp_root()).filePath(QStringLiteral("losses_exports"));
  QString error;
  const QStringList files = s.view.exportPlots(folder, &error);
  EXPECT_EQ(error, QString());
  EXPECT_EQ(files.size(), 16);  // four plots
  for (const QString& f : files) EXPECT_GT(QFileInfo(f).size(), 0) << f.toStdString();
  // Every token as CSV, its loss column summing to the evaluation's loss × tokens.
  const QString csvPath = QDir(folder).filePath(QStringLiteral("tokens.csv"));
  ASSERT_EQ(s.view.exportTokens(csvPath), QString());
  QFile csv(csvPath);
  ASSERT_TRUE(csv.open(QIODevice::ReadOnly | QIODevice::Text));
  const QStringList lines = QString::fromUtf8(csv.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  ASSERT_EQ(lines.size(), static_cast<int>(scores.tokens.size()) + 1);
  const QStringList header = lines[0].split(QLatin1Char(','));
  const int lossColumn = static_cast<int>(header.indexOf(name + QStringLiteral(" loss")));
  ASSERT_GE(lossColumn, 0) << lines[0].toStdString();
  double csvSum = 0;
  for (int i = 1; i < lines.size(); ++i) {
    const QStringList f = lines[i].split(QLatin1Char(','));  // the text column may hold a comma: count from the end
    csvSum += f[f.size() - (header.size() - lossColumn)].toDouble();
  }
  EXPECT_NEAR(csvSum / static_cast<double>(scores.tokens.size()), expected.loss, 1e-12 * expected.loss);

  // Following no run (the run closed): nothing of it is left.
  s.runs.setCurrent(-1);
  EXPECT_FALSE(s.view.hasScores());
  EXPECT_EQ(s.view.documentTable()->rowCount(), 0);
  EXPECT_TRUE(s.view.documentText()->toPlainText().isEmpty());
  EXPECT_TRUE(s.view.positionPlot()->series().isEmpty());
  EXPECT_EQ(s.view.statusLabel()->text(), QStringLiteral("No run open."));
}

TEST(LossesView, ScoringCancels) {
  Studio s;
  s.runs.setCurrent(s.runs.open(trained_run()));
  s.view.setMaxWindows(0);
  ASSERT_TRUE(s.view.score()) << s.view.lastError().toStdString();
  s.view.findChild<QPushButton*>(QStringLiteral("losses_cancel"))->click();
  ASSERT_TRUE(wait_for([&] { return !s.view.isScoring(); }));
  EXPECT_FALSE(s.view.hasScores());
  EXPECT_TRUE(s.view.lastError().contains(QStringLiteral("cancelled"))) << s.view.lastError().toStdString();
  EXPECT_TRUE(s.view.findChild<QPushButton*>(QStringLiteral("losses_score"))->isEnabled());
  EXPECT_EQ(s.view.documentTable()->rowCount(), 0);
}

TEST(LossesView, ComparesTwoRunsOnTheSameWindowsTokenByToken) {
  Studio s;
  const QString a = trained_run(), b = second_run();
  s.runs.open(b);
  s.runs.setCurrent(s.runs.open(a));
  s.view.setMaxWindows(8);
  ASSERT_TRUE(s.view.score()) << s.view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !s.view.isScoring(); }));
  ASSERT_TRUE(s.view.hasScores()) << s.view.lastError().toStdString();
  ASSERT_EQ(s.view.comparedRuns(), QStringList{QDir(b).absolutePath()}) << s.view.statusLabel()->text().toStdString();
  const hsm::TokenScores& sa = s.view.scores();
  const hsm::TokenScores* sb = s.view.scoresOf(QDir(b).absolutePath());
  ASSERT_NE(sb, nullptr);
  ASSERT_EQ(sb->tokens.size(), sa.tokens.size());
  // Both curves overlaid, each run's own.
  ASSERT_EQ(s.view.positionPlot()->series().size(), 2);
  EXPECT_EQ(s.view.positionPlot()->series()[1].name, QStringLiteral("run-b"));
  EXPECT_TRUE(s.view.statusLabel()->text().contains(QStringLiteral("run-b")));

  // Compare mode: documents by mean difference B − A, B's best first; the text tinted by it.
  EXPECT_EQ(s.view.compareBox()->count(), 2);
  s.view.setCompareRun(QDir(b).absolutePath());
  std::map<int64_t, std::pair<double, int64_t>> docs;
  for (size_t i = 0; i < sa.tokens.size(); ++i) {
    ASSERT_EQ(sb->tokens[i].target, sa.tokens[i].target);
    docs[sa.tokens[i].document].first += sb->tokens[i].loss - sa.tokens[i].loss;
    ++docs[sa.tokens[i].document].second;
  }
  QTableWidget* table = s.view.documentTable();
  ASSERT_EQ(table->rowCount(), static_cast<int>(docs.size()));
  EXPECT_TRUE(table->horizontalHeaderItem(2)->text().contains(QStringLiteral("run-b")));
  double previous = -1e300;
  for (int r = 0; r < table->rowCount(); ++r) {
    const int64_t d = table->item(r, 0)->data(Qt::UserRole).toLongLong();
    const double mean = docs[d].first / static_cast<double>(docs[d].second);
    EXPECT_GE(mean, previous - 1e-12) << "row " << r;
    EXPECT_NEAR(table->item(r, 2)->text().toDouble(), mean, 1e-3);
    previous = mean;
  }
  EXPECT_EQ(s.view.shownDocument(), table->item(0, 0)->data(Qt::UserRole).toLongLong());
  QTextCursor cursor(s.view.documentText()->document());
  bool differs = false;
  for (const LossesView::Span& span : s.view.spans()) {
    const double difference = sb->tokens[span.token].loss - sa.tokens[span.token].loss;
    differs = differs || std::abs(difference) > 0.05;
    cursor.setPosition(span.end);
    EXPECT_EQ(cursor.charFormat().background().color(), LossesView::differenceTint(difference)) << span.token;
  }
  EXPECT_TRUE(differs);  // else the tint proves nothing
  const QString tip = s.view.tooltipAt(s.view.spans().front().start);
  EXPECT_TRUE(tip.contains(QStringLiteral("run-b")) && tip.contains(QFileInfo(a).fileName())) << tip.toStdString();
  ASSERT_TRUE(wait_for([&] { return s.view.hasAlternatives(); }));
  const QString both = s.view.tooltipAt(s.view.spans().front().start);
  EXPECT_EQ(both.count(QStringLiteral("first choices")), 2) << both.toStdString();  // each run's own
  EXPECT_TRUE(both.contains(QStringLiteral("Δ loss run-b"))) << both.toStdString();
  // Diverging: blue where B does better, red where it does worse, near white where equal.
  EXPECT_GT(LossesView::differenceTint(-1).blue(), LossesView::differenceTint(-1).red());
  EXPECT_GT(LossesView::differenceTint(1).red(), LossesView::differenceTint(1).blue());
  EXPECT_GT(LossesView::differenceTint(0).lightness(), LossesView::differenceTint(2).lightness());

  // Back to the plain losses.
  s.view.setCompareRun(QString());
  cursor.setPosition(s.view.spans().front().end);
  EXPECT_EQ(cursor.charFormat().background().color(),
            LossesView::lossTint(sa.tokens[s.view.spans().front().token].loss));
}

// A run with another tokenizer (the bundled hsm_ab: 5000 pieces, the tiny run 300) is not
// compared: it is left out with a note naming it, and the current run's losses are shown.
TEST(LossesView, LeavesOutARunWithAnotherTokenizer) {
  Studio s;
  s.runs.open(QStringLiteral(HSM_RESOURCES_PATH "/models/hsm_ab"));
  s.runs.setCurrent(s.runs.open(trained_run()));
  s.view.setMaxWindows(4);
  ASSERT_TRUE(s.view.score()) << s.view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !s.view.isScoring(); }));
  ASSERT_TRUE(s.view.hasScores()) << s.view.lastError().toStdString();
  EXPECT_TRUE(s.view.comparedRuns().isEmpty());
  EXPECT_EQ(s.view.positionPlot()->series().size(), 1);
  EXPECT_FALSE(s.view.compareBox()->isEnabled());
  const QString status = s.view.statusLabel()->text();
  // The refusal in one line of plain words (issue 69: six lines of tokenizer paths and hashes),
  // before anything of hsm_ab is scored.
  EXPECT_TRUE(status.contains(QStringLiteral("hsm_ab left out: another tokenizer (5000 pieces against 300)")))
      << status.toStdString();
  EXPECT_FALSE(status.contains(QStringLiteral("tokenizer.model"))) << status.toStdString();
}


// A bundled model names the corpus it was trained from on the machine that trained it; on a
// machine without that file (a user's, a fresh Debian root: FirstShowings failed there with
// "Choose a corpus: … does not exist") Score takes the TinyStories starter corpus that ships
// beside the models, shows it in the corpus field and says so.
TEST(LossesView, ABundledModelWhoseCorpusIsMissingIsScoredOnTheStarterCorpus) {
  const ResourcesElsewhere resources(QStringLiteral("resources-elsewhere"));
  Studio s;
  s.runs.setCurrent(s.runs.open(resources.model()));
  s.view.setMaxWindows(2);
  ASSERT_TRUE(s.view.score()) << s.view.lastError().toStdString();
  EXPECT_TRUE(s.view.statusText().contains(QStringLiteral("starter corpus"))) << s.view.statusText().toStdString();
  const auto* field = s.view.findChild<QLineEdit*>(QStringLiteral("losses_data"));
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(field->text(), resources.starter());
  ASSERT_TRUE(wait_for([&] { return !s.view.isScoring(); }));
  EXPECT_TRUE(s.view.hasScores()) << s.view.lastError().toStdString();
}
