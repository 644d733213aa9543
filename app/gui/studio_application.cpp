#include "gui/studio_application.h"

#include <QElapsedTimer>
#include <QPointer>
#include <QThread>

#include "gui/stall_monitor.h"

namespace studio {

StudioApplication::StudioApplication(int& argc, char** argv) : QApplication(argc, argv) {}

bool StudioApplication::notify(QObject* receiver, QEvent* event) {
  if (!observer_ || QThread::currentThread() != thread()) return QApplication::notify(receiver, event);
  const int type = event->type();     // the event may be gone after it is handled,
  const QPointer<QObject> alive(receiver);  // and the receiver too (DeferredDelete, a closed dialog)
  QElapsedTimer clock;
  clock.start();
  ++depth_;
  const bool handled = QApplication::notify(receiver, event);
  --depth_;
  if (observer_ && alive)
    observer_->eventHandled(receiver, type, static_cast<double>(clock.nsecsElapsed()) / 1e6, depth_);
  return handled;
}

}  // namespace studio
