// Issue 47: a view is its own files and one entry in the view registry
// (app/gui/view_registry.h). The real window builds every entry's tab, its View menu
// action with its shortcut, which brings the view to the front, and its help; the registry's
// order is MainWindow::View's.
#include <gtest/gtest.h>

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QRegularExpression>
#include <QSet>
#include <QTabWidget>
#include <QTest>

#include "gui/help/tour.h"
#include "gui/help/view_help.h"
#include "gui/main_window.h"
#include "gui/view_registry.h"

using namespace studio;

namespace {

QMenu* viewMenu(MainWindow& w) {
  for (QAction* a : w.menuBar()->actions())
    if (a->menu() && a->text().remove(QLatin1Char('&')) == QStringLiteral("View")) return a->menu();
  return nullptr;
}

// The View menu's action with this text (its & mnemonic kept), or nullptr.
QAction* menuAction(QMenu* menu, const QString& text) {
  for (QAction* a : menu->actions())
    if (a->text() == text) return a;
  return nullptr;
}

}  // namespace

TEST(ViewRegistry, EveryEntryHasATabAViewMenuActionWithItsShortcutAndHelp) {
  MainWindow w;
  w.show();
  w.activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  const std::vector<ViewEntry>& views = viewRegistry();
  ASSERT_FALSE(views.empty());
  ASSERT_EQ(w.viewCount(), static_cast<int>(views.size()));
  QMenu* menu = viewMenu(w);
  ASSERT_NE(menu, nullptr);
  QSet<QString> ids, shortcuts;
  for (int i = 0; i < static_cast<int>(views.size()); ++i) {
    const ViewEntry& entry = views[static_cast<size_t>(i)];
    SCOPED_TRACE(entry.id);
    EXPECT_FALSE(ids.contains(QString::fromLatin1(entry.id))) << "two views named " << entry.id;
    ids.insert(QString::fromLatin1(entry.id));
    EXPECT_EQ(viewIndex(entry.id), i);
    // Its tab: the view the entry made, under the entry's title.
    ASSERT_NE(w.view(i), nullptr);
    EXPECT_FALSE(entry.tabTitle().isEmpty());
    EXPECT_EQ(w.tabs()->tabText(i), entry.tabTitle());
    EXPECT_TRUE(w.tabs()->widget(i)->isAncestorOf(w.view(i)));
    EXPECT_EQ(w.view(i)->property("exportView").toString(), QString::fromLatin1(entry.id));
    // Its help, shown by F1 for the view in front.
    EXPECT_GT(entry.helpBody().trimmed().size(), 40) << "a view without help";
    w.showView(i);
    help::HelpPanel* panel = w.showHelp();
    EXPECT_EQ(panel->shownView(), i);
    const QString firstWords = QString(entry.helpBody()).remove(QRegularExpression(QStringLiteral("<[^>]*>"))).left(30);
    EXPECT_TRUE(panel->text().contains(firstWords)) << panel->text().toStdString();
    EXPECT_TRUE(panel->text().contains(entry.tabTitle()));
    panel->hide();
    // Its View menu action, with its own shortcut, that brings the tab to the front (the keys
    // as a user presses them, then the menu entry).
    EXPECT_FALSE(entry.shortcut.isEmpty()) << "a view without a shortcut";
    EXPECT_FALSE(shortcuts.contains(entry.shortcut.toString())) << "shortcut taken twice";
    shortcuts.insert(entry.shortcut.toString());
    QAction* action = menuAction(menu, entry.menuLabel());
    EXPECT_NE(action, nullptr) << "no View menu entry " << entry.menuLabel().toStdString();
    if (!action || entry.shortcut.isEmpty()) continue;
    EXPECT_EQ(action->shortcut(), entry.shortcut);
    w.showStartPage();
    QTest::keySequence(&w, entry.shortcut);
    EXPECT_EQ(w.tabs()->currentIndex(), i) << "its shortcut " << entry.shortcut.toString().toStdString();
    w.showStartPage();
    action->trigger();
    EXPECT_EQ(w.tabs()->currentIndex(), i);
    EXPECT_TRUE(w.shortcutsText().contains(entry.shortcut.toString(QKeySequence::NativeText)));
  }
  EXPECT_EQ(w.tabs()->count(), static_cast<int>(views.size()) + (w.startPageOpen() ? 1 : 0));
}

TEST(ViewRegistry, OrderIsMainWindowsViewEnumAndTheToursViewsAreRegistered) {
  const std::pair<MainWindow::View, const char*> named[] = {
      {MainWindow::kArchitecture, "architecture"}, {MainWindow::kTraining, "training"},
      {MainWindow::kWeights, "weights"},           {MainWindow::kDiagnostics, "diagnostics"},
      {MainWindow::kPlayground, "playground"},     {MainWindow::kProbe, "probe"},
      {MainWindow::kLosses, "losses"},             {MainWindow::kLab, "lab"},
      {MainWindow::kExperiments, "experiments"}};
  for (const auto& [view, id] : named) EXPECT_EQ(viewIndex(id), static_cast<int>(view)) << id;
  EXPECT_EQ(viewIndex("no-such-view"), -1);
  EXPECT_EQ(viewEntry(-1), nullptr);
  EXPECT_EQ(viewEntry(static_cast<int>(viewRegistry().size())), nullptr);
  help::Tour tour(viewRegistry(), nullptr, nullptr);
  for (int step = 0; step < tour.stepCount(); ++step) {
    tour.goTo(step);
    EXPECT_GE(tour.stepView(), step == 0 ? -1 : 0) << "tour step " << step << " names no registered view";
  }
}
