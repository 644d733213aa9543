#pragma once
// The studio's views, one entry each (docs/architecture.md, "Add a view"). MainWindow builds
// from this list, in its order, the tabs, the View menu with its shortcuts, and the files an
// export names; "What am I looking at?" (help/view_help.h) and the tour read each view's title
// and help here. A new view is its own files and one entry in view_registry.cpp.
#include <QKeySequence>
#include <QString>
#include <vector>

class QWidget;

namespace studio {

class EngineHost;
class RunList;

struct ViewEntry {
  // What "What am I looking at?" adds below the view's own help.
  enum HelpExtra {
    kNoExtra = 0,
    kCurrentRunsMixers = 1,  // the formulas of the current run's mixers (a view of the current run)
    kIndicators = 2,         // the diagnostic indicators' definitions
  };

  const char* id;         // "losses": names the view in exported files and in the tour
  const char* title;      // the tab's and the help's title (translated in the "views" context)
  const char* menuText;   // the View menu's entry, with its & mnemonic
  QKeySequence shortcut;  // the View menu entry's keys
  const char* help;       // the help's body, HTML (translated in the "help" context)
  int helpExtras;         // HelpExtra flags
  QWidget* (*make)(RunList* runs, EngineHost* engine);  // the view, unparented

  // The texts above, translated.
  QString tabTitle() const;
  QString menuLabel() const;
  QString helpBody() const;
};

// Every view, in tab order: a view's index here is its tab's index (MainWindow::View).
const std::vector<ViewEntry>& viewRegistry();
// The index of the view with this id, -1 if none has it.
int viewIndex(const char* id);
// The entry of the view at this index; nullptr out of range (the start page is -1).
const ViewEntry* viewEntry(int index);

}  // namespace studio
