#pragma once
// The studio's QApplication. When an observer is set (the --smoke session's StallMonitor), it
// times every event the GUI thread handles and reports it, so a report can say which widget's
// paint or which plot's replot the GUI thread's time went to; without one it is QApplication.
#include <QApplication>

namespace studio {

class StallMonitor;

class StudioApplication : public QApplication {
 public:
  StudioApplication(int& argc, char** argv);
  void setEventObserver(StallMonitor* observer) { observer_ = observer; }
  bool notify(QObject* receiver, QEvent* event) override;

 private:
  StallMonitor* observer_ = nullptr;
  int depth_ = 0;  // events being handled on the GUI thread right now (sent from inside others)
};

}  // namespace studio
