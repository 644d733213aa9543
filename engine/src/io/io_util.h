#pragma once
// Small file helpers shared by the engine (internal header).
#include <cstddef>
#include <string>

#include "hsm/files.h"  // read_text_file, append_file_no_follow, write_file_atomic (public: the CLI and the studio use them)

namespace hsm {

// Flushes a folder's entries (renames, new files) to the disk; a failure is ignored (some file
// systems cannot).
void sync_dir(const std::string& dir);

// Removes the temporaries `<name>.tmp.<pid>` in `dir` whose writing process is gone (a kill
// in the middle of a write); those of a live process are kept. Returns how many went.
int remove_dead_temporaries(const std::string& dir);

// The folder of the running executable (from /proc/self/exe); empty if unknown. Bundled
// data and plugins are looked for relative to it.
std::string executable_dir();

}  // namespace hsm
