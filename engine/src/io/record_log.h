#pragma once
// An append-only JSON-lines record file of a run (metrics.jsonl, diagnostics.jsonl) that a
// full disk neither tears nor silently stops (issue 34): each line is written whole or not at
// all (a partial write is cut off again), a line that cannot be written is held in memory and
// written, in order, before the next one, and every append says whether the file is complete.
#include <cstddef>
#include <deque>
#include <string>

namespace hsm {

class RecordLog {
 public:
  // Opens `path` for appending, or empties it (truncate). The file is opened without
  // following a symbolic link (a run folder's records never land outside it). Throws
  // std::runtime_error naming the path and the reason.
  RecordLog(std::string path, bool truncate);
  ~RecordLog();
  RecordLog(const RecordLog&) = delete;
  RecordLog& operator=(const RecordLog&) = delete;

  // Appends `line` (without its newline) after the lines held so far. Returns "" when every
  // line is in the file, else the reason the file is behind ("No space left on device"); the
  // lines stay held for the next append or flush().
  std::string append(const std::string& line);
  // Writes the held lines; "" when none is left.
  std::string flush();
  // Lines not yet in the file (in memory), and lines given up because too many were held.
  size_t held() const { return held_.size(); }
  size_t dropped() const { return dropped_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::deque<std::string> held_;
  size_t dropped_ = 0;
};

}  // namespace hsm
