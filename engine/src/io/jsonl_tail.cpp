#include "io/jsonl_tail.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace hsm {

void poll_jsonl(JsonlTail t, uint64_t max_bytes, uint64_t max_line_bytes, const std::string& record,
                const std::function<void(const std::string& line)>& parse) {
  t.reset = t.more = false;
  t.problems.clear();
  auto skip = [&](const std::string& why) {
    ++t.skipped;
    if (t.problems.size() < JsonlTail::kMaxProblems)
      t.problems.push_back(t.path + " line " + std::to_string(t.line) + ": " + why + " (skipped)");
  };
  const std::string too_long = "longer than " + std::to_string(max_line_bytes / 1024) + " KiB";
  std::error_code ec;
  const uint64_t size = fs::file_size(t.path, ec);
  if (ec) return;  // not written yet
  if (size < t.offset) {  // rewritten (a resume truncates records past its checkpoint)
    t.offset = 0;
    t.line = 0;
    t.in_long_line = false;
    t.reset = true;
  }
  if (size == t.offset) return;
  // About max_bytes, and at least max_line_bytes + 1: then every slice holds a newline or
  // proves the line it is in too long to be a record, so each poll moves on.
  const uint64_t want = std::min(size - t.offset, std::max<uint64_t>(max_bytes, max_line_bytes + 1));
  std::ifstream in(t.path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(t.offset));
  std::string chunk(want, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  size_t start = 0;
  for (size_t nl; (nl = chunk.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (t.in_long_line) {  // the end of a line already passed over as too long
      t.in_long_line = false;
      continue;
    }
    ++t.line;
    if (nl == start) continue;
    if (nl - start > max_line_bytes) {
      skip(too_long + ", not a " + record);
      continue;
    }
    try {
      parse(chunk.substr(start, nl - start));
    } catch (const std::invalid_argument& e) {
      skip("not a " + record + ": " + e.what());  // the rest of the file is kept
    } catch (const std::runtime_error& e) {
      skip("not a " + record + ": " + e.what());
    }
  }
  // After the last newline: a line still being written, which waits for the next poll; or,
  // longer than any record can be and still unfinished, no record at all: passed over up to
  // its newline (it was read again and again, forever, before).
  if (t.in_long_line || chunk.size() - start > max_line_bytes) {
    if (!t.in_long_line) {
      ++t.line;
      skip(too_long + " and unfinished, not a " + record);
    }
    t.in_long_line = true;
    start = chunk.size();
  }
  t.more = t.offset + chunk.size() < size;  // this slice did not reach the end of the file
  t.offset += start;
}

}  // namespace hsm
