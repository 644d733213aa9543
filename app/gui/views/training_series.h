#pragma once
// The Training view's curves, computed from the open runs' metrics (pure: no widgets, so
// tests/app/test_training_series.cpp checks them point by point): per run the train loss,
// raw and smoothed, the validation loss, the validation accuracy, the throughput and the
// learning rate; and accuracy against validation loss over every run (HSM Fig. 8).
#include <QVector>

#include "gui/widgets/plot_series.h"

namespace studio {

struct RunEntry;

// Exponential moving average with the bias correction of Adam / TensorBoard, so the first
// points are not pulled toward zero. weight 0 = raw.
QVector<double> smoothed(const QVector<double>& y, double weight);

struct CurveOptions {
  double smoothing = 0;    // the moving average's weight for train loss and throughput (0: raw)
  bool wall_time = false;  // x = seconds since the run started, else the step
  bool overlay = true;     // the other runs' curves beside the current run's
};

// One plot's series each; scatter has every run with a validation whatever `overlay` says.
struct TrainingCurves {
  QVector<PlotSeries> loss, accuracy, speed, lr, scatter;
};

// runs: the open runs in list order; current: the index of the current one (-1: none).
// The current run's raw train loss is drawn faint behind its smoothed curve when smoothing.
TrainingCurves training_curves(const QVector<const RunEntry*>& runs, int current, const CurveOptions& options);

}  // namespace studio
