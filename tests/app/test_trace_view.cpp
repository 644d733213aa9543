// The Trace view (issue 51) driven through its widgets on the tiny trained model (hsm_ab, attn,
// hsm_ab) and a second seed of it beside: the maps it shows are hsm::Tracer's for the same
// request, the route is each layer's strongest position, Cancel stops a trace and leaves the
// view usable, bad input is refused in words, and every map exports (PNG, SVG, CSV).
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLineEdit>
#include <QFileInfo>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QTemporaryDir>
#include <QKeyEvent>
#include <atomic>
#include <cmath>
#include <fstream>
#include <thread>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/trace_view.h"
#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/task_example_bar.h"
#include "hsm/formation.h"
#include "hsm/model.h"
#include "hsm/run_folder.h"
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

// ---- over training (issue 67) -----------------------------------------------------------------

namespace {

// A run that recorded a trace at each validation (steps 10, 20, 30, 40) of a digit pair (one
// byte token each, so the pair has the same token count; the answer after the digit, which so
// moves at every step) and kept its model of step 20.
QString history_run(uint64_t seed = 1337) {
  return trained_variant(QStringLiteral("trace_history%1").arg(seed), [seed](hsm::RunSpec& spec) {
    spec.train.steps = 40;
    spec.train.seed = seed;
    spec.train.checkpoint_every = 40;
    spec.train.snapshot_every = 20;
    spec.train.trace_text = "Once upon a time, Lily saw 3";
    spec.train.trace_corrupt = "Once upon a time, Lily saw 4";
  });
}

// The run's records with their route share and accuracy replaced (the maps kept), written back:
// a series whose formed step and accuracy step are known.
std::vector<hsm::TraceRecord> rewrite_series(const QString& run, const std::vector<double>& shares,
                                             const std::vector<double>& accuracy) {
  std::vector<hsm::TraceRecord> records = hsm::read_trace_log(run.toStdString());
  std::ofstream out(hsm::RunFolder(run.toStdString()).traces, std::ios::trunc);
  for (size_t i = 0; i < records.size() && i < shares.size(); ++i) {
    records[i].route_share = shares[i];
    records[i].accuracy = accuracy[i];
    out << hsm::trace_record_to_json_line(records[i]) << "\n";
  }
  return records;
}

// The column shows the record's exact maps and its routes pruned at the view's threshold, and no
// attribution.
void expect_record_shown(const TraceView& view, const hsm::TraceRecord& r) {
  ASSERT_TRUE(view.hasTrace(0));
  ASSERT_EQ(r.exact.size(), 3u);
  const int L = static_cast<int>(r.layers), T = static_cast<int>(r.positions);
  for (int s = 0; s < TraceView::kSites; ++s) {
    HeatmapPanel* exact = view.exactPanel(0, s);
    ASSERT_EQ(exact->rows(), L);
    ASSERT_EQ(exact->cols(), T);
    EXPECT_EQ(view.attributionPanel(0, s)->rows(), 0);
    EXPECT_TRUE(view.attributionPanel(0, s)->isHidden()) << "a record has no attribution: the exact map is wide";
    const hsm::TraceMap* m = hsm::trace_map(r.exact, hsm::trace_sites()[static_cast<size_t>(s)]);
    ASSERT_NE(m, nullptr);
    for (int l = 0; l < L; ++l)
      for (int p = 0; p < T; ++p)
        if (std::isfinite(m->at(l, p, T))) {
          EXPECT_NEAR(exact->value(l, p), m->at(l, p, T), 1e-9) << s << " " << l << " " << p;
        }
  }
  hsm::Routes routes;
  routes.layers = r.layers;
  routes.positions = r.positions;
  routes.answer_position = r.answer_position;
  routes.edges = r.routes;
  const std::vector<hsm::RouteEdge> kept = hsm::prune_routes(routes, view.routeThreshold());
  ASSERT_EQ(view.shownRoutes(0).size(), kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(view.shownRoutes(0)[i].from, kept[i].from);
    EXPECT_EQ(view.shownRoutes(0)[i].layer, kept[i].layer);
    EXPECT_EQ(view.shownRoutes(0)[i].weight, kept[i].weight);
  }
}

// A key pressed on the widget, as a user presses it (the slider's keys move it).
void press(QWidget* w, Qt::Key key) {
  QKeyEvent down(QEvent::KeyPress, key, Qt::NoModifier), up(QEvent::KeyRelease, key, Qt::NoModifier);
  QCoreApplication::sendEvent(w, &down);
  QCoreApplication::sendEvent(w, &up);
}

// The largest difference between two runs' exact maps of one site (at cells both have).
double largest_difference(const hsm::Trace& a, const hsm::Trace& b) {
  double most = 0;
  for (size_t s = 0; s < a.exact.size() && s < b.exact.size(); ++s)
    for (size_t i = 0; i < a.exact[s].effect.size() && i < b.exact[s].effect.size(); ++i)
      if (std::isfinite(a.exact[s].effect[i]) && std::isfinite(b.exact[s].effect[i]))
        most = std::max(most, std::abs(a.exact[s].effect[i] - b.exact[s].effect[i]));
  return most;
}

}  // namespace

