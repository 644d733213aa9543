#pragma once
// Shared by the fuzz targets: a scratch folder for the readers that take a path, and the
// way a target reports a broken promise (a crash that libFuzzer keeps the input of).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hsm::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Calls fn(line) with every line of `text` (without its '\n'), the part after the last '\n'
// too, so each line of a file is also read on its own.
template <class Fn>
void for_each_line(std::string_view text, Fn fn) {
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    fn(std::string(text.substr(start, end - start)));
    start = end + 1;
  }
}

// A promise of the reader's API was broken: say which, and abort so libFuzzer saves the input.
[[noreturn]] inline void broken(const std::string& promise) {
  std::fprintf(stderr, "\nfuzz: broken promise: %s\n", promise.c_str());
  std::abort();
}

// A folder of this process under $TMPDIR, made when constructed and removed with everything
// in it when the process exits normally (libFuzzer ends a -max_total_time run with exit()).
// A crashed run leaves it behind, so run.sh points TMPDIR at a folder of its own and
// removes that.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& target)
      : dir_(std::filesystem::temp_directory_path() / ("hsm-fuzz-" + target + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }

  // Writes (or with append, adds) the bytes to `name` in the folder; returns its path. The
  // file is overwritten in place and then cut to length: ext4 flushes a file to disk when
  // it is closed after a truncation to zero (auto_da_alloc), which made a run 30x slower.
  std::string write(const std::string& name, std::string_view bytes, bool append = false) const {
    const std::string file = (dir_ / name).string();
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : 0), 0600);
    if (fd < 0) broken("cannot open the scratch file " + file);
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) broken("cannot write the scratch file " + file);
      done += static_cast<size_t>(n);
    }
    if (!append && ::ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) broken("cannot cut " + file);
    ::close(fd);
    return file;
  }

 private:
  std::filesystem::path dir_;
};

// A JSON-lines file that a writer appends to, followed by an incremental reader as the studio
// follows it (MetricsReader, DiagnosticsLogReader): `input` is written to `name` in pieces cut
// at 0x01 bytes, each appended (a writer's flush, which may end mid-line) or, when it starts
// with 0x02, replacing the file (a resume rewrote it). After each piece the reader is drained:
// poll(slice) again while more(). Checks that a drain ends (each poll that says more() read
// something) and that every skipped line is named with its file and line. Appends what was
// followed to `followed` (cleared when the reader starts over); returns whether the file was
// ever rewritten.
template <class Reader, class Record>
bool follow_pieces(const ScratchDir& scratch, const std::string& name, std::string_view input, uint64_t slice,
                   Reader& reader, std::vector<Record>& followed) {
  scratch.write(name, "");
  bool rewritten = false;
  uint64_t file_size = 0;
  for (size_t start = 0; start <= input.size();) {
    const size_t end = std::min(input.find('\x01', start), input.size());
    std::string_view piece = input.substr(start, end - start);
    start = end + 1;
    const bool replace = !piece.empty() && piece.front() == '\x02';
    if (replace) {
      piece.remove_prefix(1);
      rewritten = true;
      file_size = 0;
    }
    scratch.write(name, piece, !replace);
    file_size += piece.size();
    // Each poll that says more() must have read something, so a drain takes at most one
    // poll per byte of the file, plus the last one.
    for (uint64_t polls = 0;; ++polls) {
      if (polls > file_size + 1)
        broken("poll() keeps saying more() after " + std::to_string(polls) + " polls of a " +
               std::to_string(file_size) + "-byte file (a spin)");
      std::vector<Record> fresh = reader.poll(slice);
      for (const std::string& problem : reader.problems())
        if (problem.rfind(reader.path() + " line ", 0) != 0)
          broken("a skipped line reported without its file and line: " + problem);
      if (reader.reset()) followed.clear();
      followed.insert(followed.end(), fresh.begin(), fresh.end());
      if (!reader.more()) break;
    }
  }
  return rewritten;
}

// A file that only grew reads the same followed as read at once (a rewrite that leaves the
// file longer than before cannot be told from an append, so the caller compares only then).
template <class Record, class Same>
void expect_followed_as_whole(const std::vector<Record>& whole, const std::vector<Record>& followed,
                              const std::string& file, Same same) {
  if (whole.size() != followed.size())
    broken("followed piece by piece, " + file + " gave " + std::to_string(followed.size()) + " records; read at once, " +
           std::to_string(whole.size()));
  for (size_t i = 0; i < whole.size(); ++i)
    if (!same(whole[i], followed[i])) broken("record " + std::to_string(i) + " of " + file + " differs when followed");
}

}  // namespace hsm::fuzz
