#pragma once
// The studio's views, one entry each (docs/architecture.md, "Add a view"). MainWindow builds
// from this list, in its order, the tabs, the View menu with its shortcuts, and the files an
// export names; it hands the list to "What am I looking at?" (help/view_help.h) and the tour,
// which read each view's title and help in it. A new view is its own files and one entry in
// view_registry.cpp.
//
// The registry is at the top of the studio's layers, beside the main window (ctest
// studio_layers): the one file that names every view's class. What one view asks of another,
// or of the window (the Lab opens a cell's run in Diagnostics), is wired here too (linkViews),
// so MainWindow knows the views only as StudioViews at registry indices.
#include <QString>
#include <functional>
#include <vector>

#include "gui/views/view_entry.h"

class QWidget;

namespace studio {

class PresentationMode;
class StartPage;

// Every view, in tab order: a view's index here is its tab's index (MainWindow::View).
const std::vector<ViewEntry>& viewRegistry();
// The index of the view with this id, -1 if none has it.
int viewIndex(const char* id);
// The entry of the view at this index; nullptr out of range (the start page is -1).
const ViewEntry* viewEntry(int index);

// What the views ask of the window that holds them.
struct ViewLinks {
  std::function<void(int view)> showView;                  // a registry index to the front
  std::function<QString(const QString& dir)> openRun;      // opens and makes current; "" or the reason
  std::function<void(const QString& message)> showStatus;  // a line in the status bar for a while
};

// Connects the views the registry made (`views`, in its order) to each other, the start page's
// requests to the Training view, and both to the window through `links`: the Lab saves the
// Architecture view's model and opens a cell's run in Diagnostics, the Architecture view's and
// the start page's Train fill the Training form, Experiments' curves show Training, a failed
// training is said in the status bar.
void linkViews(const std::vector<QWidget*>& views, StartPage* start, const ViewLinks& links);

// Presentation mode (F11) on the registry's Playground view.
PresentationMode* makePresentation(const std::vector<QWidget*>& views, QWidget* window);

}  // namespace studio
