#include "gui/engine/hsm_executable.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace studio {
namespace {
QString& overridden() {
  static QString path;
  return path;
}
}  // namespace

void setHsmExecutable(const QString& path) { overridden() = path; }

QString hsmExecutable() {
  if (!overridden().isEmpty()) return overridden();
  const QDir here(QCoreApplication::applicationDirPath());
  // Installed side by side; a build's app/ and tests/app/ beside engine/cli/.
  for (const QString& candidate : {here.filePath(QStringLiteral("hsm")), here.filePath(QStringLiteral("../engine/cli/hsm")),
                                   here.filePath(QStringLiteral("../../engine/cli/hsm"))}) {
    const QFileInfo info(candidate);
    if (info.isFile() && info.isExecutable()) return info.canonicalFilePath();
  }
  return QStandardPaths::findExecutable(QStringLiteral("hsm"));
}

}  // namespace studio
