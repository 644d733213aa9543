#pragma once
// Reading and writing a user's small files safely (issue 46, docs/safety.md): every file read
// as JSON or text is a regular file read up to a size bound; every output is written whole
// (a temporary, then one rename) and never through a link. Shared by the engine, the `hsm`
// CLI and the studio. Plain C++ (no LibTorch, no JSON library).
#include <cstddef>
#include <string>

namespace hsm {

// The most a small file read whole (a config, a task, a spec, a state file) may hold: 64 MiB.
inline constexpr std::size_t kSmallFileMaxBytes = std::size_t{64} << 20;

// Reads a whole small file; throws std::runtime_error naming `what`, the path and the reason.
// Only a regular file is read (issue 46): a FIFO, a device (/dev/zero), a socket or a folder is
// refused at once, never waited on or read without end (the open does not block on a FIFO), and a
// file over `max_bytes` is refused before it is read.
std::string read_text_file(const std::string& path, const std::string& what,
                           std::size_t max_bytes = kSmallFileMaxBytes);

// Appends `text` to the regular file `path`, creating it (0644) when missing, in one write(2)
// with O_APPEND. A link at `path` is refused, never followed (issue 46: a linked results.jsonl or
// log would otherwise grow its target outside the folder); so is anything but a regular file.
// Throws std::runtime_error naming the path and the reason.
void append_file_no_follow(const std::string& path, const std::string& text);

// Writes to `path + ".tmp"`, flushes it to the disk (fsync), then renames it over `path`: a
// crash or a kill never leaves half a file, and a failed write (a full disk) removes the
// temporary and throws std::runtime_error naming the path and the reason.
// shared: `path` is in a folder several processes fill at once (a cache): the temporary gets a
// name of its own, `<path>.<n>.tmp.<pid>` (remove_dead_temporaries removes a killed writer's),
// so two writers never take each other's (issue 34).
// mode: the new file's permissions (less the umask), e.g. 0755 for a script; set on the new file
// itself, so a link that stood at `path` is replaced, never followed or chmod-ed.
void write_file_atomic(const std::string& path, const std::string& bytes, bool shared = false,
                       unsigned mode = 0644);

}  // namespace hsm
