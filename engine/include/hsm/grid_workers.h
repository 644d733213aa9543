#pragma once
// What a grid of runs (a lab, a sweep: hsm/sweep.h) does in its launcher and its workers
// (issues 46, 47), written once: one stop path for SIGINT, SIGTERM and SIGHUP; workers started
// as children that end with their launcher and log to a file opened without following a link;
// a wait that passes a stop on to every worker; a grid folder whose runs/ is not a link; the
// workers' progress events. Plain C++ (no LibTorch).
#include <sys/types.h>

#include <atomic>
#include <string>
#include <vector>

namespace hsm {

// SIGINT (Ctrl-C), SIGTERM (a scheduler, kill) and SIGHUP (a closed terminal, a dropped ssh)
// raise one flag while an object of this class lives; the previous handlers come back when it
// ends. restart: the handlers use SA_RESTART (a worker: its training's own calls go on);
// without it (a launcher) a wait is interrupted and the stop passed on at once. One at a time.
class GridStopSignals {
 public:
  explicit GridStopSignals(bool restart);
  ~GridStopSignals();
  GridStopSignals(const GridStopSignals&) = delete;
  GridStopSignals& operator=(const GridStopSignals&) = delete;
  // Raised by a stop signal; what train_until_stopped() and Lab::run() poll.
  static const std::atomic<bool>* flag();
  static bool raised();
  static int signal();  // the last stop signal received (0: none)
};

// Starts `argv` (argv[0] the program) as a worker of this launcher: it gets SIGTERM when the
// launcher dies (no orphan training on), default stop handling until it installs its own, and
// HSM_BLAS_THREADS=1 unless set. log (not empty): its stderr (and its stdout unless
// keep_stdout: then the launcher's, for its events) are appended to that file, opened here
// without following a link (a link or a non-regular file is refused, naming it, before anything
// starts). Throws std::runtime_error naming the worker or the file.
pid_t start_grid_worker(const std::vector<std::string>& argv, const std::string& log = "", bool keep_stdout = false);

// A grid's progress events (issue 47): one JSON object a line, after this prefix, on a worker's
// standard output (`hsm sweep run DIR --point K --events`) and, with --events, its launcher's:
//   {"event": "grid", "points": N, "done": D}                      the launcher, first
//   {"event": "started", "point": K, "name": NAME, "resumed": B}
//   {"event": "step", "point": K, "name": NAME, "fraction": F}   (every 1 % of a run, or 0.5 s)
//   {"event": "finished", "point": K, "name": NAME, "state": "done" | "stopped" | "failed",
//    "error": TEXT, "answer_accuracy": X, "sequence_accuracy": X, "val_loss": X}
// What the studio reads (GridRunner); a grid's log text is for people, never parsed.
inline constexpr char kGridEventPrefix[] = "hsm-grid-event ";
// Writes kGridEventPrefix + json_object + "\n" to standard output in one write(2): the
// workers of a launcher share its output, and lines under PIPE_BUF never interleave. A reader
// gone is not an error (the caller ignores SIGPIPE; a stop comes as a signal).
void write_grid_event(const std::string& json_object);

// Waits for one of `running` to end; a stop signal that came meanwhile (GridStopSignals) is
// passed on to every one of them as SIGTERM, once (`forwarded` remembers). Returns the pid and
// its wait status, or pid -1 when none is left to wait for.
struct WorkerEnd {
  pid_t pid = -1;
  int status = 0;
};
WorkerEnd wait_grid_worker(const std::vector<pid_t>& running, bool& forwarded);

// A wait status in words: "exit status 1", "stopped by SIGTERM (exit status 130)", "killed by
// signal 9 (Killed)".
std::string worker_status_text(int status);

// Refuses a grid folder whose runs/ (or points/) is a symbolic link or not a folder: its runs
// would train outside the folder. what: "lab" or "sweep". Throws std::invalid_argument naming it.
void check_grid_folder(const std::string& dir, const std::string& what);
// The same for one run folder of the grid (runs/NAME a link to elsewhere).
void check_grid_run_dir(const std::string& run_dir);

// The shortest decimal text that reads back as exactly `x` ("0.003", "0.0030000001"): two
// values never share a text, so never a run folder or a table key.
std::string exact_number_text(double x);

// `s` as one word of shell text: in single quotes, a quote in it as '\'' (a newline inside the
// quotes is part of the word).
std::string shell_quoted(const std::string& s);

}  // namespace hsm
