#pragma once
// "Train a small model now" (the start page): the starter preset, with the training settings
// its file carries, on the bundled starter corpus, started at once in the Training view, so a
// newcomer sees curves fill within the first minute.
#include <QString>

namespace studio {

class TrainingView;

// Fills the Training view's form and presses Start. Returns an empty string once training
// has started, else the reason it could not (no starter corpus installed, a field refused,
// a run already training).
QString startStarterRun(TrainingView* view);

}  // namespace studio
