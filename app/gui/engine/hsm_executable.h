#pragma once
// Where the `hsm` command-line program is, for work the studio hands to processes of their own
// (the Lab view's workers): beside the studio when installed (/usr/bin), in the build tree's
// engine/cli when run from a build, else on PATH. Processes, not threads, because LibTorch's
// random generator and thread count are per process: two lab runs in one process would
// disturb each other's seeds, and a process per core is what `hsm lab --jobs` measures.
#include <QString>

namespace studio {

// The program's absolute path, or an empty string when none is found.
QString hsmExecutable();
// Tests point the studio at the hsm they built.
void setHsmExecutable(const QString& path);

}  // namespace studio
