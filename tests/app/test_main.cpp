// GoogleTest main for the GUI tests: one StudioApplication on the offscreen platform, settings
// and caches kept out of the user's home.
#include <gtest/gtest.h>

#include <QApplication>
#include <QSettings>
#include <QStandardPaths>

#include "gui/studio_application.h"
#include "studio_test_util.h"

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  qputenv("HSM_CACHE_DIR", (studio::test::temp_root() + "/cache").toUtf8());
  QStandardPaths::setTestModeEnabled(true);
  studio::StudioApplication app(argc, argv);  // the studio's own, as the app runs
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, studio::test::temp_root() + "/settings");
  QApplication::setOrganizationName(QStringLiteral("hsm-studio-tests"));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
