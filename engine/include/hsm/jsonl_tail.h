#pragma once
// Following a JSON-lines file that another process appends to (metrics.jsonl,
// diagnostics.jsonl): the one tail reader that MetricsReader (hsm/run_folder.h) and
// DiagnosticsLogReader (hsm/diagnostics_log.h) each hold, so the position, the line count and
// the problems of a file live in one place. Plain C++.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hsm {

class JsonlTail {
 public:
  static constexpr size_t kMaxProblems = 20;
  explicit JsonlTail(std::string path) : path_(std::move(path)) {}

  // Reads the whole lines appended since the last call (about max_bytes, at least
  // max_line_bytes + 1, so every call moves on) and hands each non-empty one to `parse`. A
  // line `parse` refuses (std::invalid_argument or std::runtime_error) or one longer than
  // max_line_bytes is skipped and described as not a `record` ("metrics record"); a
  // half-written last line waits for the next call; a file that shrank is read again from
  // the start.
  void poll(uint64_t max_bytes, uint64_t max_line_bytes, const std::string& record,
            const std::function<void(const std::string& line)>& parse);

  bool reset() const { return reset_; }  // the last poll() started over (the file shrank)
  bool more() const { return more_; }    // the last poll() stopped before the end of the file
  // The lines the last poll() skipped, each "<path> line N: what is wrong (skipped)" (at most
  // kMaxProblems; skipped() counts them all, since the start).
  const std::vector<std::string>& problems() const { return problems_; }
  int64_t skipped() const { return skipped_; }
  const std::string& path() const { return path_; }

 private:
  void skip(const std::string& why);
  std::string path_;
  uint64_t offset_ = 0;         // bytes consumed (always just after a newline)
  int64_t line_ = 0;            // lines read so far (1-based number of the last one)
  int64_t skipped_ = 0;
  bool in_long_line_ = false;  // offset_ is inside a too-long line: skip to its newline
  bool reset_ = false;
  bool more_ = false;
  std::vector<std::string> problems_;
};

}  // namespace hsm
