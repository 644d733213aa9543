#pragma once
// A view's entry in the view registry (view_registry.h): its id, its texts, its shortcut and how
// to make it. The registry, at the top of the studio's layers, holds one per view; the help and
// the tour (help/) are given the entries and read their titles and help here, so they know no
// view's class.
#include <QKeySequence>
#include <QString>

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

}  // namespace studio
