#pragma once
// A run folder (docs/checkpoint-format.md) and its one owner, RunFolder: its files' names, its
// lock, its checkpoints and their pruning, and the one recipe that copies its model into a new
// folder (an export, a "save as"). The trainer, the diagnostics recorder, the CLI and the
// studio reach the folder through it, and its files' names are spelled in one place
// (run/run_folder_files.cpp). Also how the tools read it: config.json (model, training
// settings, data, state) and metrics.jsonl (one MetricRecord per line). Plain C++ and no
// LibTorch (the callers write the tensors), so the studio can list, compare and follow runs
// (also runs another process is still writing) without loading a model.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/jsonl_tail.h"
#include "hsm/tasks.h"
#include "hsm/train_settings.h"
namespace hsm {

class RecordLog;
class Tokenizer;
struct MetricRecord;

// A run folder's files and what is done to it as a whole. Run folders are things people
// download, so nothing in one is trusted to stay inside it: the trainer refuses a folder whose
// own files are symbolic links (check_no_links), and the lock, records and temporaries are
// opened without following one.
struct RunFolder {
  explicit RunFolder(std::string dir);
  std::string dir;
  std::string config;       // config.json: model, training settings, data, state
  std::string weights;      // model.safetensors: the newest checkpoint's weights (F32; an export's may be F16/BF16)
  std::string tokenizer;    // tokenizer.model: a corpus run's sentencepiece model
  std::string task;         // task.json: a task run's task ({"task": "NAME:key=value,..."}), no tokenizer
  std::string metrics;      // metrics.jsonl: one MetricRecord per line
  std::string diagnostics;  // diagnostics.jsonl: one diagnosis per validation (hsm/diagnostics_log.h)
  std::string traces;       // traces.jsonl: one causal trace per validation (hsm/formation.h)
  std::string best;         // best.safetensors: the weights of the lowest validation (keep_best)
  std::string checkpoints;  // checkpoints/step-N/: the newest kKeptCheckpoints, each whole
  std::string snapshots;    // snapshots/step-N/: weights and config kept at chosen steps (issue 67)
  std::string lock;         // .lock: held by the one trainer of the folder (RunLock)
  std::string optimizer;    // optimizer.safetensors at the top: runs written before step folders (resume reads it)

  // Checkpoints kept: the newest and the one before it.
  static constexpr int kKeptCheckpoints = 2;
  struct Checkpoint {
    int64_t step = 0;
    std::string dir, weights, optimizer, config;
  };
  // A resumed run's record log (traces.jsonl): keeps its lines whose "step" is at most `step`
  // (later ones were made after the checkpoint the run resumes from and are made again), the
  // file rewritten atomically; a line that is no JSON object with a whole "step" is dropped and
  // counted in `damaged`. Returns the steps of the lines kept, in file order. No file: none.
  std::vector<int64_t> keep_log_records_to(const std::string& log_path, int64_t step, int64_t& damaged) const;

  // Snapshots (issue 67; TrainSettings::snapshot_every, snapshot_log): the model as it was at
  // chosen steps, kept beside the newest checkpoints so a view or `hsm trace|probe|diagnose
  // --step S` can open it. At most kMaxSnapshots a run (its bound on disk: that many copies of
  // the weights; hard links to the checkpoint's file while that is kept).
  static constexpr int kMaxSnapshots = 32;
  // Keeps the published checkpoint of `step` as a snapshot: its weights and config linked (copied
  // where the file system has no links) into snapshots/step-N, published by one rename. False,
  // keeping nothing, when kMaxSnapshots are kept already; throws std::runtime_error naming the
  // file when the checkpoint is missing or cannot be linked.
  bool keep_snapshot(int64_t step) const;
  // The steps whose model the folder holds (snapshots and whole checkpoints), ascending.
  std::vector<int64_t> kept_steps() const;
  // The weights and config of the model at `step` (a snapshot, else a checkpoint; its optimizer
  // may be ""); throws std::invalid_argument naming the kept steps when there is none.
  Checkpoint model_at(int64_t step) const;
  // Removes the snapshots past `step` (a resumed run makes them again).
  void drop_snapshots_after(int64_t step) const;

  // Whether config.json and model.safetensors are there (a loadable run, without reading them).
  bool has_model() const;

