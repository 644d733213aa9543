#pragma once
// One trainer per run folder (issue 19): an OS file lock on <run>/.lock, held while a run
// trains. The OS releases it when the process ends, however it ends (a kill -9 never leaves
// a stale lock), and it is taken without waiting: a second trainer, from the CLI or the
// studio, in this process or another, is refused at once with the holder's PID. Readers (eval,
// generate, the studio following a run) do not take it and are never blocked.
#include <stdexcept>
#include <string>

namespace hsm {

// Thrown when another trainer holds the folder; the message names it and what to do.
struct RunBusy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class RunLock {
 public:
  // Creates run_dir/.lock if needed and locks it; throws RunBusy, or std::runtime_error when
  // the folder cannot hold the file (the message names the path and the reason).
  explicit RunLock(const std::string& run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace hsm
