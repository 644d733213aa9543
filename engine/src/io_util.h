#pragma once
// Small file helpers shared by the engine (internal header).
#include <string>

namespace hsm {

// Reads a whole (small) text file; throws std::runtime_error naming the path and what.
std::string read_text_file(const std::string& path, const std::string& what);

// Writes to `path + ".tmp"` then renames over `path`, so a crash never leaves half a file.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace hsm