  // The newest whole and valid checkpoint (a folder checkpoints/step-N with its three files,
  // each readable and of step N), if there is one. A folder named step-<digits> whose number is
  // out of range throws std::runtime_error naming it.
  std::optional<Checkpoint> latest_checkpoint() const;
  // What resume starts from (issue 34): latest_checkpoint(), and each newer checkpoint it passed
  // over is set aside as checkpoints/damaged-step-N (never pruned, never overwritten; the run's
  // top-level weights and config of that step are kept in it when its own are missing), with a
  // line to `log` saying which, why, and where it went.
  std::optional<Checkpoint> resume_checkpoint(const std::function<void(const std::string&)>& log) const;
  // Writes the checkpoint of `step` as one unit (issue 19): its folder is made under a temporary
  // name, `write_tensors` writes the weights and the optimizer state into the files it is given,
  // config_text goes beside them, and the folder is flushed and published by one rename; then the
  // top-level model.safetensors and config.json become its (refresh_view) and the newest
  // kKeptCheckpoints are kept. A step already published keeps its tensors and gets the new
  // config. A failure (a full disk) throws std::runtime_error naming the file and leaves the
  // previous checkpoint whole.
  void write_checkpoint(int64_t step, const std::string& config_text,
                        const std::function<void(const Checkpoint& staged)>& write_tensors) const;
  // Makes the top-level model.safetensors and config.json those of `checkpoint` (after a kill
  // between a checkpoint's publication and their update they are a step behind).
  void refresh_view(const Checkpoint& checkpoint) const;
  // Removes what a writer killed mid-write left: temporary files and unpublished checkpoint
  // folders. Call it holding the lock (RunLock).
  void remove_stale_temporaries() const;
  // Throws std::runtime_error naming the first of the folder's own entries (the files above,
  // checkpoints/ and what it holds) that is a symbolic link: writing through it would change a
  // file outside the folder.
  void check_no_links() const;

  // The one recipe for a copy of this run's model in a new folder `out_dir` (`hsm export`,
  // Model::save_as): written whole into a temporary sibling and published by one rename.
  // `write_weights` writes model.safetensors at the path it is given; the copy gets config_text
  // as its config.json, the run's task.json (a task run) or tokenizer.model, and its
  // metrics.jsonl. An existing `out_dir` is replaced whole (the callers check it may be).
  void publish_copy(const std::string& out_dir, const std::string& config_text,
                    const std::function<void(const std::string& weights)>& write_weights) const;
  // Throws std::invalid_argument when an export of this run may not replace `out_dir` (issue 46):
  // a link, a file, the run itself, a folder holding it or a training run's checkpoints; a folder
  // with files other than an earlier export's unless `force`.
  void check_export_target(const std::string& out_dir, bool force) const;
  // ---- Writing: what the one trainer of the folder (holding its lock) writes into it ----
  // The record files, one pair of calls per kind: start_X once when the run starts, then
  // append_X for each record. start: `kept` (a resumed run: its records up to the checkpoint,
  // one line each) becomes the file, which then goes on; none (a new run) starts it afresh:
  // emptied, or removed when not `recording` (then nothing is appended). An append writes the
  // line whole or not at all, never through a link, and holds a line a full disk refused, to
  // write it before the next (io/record_log.h); it returns "" when the file holds every record
  // so far, else why it is behind. Copies of a RunFolder share the files they started.
  void start_metrics(const std::optional<std::string>& kept);
  std::string append_metric(const MetricRecord& m);  // metrics.jsonl
  // At the run's end: writes the records held back; how many the file still lacks (held, or
  // given up when too many were held), 0 when it holds them all.
  size_t flush_metrics();
  void start_diagnoses(const std::optional<std::string>& kept, bool recording);
  std::string append_diagnosis(const std::string& json_line);  // diagnostics.jsonl (hsm/diagnostics_log.h)
  // traces.jsonl (hsm/formation.h): a resumed run's file was cut back by keep_log_records_to
  // and goes on as it is; a new run's starts afresh (emptied, or removed when not `recording`).
  void start_traces(bool resumed, bool recording);
  std::string append_trace(const std::string& json_line);
  // task.json of a task run ({"task": SPEC}), tokenizer.model of a corpus run; each written whole.
  void write_task(const std::string& task_spec) const;
  void write_tokenizer(const Tokenizer& tokenizer) const;
  // Removes what a failed start wrote: the whole folder when the run made it (made_here), else
  // the run's own files and checkpoints (what else the folder holds stays).
  void clear(bool made_here) const;

