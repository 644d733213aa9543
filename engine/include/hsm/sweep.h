#pragma once
// Grids of runs (issues 39, 47; docs/sweeps.md): one spec, many runs, whether a sweep or a lab
// (hsm/lab.h: a grid whose axes are task x model x learning rate x seed). A spec names a base
// model (a preset or a config file) or a model axis, the data (a corpus or a synthetic task, or
// a task axis), training settings by their names in hsm/settings.h, and axes (model fields by
// path, a placement pattern, training settings, seeds) whose product, or an explicit list of
// points, is the set of runs. A grid lives in a folder: sweep.json (the manifest: the spec and
// every point with its run folder and the settings that differ), runs/<point>/ (an ordinary run
// folder each) and points/<point>.json (the point's state: running, done, stopped or failed
// with its error; a scored task point's score) beside points/<point>.log. Every point is
// checked (the model built from it validated, its settings in range) before any run starts.
// One launcher (run_sweep_local), one worker (`hsm sweep run DIR --point K`), one stop signal
// (SIGTERM; SIGINT and SIGHUP do the same). Plain C++.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hsm/config.h"
#include "hsm/run_folder.h"
#include "hsm/task_run.h"

namespace hsm {

struct SweepPoint {
  int64_t index = 0;
  std::string name;  // the run folder's name under runs/: the settings that differ ("mixer0=hsm_ab,seed=2")
  // The settings that differ between points, axis path -> value as compact JSON ("\"hsm_ab\"", "0.003").
  std::vector<std::pair<std::string, std::string>> settings;
  ModelConfig model;
  TrainSettings train;
  std::string task;   // the point's task spec ("" on a corpus)
  std::string model_source;  // its model axis' value (a preset or a config file), "" for the base
};

struct SweepResources {  // what one point asks of a Slurm node (the array job's #SBATCH lines)
  int64_t cpus = 2, gpus = 0, mem_gb = 4;
  std::string time = "04:00:00", partition;
};

struct Sweep {
  std::string name;
  std::string spec_json;   // the spec as stored in the manifest (paths made absolute)
  std::string data, task;  // a corpus path, or a task spec (hsm/tasks.h)
  // The base config file as read once, when the sweep started (issue 46): the manifest keeps it
  // and every point trains from it, whatever the file holds later. Empty for a preset.
  std::string base_config_json;
  // A model axis' configs as read once, when the grid started: value -> config JSON.
  std::map<std::string, std::string> model_configs;
  std::string size = "as_is";  // "lab" / "tiny": every model at that size (model_at_size)
  int64_t test_examples = 0;   // > 0: a task point is scored on this many fresh examples once trained
  double min_lr_fraction = -1;  // >= 0: each point's min_lr is its lr times this (a lab's lr / 10)
  SweepResources resources;
  std::vector<SweepPoint> points;
};

// A preset at lab size: d_model 64, at most 4 of its layers (its first and last, and evenly
// between: a hybrid keeps its pattern), FFN 4·d (a wider layer keeps its ratio), dropout 0.
ModelConfig tiny_model(const ModelConfig& model);
// "lab": tiny_model with one head per layer and no MLP (FFN 1), the default lab's models.
ModelConfig lab_model(const ModelConfig& model);
bool is_model_size(const std::string& size);  // lab, tiny or as_is
ModelConfig model_at_size(const ModelConfig& model, const std::string& size);

// Parses and checks a spec (JSON text). Relative paths (data, base config) are taken from
// base_dir first, then from the working directory. data_override (not empty) replaces the
// spec's data. Throws std::invalid_argument with one line naming the field, or the axis and
// value, and what to use: an unknown field, an unknown axis path, an empty axis, a point whose
// model or settings are out of range, a model that does not fit the task, a name or a Slurm
// resource with text Slurm does not accept (a newline, a quote, a shell metacharacter).
// base_config_json (not empty): the base config's snapshot, used instead of reading its file;
// model_configs: the model axis' snapshots, likewise.
Sweep parse_sweep_spec(const std::string& json_text, const std::string& base_dir = ".",
                       const std::string& data_override = "", const std::string& base_config_json = "",
                       const std::map<std::string, std::string>& model_configs = {});
// The same for a spec file (a regular file of bounded size), its paths taken from beside it.
Sweep parse_sweep_spec_file(const std::string& path, const std::string& data_override = "");

// Creates dir/sweep.json for `sweep` (with the snapshots of its configs), or checks that dir
// already holds this grid (a folder holding another one, a run, an older hsm's lab (lab.json
// alone: refused naming `hsm lab convert DIR`), or whose runs/ is a link is refused, naming it).
// Returns the sweep as stored.
Sweep open_sweep_folder(const std::string& dir, const Sweep& sweep);
// Writes dir/sweep.json (with runs/ and points/) for `sweep` whole: open_sweep_folder's last
// step, and `hsm lab convert`'s.
void write_sweep_manifest(const std::string& dir, const Sweep& sweep);
// The grid a folder holds (its manifest); throws naming the folder when it holds none (and the
// command that converts it when it holds an older hsm's lab).
Sweep load_sweep(const std::string& dir);

std::string sweep_run_dir(const std::string& dir, const SweepPoint& p);

// The state of a point as its state file says (and whether the process it names still runs):
// "pending" (never started), "running", "done", "stopped" (interrupted: resumes from its
// checkpoint), "failed" (error holds the message).
struct PointState {
  std::string state = "pending";
  std::string error;
  int64_t pid = 0;
  bool scored = false;  // a scored task point's score (state "done")
  TaskScore score;
  double wall_s = 0;    // training and scoring, this point's last process
};
// warnings (not null): a line naming the file for a score that is not one (the point is then
// "stopped": scored again).
PointState read_point_state(const std::string& dir, const SweepPoint& p, std::vector<std::string>* warnings = nullptr);
void write_point_state(const std::string& dir, const SweepPoint& p, const PointState& s);
// A score as its state file holds it, one JSON object's text ({"answer_accuracy": X, ...,
// "by_distance": {"3": [right, answers]}}), and back (std::invalid_argument naming the ill-typed
// field): what a worker's "finished" event carries of a scored point (hsm/grid_workers.h).
std::string task_score_json(const TaskScore& score);
TaskScore parse_task_score_json(const std::string& json_text);

// Trains point `index` of the sweep in dir in this process (what `hsm sweep run DIR --point K`
// and each Slurm array task do): resumes its run folder from its checkpoint when it has one,
// scores it when the grid asks (test_examples), records the state (failed: with the error,
// which it also rethrows). threads > 0: LibTorch threads. stop: polled; when it turns true the
// run stops at a step with a checkpoint ("stopped"). on_event: the point's progress events,
// each a JSON object on one line (grid_workers.h: "started", "step", "finished"). Returns the
// state it ended in.
std::string run_sweep_point(const std::string& dir, int64_t index, int threads, const std::atomic<bool>* stop,
                            const std::function<void(const std::string&)>& on_log = {},
                            const std::function<void(const std::string&)>& on_event = {});

// Runs every point not done, `jobs` at a time, each a child process (`hsm sweep run DIR --point
// K --threads T`, T = the cores / jobs) that ends with this launcher (PR_SET_PDEATHSIG) and
// gets its SIGINT/SIGTERM forwarded (then it stops at a step with a checkpoint). A failed point
// is recorded and the others go on. Returns 0 when every point is done, 130 when stopped by a
// signal, 1 when some point failed. exe: the hsm executable. events: the workers' progress
// events go to this process's standard output (grid_workers.h), after a "grid" event that says
// how many points there are and how many are done.
int run_sweep_local(const std::string& dir, int jobs, const std::string& exe,
                    const std::function<void(const std::string&)>& report, bool events = false);

// The Slurm array job of the sweep in dir (one array task per point). Every value in it was
// checked against what Slurm accepts (parse_sweep_spec); the folder and the program are shell
// quoted, never pasted as shell text, so a quote or a newline in a path neither breaks nor
// injects.
std::string sweep_sbatch_script(const std::string& dir, const std::string& exe);
// Writes it to dir/sweep.sbatch (executable) whole: a link there is replaced, never followed.
// Returns the script's path.
std::string write_sweep_sbatch(const std::string& dir, const std::string& exe);

struct SweepRow {
  std::string run;  // the point's name
  std::vector<std::pair<std::string, std::string>> settings;
  int64_t params = 0, macs_per_token = 0;
  double final_val_loss = NAN, best_val_loss = NAN;
  double final_accuracy = NAN, best_accuracy = NAN;  // next-token accuracy, or a task run's answer accuracy
  double tokens_per_s = NAN, wall_s = NAN;
  int64_t step = 0, total_steps = 0;
  std::string state, error;
};
std::vector<SweepRow> sweep_table(const std::string& dir);
// The same for run folders not trained as one sweep (the studio's open runs as one experiment):
// each run's model and training settings as axis paths ("model.layers.0.mixer", "train.lr"),
// of which `settings` keeps those that differ between the runs; a field of the layers that
// differs in more than two layers, or between runs of different depths, is one setting
// ("model.layers.mixer": "hsm_ab, attn×5, hsm_ab"), and the description is left out (issue 48:
// the bundled models gave ~45 columns); the state is "done" when the
// run reached its steps, else "stopped". Throws naming a folder that is not a run folder.
std::vector<SweepRow> runs_table(const std::vector<std::string>& run_dirs);

// Rows grouped by every setting but `setting` (e.g. "seed"): mean, sample standard deviation
// (n - 1; 0 for one row) and n of each metric over the rows with a value.
struct SweepStat {
  double mean = NAN, std = NAN;
  int64_t n = 0;
};
struct SweepGroup {
  std::vector<std::pair<std::string, std::string>> settings;  // without `setting`
  std::vector<std::string> runs;
  SweepStat final_val_loss, best_val_loss, final_accuracy, best_accuracy, tokens_per_s, wall_s;
};
std::vector<SweepGroup> group_sweep_rows(const std::vector<SweepRow>& rows, const std::string& setting);

}  // namespace hsm
