#include "gui/stall_monitor.h"

#include <QEvent>
#include <QMetaEnum>
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
  busyByPhase_.clear();
  slowest_.clear();
}

void StallMonitor::beat() {
  const qint64 now = clock_.nsecsElapsed(), cpu = thread_cpu_ns();
  if (lastNs_ >= 0) {
    const double busyMs = static_cast<double>(cpu - lastCpuNs_) / 1e6;
    maxBusyMs_ = std::max(maxBusyMs_, busyMs);
    double& phaseBusy = busyByPhase_[phase_];
    phaseBusy = std::max(phaseBusy, busyMs);
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

namespace {

// "ClassName(objectName)", or the class and its parent's for an object without a name
// ("QCustomPlot in PlotPanel(ab_plot)").
QString describe(const QObject* o) {
  auto one = [](const QObject* x) {
    const QString cls = QString::fromLatin1(x->metaObject()->className()).remove(QStringLiteral("studio::"));
    return x->objectName().isEmpty() ? cls : QStringLiteral("%1(%2)").arg(cls, x->objectName());
  };
  if (!o->objectName().isEmpty() || !o->parent()) return one(o);
  return QStringLiteral("%1 in %2").arg(one(o), one(o->parent()));
}

}  // namespace

void StallMonitor::eventHandled(const QObject* receiver, int type, double ms, int depth) {
  if (!timer_.isActive()) return;
  if (slowest_.size() == kSlowestKept && ms <= slowest_.back().ms) return;
  static const QMetaEnum types = QMetaEnum::fromType<QEvent::Type>();
  const char* name = types.valueToKey(type);
  SlowEvent e{ms, phase_, name ? QString::fromLatin1(name) : QString::number(type), describe(receiver), depth};
  auto at = std::upper_bound(slowest_.begin(), slowest_.end(), ms,
                             [](double v, const SlowEvent& s) { return v > s.ms; });
  slowest_.insert(at, e);
  if (slowest_.size() > kSlowestKept) slowest_.removeLast();
}

}  // namespace studio
