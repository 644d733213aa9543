#pragma once
// Shared by the fuzz targets: a scratch folder for the readers that take a path, and the
// way a target reports a broken promise (a crash that libFuzzer keeps the input of).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace hsm::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
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

}  // namespace hsm::fuzz
