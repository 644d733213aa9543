#include "gui/views/training_series.h"

#include <QCoreApplication>
#include <cmath>

#include "gui/run_list.h"

namespace studio {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("studio::TrainingView", text); }

}  // namespace

QVector<double> smoothed(const QVector<double>& y, double weight) {
  if (weight <= 0) return y;
  QVector<double> out;
  out.reserve(y.size());
  double ema = 0, debias = 1;
  for (double v : y) {
    ema = weight * ema + (1 - weight) * v;
    debias *= weight;
    out.push_back(ema / (1 - debias));
  }
  return out;
}

TrainingCurves training_curves(const QVector<const RunEntry*>& runs, int current, const CurveOptions& options) {
  const double weight = options.smoothing;
  const bool wall = options.wall_time;
  TrainingCurves c;
  QStringList windowKinds;
  for (int i = 0; i < runs.size(); ++i) {
    const RunEntry& run = *runs[i];
    const bool isCurrent = i == current;
    const qsizetype from[5] = {c.loss.size(), c.accuracy.size(), c.speed.size(), c.lr.size(), c.scatter.size()};
    QVector<double> tx, ty, vx, vy, ax, qx, qy, sx, sy, lx, ly;
    for (const hsm::MetricRecord& m : run.metrics) {
      const double x = wall ? m.wall_s : static_cast<double>(m.step);
      if (m.kind == "train") {
        if (std::isfinite(m.train_loss)) {
          tx << x;
          ty << m.train_loss;
        }
        if (std::isfinite(m.tokens_per_s)) {
          sx << x;
          sy << m.tokens_per_s;
        }
        if (std::isfinite(m.lr)) {
          lx << x;
          ly << m.lr;
        }
      } else if (m.kind == "eval" && std::isfinite(m.val_loss)) {
        vx << x;
        vy << m.val_loss;
        ax << (std::isfinite(m.val_accuracy) ? m.val_accuracy : NAN);
        if (std::isfinite(m.sequence_accuracy)) {  // a task run: examples whose every answer is right
          qx << x;
          qy << m.sequence_accuracy;
        }
      }
    }
    // Scatter: every validation of every open run (HSM Fig. 8).
    PlotSeries sc{run.name(), run.color, {}, {}, PlotSeries::Style::kScatter};
    for (int k = 0; k < vx.size(); ++k)
      if (std::isfinite(ax[k])) {
        sc.x << vy[k];
        sc.y << ax[k];
      }
    if (!sc.x.isEmpty()) c.scatter << sc;
    if (!isCurrent && !options.overlay) continue;
    const QString n = run.name();
    if (isCurrent && weight > 0)
      c.loss << PlotSeries{n + tr(" train (raw)"), run.color, tx, ty, PlotSeries::Style::kFaintLine, false};
    // The legend a run a line, its name in its colour; a key below says which line is which
    // (issue 48: four runs' "train" and "validation (story_start windows)" entries took half of
    // the plot's height at 1024x600).
    PlotSeries train{n + tr(" train"), run.color, tx, smoothed(ty, weight), PlotSeries::Style::kLine};
    // With its number beside its name (issue 69: only curves, no number per model): the last
    // validation loss, what the dashed line ends at.
    train.legend = vy.isEmpty() ? n : tr("%1 %2").arg(n).arg(vy.last(), 0, 'f', 3);
    c.loss << train;
    // Which windows the validation loss is on (what `hsm eval` and the Probe view score by default).
    const QString kind = run.has_info ? QString::fromStdString(run.info.training.windows) : QString();
    if (!kind.isEmpty() && !windowKinds.contains(kind)) windowKinds << kind;
    const QString windows = kind.isEmpty() ? QString() : tr(" (%1 windows)").arg(kind);
    PlotSeries validation{n + tr(" validation") + windows, run.color.darker(130), vx, vy,
                          PlotSeries::Style::kDashedLine};
    validation.in_legend = false;
    c.loss << validation;
    QVector<double> accX, accY;
    for (int k = 0; k < vx.size(); ++k)
      if (std::isfinite(ax[k])) {
        accX << vx[k];
        accY << ax[k];
      }
    // A task run's validation accuracy is on its answers (answer_accuracy); beside it the share
    // of examples with every answer right.
    const bool task = !run.task.empty();
    // A legend only where a task run's two curves need one: the runs' colours are the loss plot's.
    c.accuracy << PlotSeries{task ? n + tr(" answers") : n, run.color, accX, accY, PlotSeries::Style::kLine, task};
    if (task && !qx.isEmpty())
      c.accuracy << PlotSeries{n + tr(" sequences"), run.color.darker(130), qx, qy,
                               PlotSeries::Style::kDashedLine};
    // Throughput and learning rate without a legend of their own: the runs' colours are the loss
    // plot's, and at 1024x600 two more legends left their curves a few pixels high.
    c.speed << PlotSeries{n, run.color, sx, smoothed(sy, weight), PlotSeries::Style::kLine, false};
    c.lr << PlotSeries{n, run.color, lx, ly, PlotSeries::Style::kLine, false};
    // The current run's curves above the others, thicker (issue 48): a run trained now is not
    // one thin line among the demo runs' curves. Its faint raw curve stays beneath.
    if (!isCurrent) continue;
    QVector<PlotSeries>* plots[5] = {&c.loss, &c.accuracy, &c.speed, &c.lr, &c.scatter};
    for (int p = 0; p < 5; ++p)
      for (qsizetype k = from[p]; k < plots[p]->size(); ++k)
        (*plots[p])[k].emphasised = (*plots[p])[k].style != PlotSeries::Style::kFaintLine;
  }
  // The key: a solid line is a run's train loss, a dashed one its validation (no points: only
  // the legend shows them).
  if (!c.loss.isEmpty()) {
    const QColor key(110, 110, 110);
    c.loss << PlotSeries{tr("train"), key, {}, {}, PlotSeries::Style::kLine};
    // Which windows: the runs' own (a curve's name in the CSV says which); named when they share one.
    const QString validation = windowKinds.size() == 1 ? tr("validation (%1)").arg(windowKinds.first())
                               : windowKinds.isEmpty() ? tr("validation")
                                                       : tr("validation (own windows)");
    c.loss << PlotSeries{validation, key, {}, {}, PlotSeries::Style::kDashedLine};
  }
  return c;
}

}  // namespace studio
