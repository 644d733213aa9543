// The Trace view (issue 51) driven through its widgets on the tiny trained model (hsm_ab, attn,
// hsm_ab) and a second seed of it beside: the maps it shows are hsm::Tracer's for the same
// request, the route is each layer's strongest position, Cancel stops a trace and leaves the
// view usable, bad input is refused in words, and every map exports (PNG, SVG, CSV).
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QDoubleSpinBox>
#include <QFile>
#include <QLineEdit>
#include <QFileInfo>
#include <QProgressBar>
#include <QPushButton>
#include <QTemporaryDir>
#include <atomic>
#include <cmath>
#include <thread>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/trace_view.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/task_example_bar.h"
#include "hsm/model.h"
#include "hsm/trace.h"
#include "hsm/trainer.h"
#include "studio_test_util.h"
#include "../engine/training_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

struct Studio {
  RunList runs;
  EngineHost engine;
  TraceView view{&runs, &engine};
};

// A clean prompt and a copy with one word replaced that tokenises to as many tokens, and the
// first position where they differ (traced there: the replaced token moves its own prediction
// by nats, where a far answer moves by millinats in a 20-step model).
struct Pair {
  QString clean, corrupt;
  int position = -1;
};

Pair same_length_pair(const QString& run) {
  const hsm::Tracer tracer(hsm::Model::load(run.toStdString(), "cpu"));
  const QString clean = QStringLiteral("Once upon a time, Lily saw a red ball in the park.");
  for (const char* word : {"Ben", "Tom", "Sue", "Max", "Mia", "Sam", "Ann", "Kim", "Lola", "Lucy", "Anna"}) {
    QString corrupt = clean;
    corrupt.replace(QStringLiteral("Lily"), QString::fromLatin1(word));
    const hsm::TraceRequest r = tracer.text_request(clean.toStdString(), corrupt.toStdString());
    if (r.clean.size() != r.corrupt.size() || r.clean == r.corrupt) continue;
    for (size_t p = 0; p < r.clean.size(); ++p)
      if (r.clean[p] != r.corrupt[p]) return {clean, corrupt, static_cast<int>(p)};
  }
  return {};
}

// hsm::Tracer on the run for the request the view makes of these prompts and answer position.
hsm::Trace engine_trace(const QString& run, const Pair& pair) {
  const hsm::Tracer tracer(hsm::Model::load(run.toStdString(), "cpu"));
  hsm::TraceRequest r = tracer.text_request(pair.clean.toStdString(), pair.corrupt.toStdString());
  r.answer_position = pair.position;
  return tracer.trace(r);
}

// The column's maps as the view shows them equal the engine's: every heatmap cell, in nats
// (effect × the clean-corrupt span; both runs are float32 on the same weights).
void expect_maps_equal(const TraceView& view, int column, const hsm::Trace& expected) {
  ASSERT_TRUE(view.hasTrace(column));
  const hsm::Trace& got = view.trace(column);
  ASSERT_EQ(got.layers, expected.layers);
  ASSERT_EQ(got.positions, expected.positions);
  EXPECT_EQ(got.answer_token, expected.answer_token);
  EXPECT_NEAR(got.clean_logprob, expected.clean_logprob, 1e-4);
  EXPECT_NEAR(got.corrupt_logprob, expected.corrupt_logprob, 1e-4);
  const double span = std::abs(expected.clean_logprob - expected.corrupt_logprob);
  ASSERT_GT(span, 1e-3) << "a corruption the answer depends on";
  ASSERT_EQ(expected.exact.size(), 3u);
  ASSERT_EQ(expected.attribution.size(), 3u);
  const int L = static_cast<int>(expected.layers), T = static_cast<int>(expected.positions);
  for (int s = 0; s < TraceView::kSites; ++s) {
    HeatmapPanel* exact = view.exactPanel(column, s);
    HeatmapPanel* attribution = view.attributionPanel(column, s);
    ASSERT_EQ(exact->rows(), L) << s;
    ASSERT_EQ(exact->cols(), T) << s;
    ASSERT_EQ(attribution->rows(), L) << s;
    for (int l = 0; l < L; ++l)
      for (int p = 0; p < T; ++p) {
        const double e = expected.exact[s].at(l, p, T), a = expected.attribution[s].at(l, p, T);
        if (std::isfinite(e)) {
          EXPECT_NEAR(exact->value(l, p) * span, e * span, 1e-4)
              << "exact site " << s << " layer " << l << " pos " << p;
        }
        if (std::isfinite(a)) {
          EXPECT_NEAR(attribution->value(l, p) * span, a * span, 1e-4)
              << "attribution site " << s << " layer " << l << " pos " << p;
        }
      }
  }
  // The route: each layer's position of largest |effect| at or before the answer.
  for (int s = 0; s < TraceView::kSites; ++s) {
    const std::vector<int> route = view.route(column, s);
    ASSERT_EQ(static_cast<int>(route.size()), L);
    for (int l = 0; l < L; ++l) {
      double largest = -1;
      for (int p = 0; p <= expected.answer_position; ++p)
        largest = std::max(largest, std::abs(expected.exact[s].at(l, p, T)));
      ASSERT_GE(route[l], 0);
      EXPECT_NEAR(std::abs(expected.exact[s].at(l, route[l], T)), largest, 1e-3 / span) << s << " " << l;
    }
  }
}

