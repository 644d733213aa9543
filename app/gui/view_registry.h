#pragma once
// The studio's views, one entry each (docs/architecture.md, "Add a view"). MainWindow builds
// from this list, in its order, the tabs, the View menu with its shortcuts, and the files an
// export names; it hands the list to "What am I looking at?" (help/view_help.h) and the tour,
// which read each view's title and help in it. A new view is its own files and one entry in
// view_registry.cpp.
//
// The registry is at the top of the studio's layers, beside the main window (ctest
// studio_layers): the one file that names every view's class.
#include <vector>

#include "gui/views/view_entry.h"

namespace studio {

// Every view, in tab order: a view's index here is its tab's index (MainWindow::View).
const std::vector<ViewEntry>& viewRegistry();
// The index of the view with this id, -1 if none has it.
int viewIndex(const char* id);
// The entry of the view at this index; nullptr out of range (the start page is -1).
const ViewEntry* viewEntry(int index);

}  // namespace studio
