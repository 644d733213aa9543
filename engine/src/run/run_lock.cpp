#include "hsm/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace hsm {
namespace {

// This process, as the lock file records it: "pid 1234 (hsm)".
std::string this_process() {
  std::string name = "?";
  std::ifstream comm("/proc/self/comm");
  std::getline(comm, name);
  return "pid " + std::to_string(::getpid()) + " (" + name + ")";
}

std::string recorded_holder(int fd) {
  char buf[256] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "another process" : text;
}

}  // namespace

RunLock::RunLock(const std::string& run_dir) {
  const std::string path = RunFolder(run_dir).lock;
  // Never through a link: a downloaded folder's .lock pointing elsewhere would have that file
  // truncated and overwritten (issue 34).
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ELOOP)
      throw std::runtime_error("the run lock '" + path + "' is a symbolic link: a run folder's files are its own; "
                               "remove the link (hsm makes the lock itself)");
    throw std::runtime_error("cannot create the run lock '" + path + "': " + std::strerror(err));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string who = recorded_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw RunBusy("'" + run_dir + "' is being trained by " + who +
                    ": one trainer per run folder; wait for it to finish or stop it, or train into another --out");
    throw std::runtime_error("cannot lock '" + path + "': " + std::strerror(err));
  }
  const std::string me = this_process() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // The lock holds all the same; only the name shown to a second trainer is missing.
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace hsm