bool trace_and_wait(Studio& s) {
  s.view.findChild<QPushButton*>(QStringLiteral("trace_run"))->click();
  if (!s.view.isTracing()) return false;
  return wait_for([&] { return !s.view.isTracing(); });
}

// The tiny model trained longer than trained_run's 20 steps (which predict nearly the same
// whatever the prompt: a corruption moves log p by a fraction of a millinat), and a second
// seed of it.
QString traced_run(uint64_t seed = 1337) {
  return trained_variant(QStringLiteral("trace_seed%1").arg(seed), [seed](hsm::RunSpec& spec) {
    spec.train.steps = 80;
    spec.train.seed = seed;
  });
}

// `run` opened as the current run, with a same-length pair as its prompts and the answer at the
// replaced position (position -1: no such pair).
Pair open_with_pair(Studio& s, const QString& run) {
  const Pair pair = same_length_pair(run);
  s.runs.setCurrent(s.runs.open(run));
  s.view.setPrompts(pair.clean, pair.corrupt);
  s.view.setAnswer(pair.position);
  return pair;
}

}  // namespace

TEST(TraceView, ShowsTheTracersMapsForTheCurrentRunAndOneBeside) {
  Studio s;
  const QString run = traced_run();
  const QString other = traced_run(2);
  const Pair pair = same_length_pair(run);
  ASSERT_GE(pair.position, 0) << "no word replacement of the same token count";
  s.runs.open(other);
  s.runs.setCurrent(s.runs.open(run));
  s.view.setPrompts(pair.clean, pair.corrupt);
  s.view.setAnswer(pair.position);
  s.view.setCompareRun(other);
  ASSERT_EQ(s.view.compareRun(), QDir(other).absolutePath());
  ASSERT_TRUE(trace_and_wait(s)) << s.view.lastError().toStdString();
  ASSERT_TRUE(s.view.hasTrace(0)) << s.view.statusText().toStdString();
  ASSERT_TRUE(s.view.hasTrace(1)) << s.view.statusText().toStdString();
  EXPECT_EQ(s.view.traceRun(0), QDir(run).absolutePath());
  EXPECT_EQ(s.view.traceRun(1), QDir(other).absolutePath());

  expect_maps_equal(s.view, 0, engine_trace(run, pair));
  expect_maps_equal(s.view, 1, engine_trace(other, pair));
  // The two runs differ (another seed): the second column is not the first one again.
  EXPECT_NE(s.view.trace(0).clean_logprob, s.view.trace(1).clean_logprob);

  // The summary names the run, the answer and the agreement the engine computed.
  const hsm::Trace& t = s.view.trace(0);
  EXPECT_TRUE(s.view.summary(0).contains(QFileInfo(run).fileName())) << s.view.summary(0).toStdString();
  EXPECT_TRUE(s.view.summary(0).contains(QString::number(t.agreement, 'f', 3))) << s.view.summary(0).toStdString();
  // Each site's r is the engine's (hsm::trace_agreement) of the maps of that site.
  for (int site = 0; site < TraceView::kSites; ++site) {
    const std::string& name = hsm::trace_sites()[static_cast<size_t>(site)];
    const double r = hsm::trace_agreement(*hsm::trace_map(t.exact, name), *hsm::trace_map(t.attribution, name));
    if (std::isnan(r))
      EXPECT_TRUE(std::isnan(s.view.siteAgreement(0, site))) << name;
    else
      EXPECT_EQ(s.view.siteAgreement(0, site), r) << name;
  }
  EXPECT_TRUE(s.view.summary(1).contains(QFileInfo(other).fileName())) << s.view.summary(1).toStdString();
  // Layer labels give an HSM layer's shift (layer 2 shifts by 4) and another mixer's name.
  EXPECT_TRUE(s.view.exactPanel(0, 0)->hoverText(2, 0).contains(QStringLiteral("'L2 ↦4'")))
      << s.view.exactPanel(0, 0)->hoverText(2, 0).toStdString();
  EXPECT_TRUE(s.view.exactPanel(0, 0)->hoverText(1, 0).contains(QStringLiteral("'L1 attn'")))
      << s.view.exactPanel(0, 0)->hoverText(1, 0).toStdString();
  // Nothing after the answer has any effect (the model is causal), as the map shows.
  for (int l = 0; l < t.layers; ++l)
    for (int p = pair.position + 1; p < t.positions; ++p) EXPECT_EQ(s.view.exactPanel(0, 0)->value(l, p), 0.0);

  // Export: every map as PNG, SVG and CSV, and the long CSV with every cell.
  QTemporaryDir out;
  QString error;
  const QStringList files = s.view.exportAll(out.path(), &error);
  EXPECT_TRUE(error.isEmpty()) << error.toStdString();
  int png = 0, svg = 0, csv = 0;
  for (const QString& f : files) {
    EXPECT_GT(QFileInfo(f).size(), 0) << f.toStdString();
    png += f.endsWith(QStringLiteral(".png")), svg += f.endsWith(QStringLiteral(".svg")),
        csv += f.endsWith(QStringLiteral(".csv"));
  }
  // Two runs: exact and attribution of three sites, and the routes.
  EXPECT_EQ(png, 2 * (2 * TraceView::kSites + 1));
  EXPECT_EQ(svg, 2 * (2 * TraceView::kSites + 1));
  EXPECT_EQ(csv, 2 * (2 * TraceView::kSites + 1) + 1);
  QString longCsv;
  for (const QString& f : files)
    if (f.endsWith(QStringLiteral("-maps.csv"))) {
      QFile file(f);
      ASSERT_TRUE(file.open(QIODevice::ReadOnly));
      longCsv = QString::fromUtf8(file.readAll());
    }
  const QStringList lines = longCsv.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  EXPECT_EQ(lines.size(), 1 + 2 * 2 * TraceView::kSites * t.layers * t.positions);
  EXPECT_EQ(longCsv, s.view.mapsCsv());

  // Another current run: nothing of these traces is left under its name (issue 36).
  s.runs.setCurrent(s.runs.indexOf(QDir(other).absolutePath()));
  EXPECT_FALSE(s.view.hasTrace(0));
  EXPECT_FALSE(s.view.hasTrace(1));
  EXPECT_EQ(s.view.exactPanel(0, 0)->rows(), 0);
  EXPECT_FALSE(s.view.summary(0).contains(QFileInfo(run).fileName())) << s.view.summary(0).toStdString();
  EXPECT_TRUE(s.view.plots().isEmpty());
}

