#pragma once
// Preferences that persist between sessions (QSettings): compute device, CPU threads,
// recent run folders and corpora, window geometry.
#include <QByteArray>
#include <QString>
#include <QStringList>

namespace studio {

class StudioSettings {
 public:
  static QString device();             // "auto" by default
  static void setDevice(const QString& device);
  static int threads();                // 0 = the engine's measured default
  static void setThreads(int threads);
  static QStringList recentRuns();     // most recent first, at most 10, existing folders only
  static void addRecentRun(const QString& dir);
  static QString lastCorpus();         // else the bundled starter corpus (empty if not installed)
  static void setLastCorpus(const QString& path);
  static QByteArray geometry();
  static void setGeometry(const QByteArray& geometry);
  static QByteArray windowState();
  static void setWindowState(const QByteArray& state);
};

}  // namespace studio
