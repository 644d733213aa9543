#include "io/record_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hsm {
namespace {

// More held lines than this (a disk full for a whole long run) drop the oldest: memory is
// not the place to keep a run's curve forever.
constexpr size_t kMaxHeld = 100000;

// Writes `text` at the end of the file, whole or not at all; returns 0 or the errno.
int write_whole(int fd, const std::string& text) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  const off_t end = st.st_size;
  int err = 0;
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, end + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (err != 0 && ::ftruncate(fd, end) != 0) {
    // Cut off where it was: a reader (the studio) skips a torn last line until it is whole,
    // and the next write starts at the same place again.
  }
  return err;
}

}  // namespace

RecordLog::RecordLog(std::string path, bool truncate) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd_ < 0) {
    const int err = errno;
    throw std::runtime_error("cannot write " + path_ + ": " +
                             (err == ELOOP ? std::string("it is a symbolic link (a run folder's files are its own; "
                                                         "remove the link)")
                                           : std::string(std::strerror(err))));
  }
}

RecordLog::~RecordLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::string RecordLog::append(const std::string& line) {
  held_.push_back(line + "\n");
  if (held_.size() > kMaxHeld) {
    held_.pop_front();
    ++dropped_;
  }
  return flush();
}

std::string RecordLog::flush() {
  while (!held_.empty()) {
    const int err = write_whole(fd_, held_.front());
    if (err != 0) return std::strerror(err);
    held_.pop_front();
  }
  return {};
}

}  // namespace hsm