// The routes panel draws the routes the engine returns for the clean prompt and the answer
// position, pruned at the threshold; a new threshold re-prunes what the trace returned (no new
// trace), and the lines drawn are the kept edges, from (from, layer) to (to, layer + 1).
TEST(TraceView, TheRoutesPanelDrawsTheEnginesRoutesAndTheThresholdReprunes) {
  Studio s;
  const QString run = traced_run();
  const Pair pair = open_with_pair(s, run);
  ASSERT_GE(pair.position, 0) << "no word replacement of the same token count";
  ASSERT_TRUE(trace_and_wait(s)) << s.view.lastError().toStdString();
  ASSERT_TRUE(s.view.hasTrace(0));
  const hsm::Tracer tracer(hsm::Model::load(run.toStdString(), "cpu"));
  const hsm::Routes expected =
      tracer.routes(tracer.text_request(pair.clean.toStdString(), pair.clean.toStdString()).clean, pair.position);
  const hsm::Routes& got = s.view.trace(0).routes;
  ASSERT_EQ(got.edges.size(), expected.edges.size());
  ASSERT_GT(got.edges.size(), 0u);
  for (size_t i = 0; i < got.edges.size(); ++i) {
    EXPECT_EQ(got.edges[i].layer, expected.edges[i].layer);
    EXPECT_EQ(got.edges[i].from, expected.edges[i].from);
    EXPECT_EQ(got.edges[i].to, expected.edges[i].to);
    EXPECT_NEAR(got.edges[i].weight, expected.edges[i].weight, 1e-5);
  }
  const void* traced = &s.view.trace(0);
  size_t previous = 0;
  for (double threshold : {0.04, 0.0, 0.2, 1.0}) {
    s.view.findChild<QDoubleSpinBox*>(QStringLiteral("trace_route_threshold"))->setValue(threshold);
    EXPECT_FALSE(s.view.isTracing()) << "re-pruning computes nothing";
    EXPECT_EQ(&s.view.trace(0), traced);
    const std::vector<hsm::RouteEdge> kept = hsm::prune_routes(got, threshold);
    ASSERT_EQ(s.view.shownRoutes(0).size(), kept.size()) << threshold;
    // The lines on the plot, in order: one per kept edge, at its nodes.
    QCustomPlot* p = s.view.routesPanel(0)->plot();
    std::vector<QCPItemLine*> lines;
    for (int i = 0; i < p->itemCount(); ++i)
      if (p->item(i)->property("route_edge").toBool()) lines.push_back(qobject_cast<QCPItemLine*>(p->item(i)));
    ASSERT_EQ(lines.size(), kept.size()) << threshold;
    for (size_t i = 0; i < kept.size(); ++i) {
      const double offset = kept[i].kind == hsm::RouteKind::kFfn ? 0.18 : 0.0;
      EXPECT_NEAR(lines[i]->start->coords().x(), kept[i].from + offset, 1e-9);
      EXPECT_NEAR(lines[i]->start->coords().y(), kept[i].layer, 1e-9);
      EXPECT_NEAR(lines[i]->end->coords().x(), kept[i].to + offset, 1e-9);
      EXPECT_NEAR(lines[i]->end->coords().y(), kept[i].layer + 1, 1e-9);
      EXPECT_DOUBLE_EQ(lines[i]->property("weight").toDouble(), kept[i].weight);
      EXPECT_GE(kept[i].weight, threshold);
    }
    if (threshold == 0.0) {
      EXPECT_GT(kept.size(), previous) << "threshold 0 keeps more than 0.04";
      // Layer 1 (attention) reaches back beyond any shift; layer 2 (hsm_ab) only by its shift 4.
      bool far = false;
      for (const hsm::RouteEdge& e : kept) {
        if (e.kind != hsm::RouteKind::kMixer) continue;
        if (e.layer == 1 && e.to - e.from > 4) far = true;
        if (e.layer == 2) {
          EXPECT_TRUE(e.to - e.from == 0 || e.to - e.from == 4) << e.from << " -> " << e.to;
        }
      }
      EXPECT_TRUE(far);
    }
    previous = kept.size();
  }
  EXPECT_TRUE(s.view.shownRoutes(0).empty()) << "threshold 1: no term is the whole of its node";
}

