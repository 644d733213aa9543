#pragma once
// Worker processes and stop signals, written once (issue 66): what `hsm train` does with SIGINT,
// SIGTERM and SIGHUP, and how a launcher (a grid's: hsm/grid_workers.h; `hsm train --nproc`:
// hsm/distributed.h) starts its workers, ties their lives to its own, passes a stop on to them
// and waits for them. Plain C++ (no LibTorch).
#include <sys/types.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace hsm {

// SIGINT (Ctrl-C), SIGTERM (a scheduler, kill) and SIGHUP (a closed terminal, a dropped ssh)
// raise one flag while an object of this class lives; the previous handlers come back when it
// ends. restart: the handlers use SA_RESTART (a process that trains: its own calls go on);
// without it (a launcher) a wait is interrupted and the stop passed on at once. One at a time.
//
// A process that trains (restart) also keeps the handler off the threads that compute: the
// signals are blocked in the constructing thread, so in every thread it starts afterwards
// (LibTorch's and oneDNN's OpenMP pools, Gloo's), and a thread of this object's own receives
// them. oneDNN's JIT matrix products (libdnnl up to 3.11, Debian's included) point rsp at a
// heap buffer while they run; a signal handled on such a thread writes its frame (2.4 kB of
// AVX-512 state) over the heap, and glibc aborted minutes or steps later ("corrupted size vs.
// prev_size", a stopped run without its checkpoint: oneDNN issue 4845). A signal sent to the
// constructing thread alone (raise, pthread_kill) waits until the object ends.
class StopSignals {
 public:
  explicit StopSignals(bool restart);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // Raised by a stop signal; what train_until_stopped() and a grid's launcher poll.
  static const std::atomic<bool>* flag();
  static bool raised();
  static int signal();  // the last stop signal received (0: none)
  // The stop signal received since the last take() (0: none): a launcher that passes each one on.
  static int take();
  // The thread (its kernel id) that ran the handler for the last stop signal (0: none yet).
  static long handler_thread();
};

// A worker to start: argv (argv[0] the name it sees), the program executed (`program`, or
// argv[0] when empty; "/proc/self/exe" for this program), variables set in its environment, and
// where its output goes.
struct WorkerOptions {
  std::vector<std::string> argv;
  std::string program;
  std::vector<std::pair<std::string, std::string>> env;
  // Not empty: its stderr (and its stdout unless keep_stdout: then the launcher's, for its
  // events) are appended to this file, opened here without following a link (a link or a
  // non-regular file is refused, naming it, before anything starts).
  std::string log;
  bool keep_stdout = false;
  std::string what;  // how an error names it ("rank 1"); "" : "a worker (argv[0])"
};

// Starts a worker as a child of this process: it gets SIGTERM when this process dies (no orphan
// training on; it exits at once if this process died before it could ask for that), default
// handling of the stop signals until it installs its own, and HSM_BLAS_THREADS=1 unless set.
// Throws std::runtime_error naming the worker or its log.
pid_t start_worker(const WorkerOptions& options);

// Sends `sig` to each of `pids` (a pid <= 0, a worker already waited for, is skipped).
void signal_workers(const std::vector<pid_t>& pids, int sig);

// Waits for a child to end: one of `running`, its pid and wait status. pid 0: none of them ended
// (with `poll` the wait does not block; a signal interrupted it; another child ended and was
// reaped): the caller looks at StopSignals, passes a stop on, and waits again. pid -1: no
// child is left to wait for.
struct WorkerEnd {
  pid_t pid = -1;
  int status = 0;
};
WorkerEnd wait_worker(const std::vector<pid_t>& running, bool poll = false);

}  // namespace hsm
