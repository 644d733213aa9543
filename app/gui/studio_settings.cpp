#include "gui/studio_settings.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>

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

namespace {
bool inside(const QString& path, const QString& folder) {
  const QString p = QDir::cleanPath(QFileInfo(path).absoluteFilePath()),
                f = QDir::cleanPath(QDir(folder).absolutePath());
  return p == f || p.startsWith(f + QLatin1Char('/'));
}
}  // namespace

bool StudioSettings::isBundledRun(const QString& dir) { return inside(dir, qstr(hsm::resources_dir()) + "/models"); }

QString StudioSettings::dialogFolder(const QString& near) {
  const QString resources = qstr(hsm::resources_dir());
  auto usable = [&](const QString& dir) { return !dir.isEmpty() && QDir(dir).exists() && !inside(dir, resources); };
  if (!near.isEmpty()) {
    const QFileInfo info(near);
    const QString dir = info.isDir() ? info.absoluteFilePath() : info.absolutePath();
    if (usable(dir)) return dir;
  }
  const QString last = QSettings().value("dialogs/last_folder").toString();
  if (usable(last)) return last;
  const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  return !documents.isEmpty() && QDir(documents).exists() ? documents : QDir::homePath();
}

QString StudioSettings::dialogPath(const QString& fileName) { return QDir(dialogFolder()).filePath(fileName); }

void StudioSettings::setDialogFolder(const QString& path) {
  const QFileInfo info(path);
  QSettings().setValue("dialogs/last_folder", info.isDir() ? info.absoluteFilePath() : info.absolutePath());
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
