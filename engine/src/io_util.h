#pragma once
// Small file helpers shared by the engine (internal header).
#include <string>

namespace hsm {

// Reads a whole (small) text file; throws std::runtime_error naming the path and what.
std::string read_text_file(const std::string& path, const std::string& what);

// Writes to `path + ".tmp"` then renames over `path`, so a crash never leaves half a file.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace hsm

namespace hsm {

// 64-bit FNV-1a as 16 hex digits: a stable digest for cache keys (not for security).
std::string fnv1a_hex(const std::string& bytes);

// Sizes and modification times of a file or of every file under a folder, as text: changes
// whenever the corpus changes, without reading it.
std::string files_fingerprint(const std::string& path);

// $HSM_CACHE_DIR, else $XDG_CACHE_HOME/hsm-studio, else ~/.cache/hsm-studio, else ./.hsm-cache.
std::string default_cache_dir();

}  // namespace hsm
