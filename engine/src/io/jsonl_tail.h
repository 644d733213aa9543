#pragma once
// Following a JSON-lines file that another process appends to (metrics.jsonl,
// diagnostics.jsonl): the line reading shared by MetricsReader (hsm/run_folder.h) and
// DiagnosticsLogReader (hsm/diagnostics_log.h). Each reader keeps its position in its own
// members and hands them here by reference.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hsm {

struct JsonlTail {
  const std::string& path;
  uint64_t& offset;      // bytes consumed (always just after a newline)
  int64_t& line;         // lines read so far (1-based number of the last one)
  bool& in_long_line;    // offset is inside a too-long line: skip to its newline
  int64_t& skipped;
  std::vector<std::string>& problems;  // "<path> line N: what is wrong (skipped)", at most kMaxProblems
  bool& reset;           // this poll started over (the file shrank)
  bool& more;            // this poll stopped before the end of the file
  static constexpr size_t kMaxProblems = 20;
};

// Reads the whole lines appended since the last call (about max_bytes, at least
// max_line_bytes + 1, so every call moves on) and hands each non-empty one to `parse`. A line
// `parse` refuses (std::invalid_argument or std::runtime_error) or one longer than
// max_line_bytes is skipped and described as not a `record` ("metrics record"); a half-written
// last line waits for the next call; a file that shrank is read again from the start.
void poll_jsonl(JsonlTail t, uint64_t max_bytes, uint64_t max_line_bytes, const std::string& record,
                const std::function<void(const std::string& line)>& parse);

}  // namespace hsm
