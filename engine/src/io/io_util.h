#pragma once
// Small file helpers shared by the engine (internal header).
#include <string>

namespace hsm {

// Reads a whole (small) text file; throws std::runtime_error naming the path and what.
std::string read_text_file(const std::string& path, const std::string& what);

// Writes to `path + ".tmp"` then renames over `path`, so a crash never leaves half a file.
void write_file_atomic(const std::string& path, const std::string& bytes);

// The folder of the running executable (from /proc/self/exe); empty if unknown. Bundled
// data and plugins are looked for relative to it.
std::string executable_dir();

// $HSM_CACHE_DIR, else $XDG_CACHE_HOME/hsm-studio, else ~/.cache/hsm-studio, else ./.hsm-cache.
std::string default_cache_dir();

}  // namespace hsm
