#pragma once
// Small file helpers shared by the engine (internal header).
#include <string>

namespace hsm {

// Reads a whole (small) text file; throws std::runtime_error naming the path and what.
std::string read_text_file(const std::string& path, const std::string& what);

// Writes to `path + ".tmp"`, flushes it to the disk (fsync), then renames it over `path`: a
// crash or a kill never leaves half a file, and a failed write (a full disk) removes the
// temporary and throws std::runtime_error naming the path and the reason.
// shared: `path` is in a folder several processes fill at once (a cache): the temporary gets a
// name of its own, `<path>.<n>.tmp.<pid>` (remove_dead_temporaries removes a killed writer's),
// so two writers never take each other's (issue 34).
void write_file_atomic(const std::string& path, const std::string& bytes, bool shared = false);

// Flushes a folder's entries (renames, new files) to the disk; a failure is ignored (some file
// systems cannot).
void sync_dir(const std::string& dir);

// Removes the temporaries `<name>.tmp.<pid>` in `dir` whose writing process is gone (a kill
// in the middle of a write); those of a live process are kept. Returns how many went.
int remove_dead_temporaries(const std::string& dir);

// The folder of the running executable (from /proc/self/exe); empty if unknown. Bundled
// data and plugins are looked for relative to it.
std::string executable_dir();

// default_cache_dir() is public: hsm/dataset.h.

}  // namespace hsm
