#pragma once
// The Experiments view's small sweep form made into a grid spec (docs/sweeps.md, "The spec"):
// the fields, and the one function that writes the spec from them. No Qt widgets, no engine.
#include <QString>

namespace studio {

struct SweepForm {
  QString name = QStringLiteral("sweep");
  QString base;  // a preset name, or a model config file (.json)
  QString data;  // a corpus, or
  QString task;  // a synthetic task (hsm task list)
  int steps = 300, batch = 16, evalEvery = 100;
  // One axis a line: "path = v1, v2, ..." (a value with a comma in quotes, "hsm_ab@0,6"; or
  // the values as a JSON list). An axis of one value sets it for every point.
  QString axes;
};

// The spec (JSON text) of the form; on a line it cannot read returns "" with the reason in
// *error, naming the line.
QString sweep_spec_json(const SweepForm& form, QString* error);

}  // namespace studio