// The slider moves over the steps the run recorded (and kept): each recorded step shows that
// record's maps and routes, read off the GUI thread; the formation pane draws the route share and
// the accuracy with the formed step and the accuracy step marked; at a kept step, Trace traces the
// model as it was then; the run beside is drawn dashed on the same axis.
TEST(TraceView, TheStepSliderShowsEachRecordedStepAndTracesTheModelKeptThere) {
  const QString run = history_run(), other = history_run(2);
  // Formed at 30 (0.3 and 0.4 stay above 0.1); accuracy from 0.1 to 0.9 crosses 0.5 at 20.
  const std::vector<hsm::TraceRecord> records = rewrite_series(run, {0.01, 0.05, 0.3, 0.4}, {0.1, 0.6, 0.7, 0.9});
  rewrite_series(other, {0.02, 0.2, 0.02, 0.03}, {0.2, 0.2, 0.3, 0.3});
  ASSERT_EQ(records.size(), 4u) << "the pair recorded at every validation";
  ASSERT_EQ(records[1].step, 20);
  ASSERT_FALSE(records[1].no_effect);
  ASSERT_FALSE(records[3].no_effect);
  Studio s;
  s.runs.open(other);
  s.runs.setCurrent(s.runs.open(run));
  auto* slider = s.view.findChild<QSlider*>(QStringLiteral("trace_step_slider"));
  ASSERT_NE(slider, nullptr);
  ASSERT_TRUE(wait_for([&] { return slider->isEnabled() && !s.view.isLoadingHistory(); }));
  EXPECT_EQ(s.view.history(0).steps, (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(s.view.history(0).kept, (std::vector<int64_t>{20, 40}));
  ASSERT_EQ(slider->maximum(), 3);
  // Opened at the newest step, whose record is shown at once (nothing was traced yet).
  EXPECT_EQ(s.view.sliderStep(), 40);
  expect_record_shown(s.view, records[3]);

  // The formation pane: the series and the two marked steps.
  QWidget* pane = s.view.findChild<QWidget*>(QStringLiteral("trace_formation_pane"));
  ASSERT_NE(pane, nullptr);
  EXPECT_FALSE(pane->isHidden());
  const QVector<PlotSeries>& series = s.view.formationPanel()->series();
  // Route share, accuracy, and each of the tiny model's three layers' mixer effect as recorded,
  // on the right axis (its own scale: it passes 1 on the plateau).
  ASSERT_EQ(series.size(), 2 + 3);
  EXPECT_EQ(series[0].x, (QVector<double>{10, 20, 30, 40}));
  EXPECT_EQ(series[0].y, (QVector<double>{0.01, 0.05, 0.3, 0.4}));
  EXPECT_EQ(series[1].y, (QVector<double>{0.1, 0.6, 0.7, 0.9}));
  EXPECT_FALSE(series[0].right_axis || series[1].right_axis);
  QCustomPlot* fp = s.view.formationPanel()->plot();
  int effects = 0;
  for (int l = 0; l < 3; ++l) {
    const PlotSeries& effect = series[2 + l];
    EXPECT_EQ(effect.name, QStringLiteral("L%1 mixer effect").arg(l));
    EXPECT_TRUE(effect.right_axis);
    ASSERT_EQ(effect.y.size(), 4);
    for (size_t i = 0; i < records.size(); ++i) {
      ASSERT_EQ(records[i].mixer_effect.size(), 3u);
      if (std::isfinite(records[i].mixer_effect[static_cast<size_t>(l)])) {
        EXPECT_EQ(effect.y[static_cast<int>(i)], records[i].mixer_effect[static_cast<size_t>(l)]) << l << " " << i;
        ++effects;
      }
    }
    EXPECT_EQ(fp->graph(2 + l)->valueAxis(), fp->yAxis2) << l;
    EXPECT_EQ(fp->graph(2 + l)->data()->size(), 4) << l;
  }
  EXPECT_GT(effects, 0) << "no layer recorded a mixer effect";
  EXPECT_TRUE(fp->yAxis2->visible());
  EXPECT_EQ(fp->graph(0)->valueAxis(), fp->yAxis);
  // The box hides them (and the right axis); checked again, they are back.
  auto* mixers = s.view.findChild<QCheckBox*>(QStringLiteral("trace_formation_mixers"));
  ASSERT_NE(mixers, nullptr);
  mixers->click();
  EXPECT_EQ(s.view.formationPanel()->series().size(), 2);
  EXPECT_FALSE(fp->yAxis2->visible());
  mixers->click();
  EXPECT_EQ(s.view.formationPanel()->series().size(), 5);
  EXPECT_EQ(s.view.markedStep(QStringLiteral("formed")), 30.0);
  EXPECT_EQ(s.view.markedStep(QStringLiteral("accuracy")), 20.0);
  EXPECT_EQ(s.view.markedStep(QStringLiteral("slider")), 40.0);
  EXPECT_TRUE(s.view.formationSummary().contains(QStringLiteral("formed at step 30")))
      << s.view.formationSummary().toStdString();

  // The real slider, by its keys: Home is step 10, its record shown and marked.
  slider->setFocus();
  press(slider, Qt::Key_Home);
  EXPECT_EQ(s.view.sliderStep(), 10);
  if (records[0].no_effect)  // at step 10 the digit did not move the answer yet: no maps recorded
    EXPECT_EQ(s.view.exactPanel(0, 0)->rows(), 0);
  else
    expect_record_shown(s.view, records[0]);
  EXPECT_EQ(s.view.markedStep(QStringLiteral("slider")), 10.0);
  EXPECT_TRUE(s.view.summary(0).contains(QStringLiteral("at step 10, recorded while it trained")))
      << s.view.summary(0).toStdString();
  EXPECT_TRUE(s.view.stepText().contains(QStringLiteral("step 10 (recorded)"))) << s.view.stepText().toStdString();
  press(slider, Qt::Key_Right);
  EXPECT_EQ(s.view.sliderStep(), 20);
  expect_record_shown(s.view, records[1]);
  EXPECT_GT(largest_difference(s.view.trace(0), [&] {
              hsm::Trace t;
              t.exact = records[3].exact;
              return t;
            }()),
            1e-6)
      << "steps 20 and 40 show different maps";

  // Trace at step 20: the model kept at step 20 (its snapshot), not the newest, at the
  // corrupted digit (the replaced token moves its own prediction by nats).
  const std::string clean = "Once upon a time, Lily saw 3", corrupt = "Once upon a time, Lily saw 4";
  int digit = -1;
  for (size_t p = 0; p < records[1].clean.size(); ++p)
    if (records[1].clean[p] != records[1].corrupt[p] && digit < 0) digit = static_cast<int>(p);
  ASSERT_GE(digit, 0);
  s.view.setPrompts(QString::fromStdString(clean), QString::fromStdString(corrupt));
  s.view.setAnswer(digit);
  auto engine_at = [&](int64_t step) {
    const hsm::Tracer tracer(hsm::Model::load(run.toStdString(), "cpu", step));
    hsm::TraceRequest r = tracer.text_request(clean, corrupt);
    r.answer_position = digit;
    return tracer.trace(r);
  };
  ASSERT_TRUE(trace_and_wait(s)) << s.view.lastError().toStdString();
  const hsm::Trace at20 = engine_at(20), newest = engine_at(-1);
  expect_maps_equal(s.view, 0, at20);
  EXPECT_FALSE(s.view.attributionPanel(0, 0)->isHidden()) << "a live trace shows its attribution again";
  EXPECT_GT(largest_difference(at20, newest), 1e-4) << "a trace of the newest model would differ";
  EXPECT_TRUE(s.view.summary(0).contains(QStringLiteral("at step 20"))) << s.view.summary(0).toStdString();

  // Step 10 keeps no model: Trace traces the newest checkpoint, as without a slider.
  press(slider, Qt::Key_Home);
  ASSERT_TRUE(trace_and_wait(s)) << s.view.lastError().toStdString();
  expect_maps_equal(s.view, 0, newest);
  EXPECT_FALSE(s.view.summary(0).contains(QStringLiteral("at step"))) << s.view.summary(0).toStdString();

  // The run beside on the same axis, dashed, with its own summary (its share fell back: none formed).
  s.view.setCompareRun(other);
  // (After the current run's share, accuracy and three mixer effects: the run beside's are not drawn.)
  ASSERT_TRUE(wait_for([&] { return s.view.formationPanel()->series().size() == 7; }));
  EXPECT_EQ(s.view.formationPanel()->series()[5].style, PlotSeries::Style::kDashedLine);
  EXPECT_EQ(s.view.formationPanel()->series()[5].y, (QVector<double>{0.02, 0.2, 0.02, 0.03}));
  EXPECT_TRUE(s.view.formationSummary().contains(QStringLiteral("no route"))) << s.view.formationSummary().toStdString();
  // Moving the slider shows both runs' records of that step.
  press(slider, Qt::Key_End);
  EXPECT_EQ(s.view.sliderStep(), 40);
  ASSERT_TRUE(s.view.hasTrace(1));
  EXPECT_EQ(s.view.trace(1).exact[0].effect, hsm::read_trace_log(other.toStdString())[3].exact[0].effect);

  // A run that recorded no traces has no formation pane (the maps keep the room).
  const QString untraced = trained_variant(QStringLiteral("trace_none"), [](hsm::RunSpec& spec) { spec.train.trace_text.clear(); });
  s.view.setCompareRun(QString());
  s.runs.setCurrent(s.runs.open(untraced));
  ASSERT_TRUE(wait_for([&] { return !s.view.isLoadingHistory(); }));
  EXPECT_TRUE(s.view.history(0).records.empty());
  EXPECT_TRUE(pane->isHidden());
  EXPECT_TRUE(s.view.formationPanel()->series().isEmpty());
}
