#include "gui/stall_monitor.h"

#include <algorithm>

namespace studio {

StallMonitor::StallMonitor(int intervalMs, QObject* parent) : QObject(parent), intervalMs_(intervalMs) {
  timer_.setTimerType(Qt::PreciseTimer);
  timer_.setInterval(intervalMs_);
  connect(&timer_, &QTimer::timeout, this, &StallMonitor::beat);
}

void StallMonitor::start() {
  reset();
  clock_.start();
  timer_.start();
}

void StallMonitor::stop() { timer_.stop(); }

void StallMonitor::reset() {
  lastNs_ = -1;
  maxStallMs_ = totalGapMs_ = 0;
  beats_ = 0;
  byPhase_.clear();
}

void StallMonitor::beat() {
  const qint64 now = clock_.nsecsElapsed();
  if (lastNs_ >= 0) {
    const double gapMs = static_cast<double>(now - lastNs_) / 1e6;
    maxStallMs_ = std::max(maxStallMs_, gapMs - intervalMs_);
    double& phaseMax = byPhase_[phase_];
    phaseMax = std::max(phaseMax, gapMs - intervalMs_);
    totalGapMs_ += gapMs;
    ++beats_;
  }
  lastNs_ = now;
}

}  // namespace studio