// A run trained on a synthetic task traces test example N of its task, corrupted by the engine
// (its stored key replaced): the view shows the example picker instead of the prompts, and the
// maps are Tracer::task_request(N)'s.
TEST(TraceView, TracesATaskRunsTestExample) {
  static const QString run = [] {
    const hsm::RunSpec spec =
        hsm::test::tiny_task_run(temp_root().toStdString() + "/trace_task_run", "mqar:vocab=64,pairs=4,context=32", 100);
    hsm::Trainer(spec).run();
    return QString::fromStdString(spec.run_dir);
  }();
  // The first test example whose corruption moves the answer by a millinat or more.
  const hsm::Tracer tracer(hsm::Model::load(run.toStdString(), "cpu"));
  int example = -1;
  hsm::Trace expected;
  for (int i = 0; i < 20 && example < 0; ++i) {
    try {
      expected = tracer.trace(tracer.task_request(i));
      if (std::abs(expected.clean_logprob - expected.corrupt_logprob) > 1e-3) example = i;
    } catch (const std::invalid_argument&) {
    }
  }
  ASSERT_GE(example, 0) << "no test example whose corruption moves the answer";
  Studio s;
  s.runs.setCurrent(s.runs.open(run));
  EXPECT_TRUE(s.view.findChild<QLineEdit*>(QStringLiteral("trace_clean"))->isHidden());
  EXPECT_FALSE(s.view.exampleBar()->isHidden());
  s.view.exampleBar()->setExample(example);
  ASSERT_TRUE(trace_and_wait(s)) << s.view.lastError().toStdString();
  ASSERT_TRUE(s.view.hasTrace(0)) << s.view.statusText().toStdString();
  EXPECT_EQ(s.view.trace(0).clean, expected.clean);
  EXPECT_EQ(s.view.trace(0).corrupt, expected.corrupt);
  EXPECT_EQ(s.view.trace(0).answer_position, expected.answer_position);
  expect_maps_equal(s.view, 0, expected);
}

