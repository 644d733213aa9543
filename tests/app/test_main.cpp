// GoogleTest main for the GUI tests: one StudioApplication on the offscreen platform, settings
// and caches kept out of the user's home.
#include <gtest/gtest.h>

#include <QApplication>
#include <QSettings>
#include <QStandardPaths>

#include "../test_run_guard.h"
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
  hsm::test::guard_premature_exit();  // an exit() in a test fails the program (../test_run_guard.h)
  return hsm::test::finish(RUN_ALL_TESTS());
}
