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
  // Whether a run folder is one of the bundled demo models (<resources>/models/...).
  static bool isBundledRun(const QString& dir);
  // Where a file dialog opens: the folder of `near` (a path the dialog is about, say the
  // corpus in a field) when it exists, else the folder last chosen in a dialog, else Documents,
  // else home; never inside the bundled resources (read-only where installed, and not the user's).
  static QString dialogFolder(const QString& near = {});
  static QString dialogPath(const QString& fileName);  // dialogFolder()/fileName
  // Remembers a path chosen in a dialog (its folder, for a file).
  static void setDialogFolder(const QString& path);
  static QString lastCorpus();         // else the bundled starter corpus (empty if not installed)
  static void setLastCorpus(const QString& path);
  static QByteArray geometry();
  static void setGeometry(const QByteArray& geometry);
  static QByteArray windowState();
  static void setWindowState(const QByteArray& state);
};

}  // namespace studio