TEST(TraceView, CancelStopsATraceAndLeavesTheViewUsable) {
  Studio s;
  const QString run = traced_run();
  const Pair pair = open_with_pair(s, run);
  ASSERT_GE(pair.position, 0) << "no word replacement of the same token count";
  // Hold the analysis executor, so the trace is queued and under way when Cancel is pressed
  // (the tiny model's trace itself takes milliseconds).
  std::atomic<bool> release{false};
  QFuture<void> blocker = s.engine.analysis().call<void>(run, [&release](const CallContext&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  s.view.findChild<QPushButton*>(QStringLiteral("trace_run"))->click();
  ASSERT_TRUE(s.view.isTracing()) << s.view.lastError().toStdString();
  auto* cancel = s.view.findChild<QPushButton*>(QStringLiteral("trace_cancel"));
  EXPECT_TRUE(cancel->isEnabled());
  EXPECT_FALSE(s.view.findChild<QPushButton*>(QStringLiteral("trace_run"))->isEnabled());
  cancel->click();
  release = true;
  ASSERT_TRUE(wait_for([&] { return !s.view.isTracing(); }));
  EXPECT_FALSE(s.view.hasTrace(0)) << "the cancelled trace is not shown";
  EXPECT_TRUE(s.view.statusText().contains(QStringLiteral("cancelled"))) << s.view.statusText().toStdString();
  EXPECT_EQ(s.view.findChild<QProgressBar*>(QStringLiteral("trace_progress"))->format(), QStringLiteral("cancelled"));
  EXPECT_FALSE(cancel->isEnabled());
  // Usable: the next trace runs to the end.
  ASSERT_TRUE(trace_and_wait(s)) << s.view.lastError().toStdString();
  EXPECT_TRUE(s.view.hasTrace(0)) << s.view.statusText().toStdString();
  EXPECT_EQ(s.view.exactPanel(0, 0)->rows(), 3);
}

TEST(TraceView, BadInputIsRefusedInWords) {
  Studio s;
  const QString run = trained_run();
  EXPECT_FALSE(s.view.runTrace());
  EXPECT_EQ(s.view.lastError(), QStringLiteral("Open a run first."));
  s.runs.setCurrent(s.runs.open(run));

  s.view.setPrompts(QString(), QStringLiteral("Tom saw a ball."));
  EXPECT_FALSE(s.view.runTrace());
  EXPECT_TRUE(s.view.statusText().contains(QStringLiteral("clean prompt"))) << s.view.statusText().toStdString();
  s.view.setPrompts(QStringLiteral("Lily saw a ball."), QStringLiteral("Lily saw a ball."));
  EXPECT_FALSE(s.view.runTrace());
  EXPECT_TRUE(s.view.statusText().contains(QStringLiteral("equals the clean one")))
      << s.view.statusText().toStdString();

  // Prompts of different token counts: the engine refuses, the view says why and stays usable.
  s.view.setPrompts(QStringLiteral("Lily saw a ball."), QStringLiteral("Lily saw a big red ball in the park."));
  ASSERT_TRUE(trace_and_wait(s)) << s.view.lastError().toStdString();
  EXPECT_FALSE(s.view.hasTrace(0));
  EXPECT_TRUE(s.view.statusText().startsWith(QStringLiteral("Trace failed:"))) << s.view.statusText().toStdString();
  EXPECT_TRUE(s.view.statusText().contains(QStringLiteral("same positions"))) << s.view.statusText().toStdString();
  EXPECT_TRUE(s.view.findChild<QPushButton*>(QStringLiteral("trace_run"))->isEnabled());
  // An answer position outside the prompt: refused in the engine's words.
  const Pair pair = same_length_pair(run);
  ASSERT_GE(pair.position, 0);
  s.view.setPrompts(pair.clean, pair.corrupt);
  s.view.setAnswer(500);
  ASSERT_TRUE(trace_and_wait(s));
  EXPECT_TRUE(s.view.statusText().contains(QStringLiteral("outside the prompt"))) << s.view.statusText().toStdString();
  QString error;
  QTemporaryDir out;
  s.view.exportAll(out.path(), &error);
  EXPECT_FALSE(error.isEmpty()) << "nothing to export";
}
