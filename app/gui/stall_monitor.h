#pragma once
// An event-loop heartbeat: a timer that should fire every few milliseconds on the GUI
// thread. The longest gap between two beats, less the interval, is the longest time the
// GUI could not react (a stall). The studio's responsiveness budget is 50 ms. A stall is
// either work on the GUI thread or the thread waiting for a core (a loaded machine); the
// GUI thread's own CPU time within the gap (busy) tells them apart. With StudioApplication
// reporting every event it handles, it also keeps the slowest ones: which widget's paint or
// which plot's replot the busy time went to.
#include <QElapsedTimer>
#include <QMap>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QVector>

namespace studio {

class StallMonitor : public QObject {
  Q_OBJECT
 public:
  explicit StallMonitor(int intervalMs = 5, QObject* parent = nullptr);
  void start();
  void stop();
  void reset();
  double maxStallMs() const { return maxStallMs_; }
  // The most CPU time the GUI thread spent between two beats: the longest piece of work
  // that held the event loop, whatever else the machine was doing.
  double maxBusyMs() const { return maxBusyMs_; }
  // Labels the beats that follow ("training", "diagnostics" ...): the report then says
  // where the longest stall happened.
  void setPhase(const QString& phase) { phase_ = phase; }
  const QMap<QString, double>& maxStallByPhase() const { return byPhase_; }
  const QMap<QString, double>& maxBusyByPhase() const { return busyByPhase_; }
  // One event the GUI thread handled in `ms` (depth 0: dispatched by the event loop itself,
  // 1 and more: sent while another was being handled, so counted in that one's time too).
  struct SlowEvent {
    double ms = 0;
    QString phase, event, receiver;
    int depth = 0;
  };
  static constexpr int kSlowestKept = 10;
  void eventHandled(const QObject* receiver, int type, double ms, int depth);
  // The slowest events since start(), slowest first.
  const QVector<SlowEvent>& slowestEvents() const { return slowest_; }
  double meanGapMs() const { return beats_ ? totalGapMs_ / static_cast<double>(beats_) : 0; }
  qint64 beats() const { return beats_; }

 private:
  void beat();

  QTimer timer_;
  QElapsedTimer clock_;
  qint64 lastNs_ = -1, lastCpuNs_ = -1;
  int intervalMs_;
  double maxStallMs_ = 0, maxBusyMs_ = 0, totalGapMs_ = 0;
  qint64 beats_ = 0;
  QString phase_;
  QMap<QString, double> byPhase_, busyByPhase_;
  QVector<SlowEvent> slowest_;
};

}  // namespace studio
