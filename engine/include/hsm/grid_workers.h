#pragma once
// What a grid of runs (a lab, a sweep: hsm/sweep.h) does in its launcher and its workers
// (issues 46, 47), written once: a wait that passes a stop on to every worker (the workers and
// the stop signals themselves: hsm/worker_process.h); a grid folder whose runs/ is not a link;
// the workers' progress events. Plain C++ (no LibTorch).
#include <sys/types.h>

#include <string>
#include <vector>

#include "hsm/worker_process.h"

namespace hsm {

// A grid's progress events (issue 47): one JSON object a line, after this prefix, on a worker's
// standard output (`hsm sweep run DIR --point K --events`) and, with --events, its launcher's:
//   {"event": "grid", "points": N, "done": D}                      the launcher, first
//   {"event": "started", "point": K, "name": NAME, "resumed": B}
//   {"event": "step", "point": K, "name": NAME, "fraction": F}   (every 1 % of a run, or 0.5 s)
//   {"event": "finished", "point": K, "name": NAME, "state": "done" | "stopped" | "failed",
//    "error": TEXT, "answer_accuracy": X, "sequence_accuracy": X, "val_loss": X,
//    "score": {...}, "wall_s": X, "convergence": {...}}        a scored point: its score as its
//    state file holds it (hsm/sweep.h, task_score_json: by distance too) and how its training
//    ended (hsm/lab.h, run_convergence_json), so a lab's cells follow the events
//    (hsm::Lab::run_of_event) without reading the folder; the line stays under PIPE_BUF.
// What the studio reads (GridRunner); a grid's log text is for people, never parsed.
inline constexpr char kGridEventPrefix[] = "hsm-grid-event ";
// Writes kGridEventPrefix + json_object + "\n" to standard output in one write(2): the
// workers of a launcher share its output, and lines under PIPE_BUF never interleave. A reader
// gone is not an error (the caller ignores SIGPIPE; a stop comes as a signal).
void write_grid_event(const std::string& json_object);

// Waits for one of `running` to end; a stop signal that came meanwhile (StopSignals) is
// passed on to every one of them as SIGTERM, once (`forwarded` remembers). Returns the pid and
// its wait status, or pid -1 when none is left to wait for.
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
