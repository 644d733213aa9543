#include "gui/stall_monitor.h"

#include <algorithm>
#include <ctime>

namespace studio {
namespace {

// CPU time of the calling thread, in nanoseconds.
qint64 thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<qint64>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

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
  lastNs_ = lastCpuNs_ = -1;
  maxStallMs_ = maxBusyMs_ = totalGapMs_ = 0;
  beats_ = 0;
  byPhase_.clear();
}

void StallMonitor::beat() {
  const qint64 now = clock_.nsecsElapsed(), cpu = thread_cpu_ns();
  if (lastNs_ >= 0) {
    maxBusyMs_ = std::max(maxBusyMs_, static_cast<double>(cpu - lastCpuNs_) / 1e6);
    const double gapMs = static_cast<double>(now - lastNs_) / 1e6;
    maxStallMs_ = std::max(maxStallMs_, gapMs - intervalMs_);
    double& phaseMax = byPhase_[phase_];
    phaseMax = std::max(phaseMax, gapMs - intervalMs_);
    totalGapMs_ += gapMs;
    ++beats_;
  }
  lastNs_ = now;
  lastCpuNs_ = cpu;
}

}  // namespace studio