 private:
  std::shared_ptr<RecordLog> metrics_log_, diagnoses_log_, traces_log_;
};

// Thrown when another trainer holds the folder; the message names it and what to do.
struct RunBusy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One trainer per run folder (issue 19): an OS file lock on the folder's .lock, held while a run
// trains. The OS releases it when the process ends, however it ends (a kill -9 never leaves a
// stale lock), and it is taken without waiting: a second trainer, from the CLI or the studio, in
// this process or another, is refused at once with the holder's PID. Readers (eval, generate, the
// studio following a run) do not take it and are never blocked.
class RunLock {
 public:
  // Creates run_dir's .lock file (RunFolder::lock) if needed and locks it; throws RunBusy, or
  // std::runtime_error when the folder cannot hold the file (the message names the path and the reason).
  explicit RunLock(const std::string& run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// The run's task spec (Task::spec(), from task.json), "" for a corpus run.
std::string run_task(const std::string& run_dir);
// check_model_fits_task (hsm/tasks.h) for a trained run's model and its task.json, the error
// naming the file (issue 46: a task.json of a bigger vocabulary once ended in "index out of
// range in self"). Loading, scoring and exporting a task run ask it.
void check_run_fits_task(const std::string& run_dir, const ModelConfig& model, const Task& task);


// One line of metrics.jsonl and one callback to the studio.
struct MetricRecord {
  std::string kind;            // "train" (running loss) or "eval" (validation)
  int64_t step = 0;
  int64_t total_steps = 0;     // steps the run is set to reach (for progress and ETA)
  double epoch = 0;            // fractional: step / steps per epoch
  double train_loss = NAN;     // mean over the steps since the last record
  double val_loss = NAN;
  double val_accuracy = NAN;   // top-1 next-token accuracy (a task run: on its answers)
  // Task runs (hsm/tasks.h), at eval points: answer tokens exactly right, and examples whose
  // every answer is right.
  double answer_accuracy = NAN, sequence_accuracy = NAN;
  double tokens_per_s = NAN;
  double lr = NAN;
  double wall_s = 0;           // seconds of training so far (across resumes)
};

// What config.json says about a run. Throws std::runtime_error naming the file when the
// folder is not a run folder or config.json is broken.
struct RunInfo {
  std::string dir;
  ModelConfig model;
  TrainSettings training;
  std::string data_path;       // the corpus it was trained on ("" when not recorded)
  int64_t step = 0;            // optimizer steps of the last checkpoint
  int64_t total_steps = 0;     // steps the run was set to reach (0 when unknown)
  double wall_s = 0;           // training seconds up to the last checkpoint
  double val_loss = NAN, val_accuracy = NAN;  // the last validation before the checkpoint
};
RunInfo read_run_info(const std::string& run_dir);
// Whether dir holds a config.json of this format (cheap; reads the file).
bool is_run_folder(const std::string& dir);

// The training settings stored in a run folder's config.json (for --resume).
TrainSettings stored_settings(const std::string& run_dir);
// The corpus a run was trained on (config.json's data.path).
std::string stored_data_path(const std::string& run_dir);

// One line of metrics.jsonl <-> a record. Missing values read as NaN. parse throws
// std::invalid_argument, saying what is wrong, for a line that is not a metric record (not a
// JSON object, no "kind" text, a "step" that is not a whole number, a value that is not a number).
std::string metric_to_json_line(const MetricRecord& m);
MetricRecord metric_from_json_line(const std::string& line);

// Reads metrics.jsonl incrementally: each poll() returns the records appended since the
// last one. A half-written last line (a writer mid-flush) is left for the next poll; a file
// that shrank (a resumed run rewrote it) is read again from the start, with reset() true.
// Defensive, as the file may be damaged: a line that is no record, or longer than any record
// can be (kMaxLineBytes, finished or not), is skipped and named in problems(); every poll
// moves on, so a damaged file never makes a reader spin.
class MetricsReader {
 public:
  static constexpr uint64_t kMaxLineBytes = 64 * 1024;
  explicit MetricsReader(std::string run_dir);
  // Reads about max_bytes (whole lines; at least kMaxLineBytes) so a GUI can take a long
  // history in slices between event-loop turns; more() says whether some is left.
  std::vector<MetricRecord> poll(uint64_t max_bytes = UINT64_MAX);
  bool reset() const { return tail_.reset(); }  // the last poll() started over
  bool more() const { return tail_.more(); }  // the last poll() stopped before the end of the file
  // The lines the last poll() skipped, each "<path> line N: what is wrong (skipped)" (at most
  // 20; skipped() counts them all, since the start).
  const std::vector<std::string>& problems() const { return tail_.problems(); }
  int64_t skipped() const { return tail_.skipped(); }
  const std::string& path() const { return tail_.path(); }

 private:
  JsonlTail tail_;
};

// Every record of a run folder's metrics.jsonl (empty when there is none yet).
std::vector<MetricRecord> read_metrics(const std::string& run_dir);

// Models and training settings named where a run folder may be given as well as a preset or a
// config file (hsm/presets.h), and the bundled demo runs.
// The same for what load_preset_or_config accepts: a preset's, a config file's own "training"
// object, or a run folder's config.json's (the settings it was trained with); the paper's
// defaults where there is none. What `hsm train --preset/--config` start from.
TrainSettings preset_or_config_train_settings(const std::string& name_or_path);

// The run folders bundled in <resources>/models/ (the demo models), in the order of
// models/index.json when present, else by name; empty when none are installed.
std::vector<std::string> bundled_models();
// Whether dir is one of the bundled demo models (a folder under <resources>/models/).
bool is_bundled_model(const std::string& dir);

// The corpus a run is scored on when the user names none: the one it was trained on
// (config.json's data.path). A bundled model names the corpus of the machine that trained it;
// where that file is not on this machine, the starter corpus that ships beside it stands in
// (the same TinyStories), and `instead_of` names the missing file ("" when nothing stood in).
// Throws, as stored_data_path, for a run that records no corpus.
struct ScoringCorpus {
  std::string path;
  std::string instead_of;
};
ScoringCorpus scoring_corpus(const std::string& run_dir);
// The same for a corpus path already read from the run (RunInfo::data_path; "" stays "").
ScoringCorpus scoring_corpus(const std::string& run_dir, const std::string& recorded);

// A preset name, a path to a config JSON file, or a run folder (its model): what the CLI and
// the app accept.
ModelConfig load_preset_or_config(const std::string& name_or_path);


}  // namespace hsm
