#pragma once
// "What am I looking at?" (issue 36): each view explained in plain words, with the formula of
// the current run's mixers (their registry entries, hsm/mixer_kind.h) and the terms of the
// glossary; and Help › Keyboard shortcuts, read from the window's own menus so it cannot go
// out of date.
#include <QDialog>
#include <vector>

#include "gui/views/view_entry.h"
#include "hsm/config.h"

class QMenuBar;
class QTextBrowser;

namespace studio::help {

// The help of one view (its entry in the view registry, view_registry.h; nullptr = the start
// page), as HTML. `model`: the current run's model, whose mixers' formulas are shown (nullptr:
// none open).
QString viewHelpHtml(const ViewEntry* view, const hsm::ModelConfig* model);
// A formula of the engine's registry ("y_i = Σ_{j≤i} w_ij v_j") as HTML, its subscripts and
// powers set as such.
QString formulaHtml(const QString& formula);
// The view's title in the help ("Playground", "Start page" for nullptr).
QString viewTitle(const ViewEntry* view);

// A window beside the main window that shows the help of the view in front and follows it.
class HelpPanel : public QDialog {
  Q_OBJECT
 public:
  // `views`: the view registry's entries (kept by reference), whose indices showHelp takes.
  explicit HelpPanel(const std::vector<ViewEntry>& views, QWidget* parent = nullptr);
  // The help of the view at this index of the entries (-1: the start page).
  void showHelp(int view, const hsm::ModelConfig* model);
  int shownView() const { return view_; }
  QString text() const;

 private:
  const std::vector<ViewEntry>& views_;
  QTextBrowser* browser_;
  int view_ = -2;
};

// Every shortcut of the menus (name and keys), then those of the views' own buttons.
QString shortcutsHtml(const QMenuBar* menus);

}  // namespace studio::help
