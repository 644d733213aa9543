// The Training view's curves as data (gui/views/training_series.h), without a widget: which
// series each plot gets from the open runs' metrics, their points, and the smoothing.
#include <gtest/gtest.h>

#include <cmath>

#include "gui/run_list.h"
#include "gui/views/training_series.h"

using namespace studio;

namespace {

hsm::MetricRecord train(int64_t step, double loss, double tokens_per_s, double lr, double wall_s) {
  hsm::MetricRecord m;
  m.kind = "train";
  m.step = step;
  m.train_loss = loss;
  m.tokens_per_s = tokens_per_s;
  m.lr = lr;
  m.wall_s = wall_s;
  return m;
}

hsm::MetricRecord eval(int64_t step, double loss, double accuracy, double wall_s) {
  hsm::MetricRecord m;
  m.kind = "eval";
  m.step = step;
  m.val_loss = loss;
  m.val_accuracy = accuracy;
  m.wall_s = wall_s;
  return m;
}

// Two runs: "first" (a NaN train loss and a validation without accuracy among its records)
// and "second" (one validation).
struct TwoRuns {
  RunEntry first, second;
  TwoRuns() {
    first.dir = QStringLiteral("/runs/first");
    first.color = QColor(10, 20, 200);
    first.metrics = {train(10, 4.0, 100, 1e-3, 1.5), train(20, NAN, 110, 2e-3, 3.0), eval(20, 3.5, 0.25, 3.2),
                     train(30, 2.0, 120, 3e-3, 4.5), eval(30, 3.0, NAN, 4.7)};
    second.dir = QStringLiteral("/runs/second");
    second.color = QColor(200, 20, 10);
    second.metrics = {train(5, 5.0, 90, 1e-3, 1.0), eval(5, 4.5, 0.125, 1.1)};
  }
  QVector<const RunEntry*> runs() const { return {&first, &second}; }
};

const PlotSeries* named(const QVector<PlotSeries>& series, const QString& name) {
  for (const PlotSeries& s : series)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace

TEST(TrainingSeries, SmoothingIsABiasCorrectedMovingAverage) {
  const QVector<double> y = {4, 2, 2, 2};
  const QVector<double> raw = smoothed(y, 0.0);
  EXPECT_EQ(raw, y);
  const QVector<double> s = smoothed(y, 0.5);
  EXPECT_DOUBLE_EQ(s[0], 4.0);  // no pull toward zero at the start
  EXPECT_DOUBLE_EQ(s[1], (0.25 * 4 + 0.5 * 2) / 0.75);
  EXPECT_LT(s[3], s[1]);
}

TEST(TrainingSeries, EachPlotGetsEveryOverlaidRunsFinitePoints) {
  const TwoRuns r;
  const TrainingCurves c = training_curves(r.runs(), 0, CurveOptions{0.5, false, true});

  // Loss: the current run's raw curve (faint, out of the legend), its smoothed curve and
  // its validation; the other run's smoothed and validation curves; the key's two entries.
  // NaN losses are skipped.
  ASSERT_EQ(c.loss.size(), 7);
  const PlotSeries* raw = named(c.loss, QStringLiteral("first train (raw)"));
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->style, PlotSeries::Style::kFaintLine);
  EXPECT_FALSE(raw->in_legend);
  EXPECT_EQ(raw->x, (QVector<double>{10, 30}));
  EXPECT_EQ(raw->y, (QVector<double>{4.0, 2.0}));
  const PlotSeries* smooth = named(c.loss, QStringLiteral("first train"));
  ASSERT_NE(smooth, nullptr);
  EXPECT_EQ(smooth->y, smoothed({4.0, 2.0}, 0.5));
  EXPECT_EQ(smooth->color, r.first.color);
  const PlotSeries* validation = named(c.loss, QStringLiteral("first validation"));
  ASSERT_NE(validation, nullptr);
  EXPECT_EQ(validation->style, PlotSeries::Style::kDashedLine);
  EXPECT_EQ(validation->x, (QVector<double>{20, 30}));
  EXPECT_EQ(validation->y, (QVector<double>{3.5, 3.0}));
  EXPECT_EQ(validation->color, r.first.color.darker(130));
  // The legend (issue 48): a run an entry, by its name alone, and a key for the line styles;
  // the validation curves out of it (four runs' pairs of long entries hid the curves at 1024x600).
  // Issue 69: with its number, the last validation loss, beside its name.
  EXPECT_EQ(smooth->legend, QStringLiteral("first 3.000"));
  EXPECT_TRUE(smooth->in_legend);
  EXPECT_FALSE(validation->in_legend);
  QStringList legend;
  for (const PlotSeries& s : c.loss)
    if (s.in_legend) legend << (s.legend.isEmpty() ? s.name : s.legend);
  EXPECT_EQ(legend, (QStringList{QStringLiteral("first 3.000"), QStringLiteral("second 4.500"),
                                 QStringLiteral("train"),
                                 QStringLiteral("validation")}));
  EXPECT_EQ(c.loss[5].style, PlotSeries::Style::kLine);
  EXPECT_TRUE(c.loss[5].x.isEmpty());
  EXPECT_EQ(c.loss[6].style, PlotSeries::Style::kDashedLine);
  EXPECT_TRUE(c.loss[6].x.isEmpty());
  for (const QVector<PlotSeries>* plot : {&c.speed, &c.lr})
    for (const PlotSeries& s : *plot) EXPECT_FALSE(s.in_legend) << s.name.toStdString();
  EXPECT_EQ(named(c.loss, QStringLiteral("second train (raw)")), nullptr);  // only the current run's
  ASSERT_NE(named(c.loss, QStringLiteral("second train")), nullptr);

  // Accuracy: validations with an accuracy only.
  ASSERT_EQ(c.accuracy.size(), 2);
  EXPECT_EQ(c.accuracy[0].x, (QVector<double>{20}));
  EXPECT_EQ(c.accuracy[0].y, (QVector<double>{0.25}));
  // Throughput (smoothed) and learning rate (raw) of every train record, NaN loss or not.
  EXPECT_EQ(c.speed[0].x, (QVector<double>{10, 20, 30}));
  EXPECT_EQ(c.speed[0].y, smoothed({100, 110, 120}, 0.5));
  EXPECT_EQ(c.lr[0].y, (QVector<double>{1e-3, 2e-3, 3e-3}));
  // Accuracy against validation loss, one scatter per run.
  ASSERT_EQ(c.scatter.size(), 2);
  EXPECT_EQ(c.scatter[0].style, PlotSeries::Style::kScatter);
  EXPECT_EQ(c.scatter[0].x, (QVector<double>{3.5}));
  EXPECT_EQ(c.scatter[0].y, (QVector<double>{0.25}));
  EXPECT_EQ(c.scatter[1].x, (QVector<double>{4.5}));
}

TEST(TrainingSeries, WithoutOverlayOnlyTheCurrentRunIsDrawnButTheScatterKeepsEveryRun) {
  const TwoRuns r;
  const TrainingCurves c = training_curves(r.runs(), 1, CurveOptions{0.0, true, false});
  // No smoothing: no raw curve behind the train curve, which is then the raw points.
  ASSERT_EQ(c.loss.size(), 4);  // with the key's two entries
  EXPECT_EQ(c.loss[0].name, QStringLiteral("second train"));
  EXPECT_EQ(c.loss[0].y, (QVector<double>{5.0}));
  EXPECT_EQ(c.loss[0].x, (QVector<double>{1.0}));  // wall time, not the step
  EXPECT_EQ(c.loss[1].x, (QVector<double>{1.1}));
  ASSERT_EQ(c.accuracy.size(), 1);
  ASSERT_EQ(c.speed.size(), 1);
  ASSERT_EQ(c.lr.size(), 1);
  EXPECT_EQ(c.scatter.size(), 2);
  // No current run and no overlay: nothing but the scatter.
  const TrainingCurves none = training_curves(r.runs(), -1, CurveOptions{0.5, false, false});
  EXPECT_TRUE(none.loss.isEmpty());
  EXPECT_EQ(none.scatter.size(), 2);
}
