#include "hsm/jsonl_tail.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace hsm {

void JsonlTail::skip(const std::string& why) {
  ++skipped_;
  if (problems_.size() < kMaxProblems)
    problems_.push_back(path_ + " line " + std::to_string(line_) + ": " + why + " (skipped)");
}

void JsonlTail::poll(uint64_t max_bytes, uint64_t max_line_bytes, const std::string& record,
                     const std::function<void(const std::string& line)>& parse) {
  reset_ = more_ = false;
  problems_.clear();
  const std::string too_long = "longer than " + std::to_string(max_line_bytes / 1024) + " KiB";
  std::error_code ec;
  const uint64_t size = fs::file_size(path_, ec);
  if (ec) return;  // not written yet
  if (size < offset_) {  // rewritten (a resume truncates records past its checkpoint)
    offset_ = 0;
    line_ = 0;
    in_long_line_ = false;
    reset_ = true;
  }
  if (size == offset_) return;
  // About max_bytes, and at least max_line_bytes + 1: then every slice holds a newline or
  // proves the line it is in too long to be a record, so each poll moves on.
  const uint64_t want = std::min(size - offset_, std::max<uint64_t>(max_bytes, max_line_bytes + 1));
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(want, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  size_t start = 0;
  for (size_t nl; (nl = chunk.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (in_long_line_) {  // the end of a line already passed over as too long
      in_long_line_ = false;
      continue;
    }
    ++line_;
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
  if (in_long_line_ || chunk.size() - start > max_line_bytes) {
    if (!in_long_line_) {
      ++line_;
      skip(too_long + " and unfinished, not a " + record);
    }
    in_long_line_ = true;
    start = chunk.size();
  }
  more_ = offset_ + chunk.size() < size;  // this slice did not reach the end of the file
  offset_ += start;
}

}  // namespace hsm
