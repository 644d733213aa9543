#include "gui/studio_settings.h"

#include <QDir>
#include <QSettings>

#include "gui/engine_types.h"
#include "hsm/presets.h"

namespace studio {

namespace {
constexpr int kMaxRecent = 10;
}

QString StudioSettings::device() { return QSettings().value("engine/device", "auto").toString(); }
void StudioSettings::setDevice(const QString& device) { QSettings().setValue("engine/device", device); }
int StudioSettings::threads() { return QSettings().value("engine/threads", 0).toInt(); }
void StudioSettings::setThreads(int threads) { QSettings().setValue("engine/threads", threads); }

QStringList StudioSettings::recentRuns() {
  QStringList out;
  for (const QString& dir : QSettings().value("runs/recent").toStringList())
    if (QDir(dir).exists() && !out.contains(dir)) out << dir;
  return out;
}

void StudioSettings::addRecentRun(const QString& dir) {
  const QString abs = QDir(dir).absolutePath();
  QStringList recent = recentRuns();
  recent.removeAll(abs);
  recent.prepend(abs);
  while (recent.size() > kMaxRecent) recent.removeLast();
  QSettings().setValue("runs/recent", recent);
}

QString StudioSettings::lastCorpus() {
  const QString last = QSettings().value("data/last_corpus").toString();
  return last.isEmpty() ? qstr(hsm::starter_corpus()) : last;
}
void StudioSettings::setLastCorpus(const QString& path) { QSettings().setValue("data/last_corpus", path); }
QByteArray StudioSettings::geometry() { return QSettings().value("window/geometry").toByteArray(); }
void StudioSettings::setGeometry(const QByteArray& g) { QSettings().setValue("window/geometry", g); }
QByteArray StudioSettings::windowState() { return QSettings().value("window/state").toByteArray(); }
void StudioSettings::setWindowState(const QByteArray& s) { QSettings().setValue("window/state", s); }

}  // namespace studio
