#pragma once
// The mixer lab (issues 38, 47; docs/lab.md): a grid of runs (hsm/sweep.h) whose axes are
// synthetic tasks x models x learning rates x seeds, each run scored on fresh test examples; per
// cell (task, model) the best learning rate by the mean over seeds, as MAD does. `hsm lab` is the
// grid's friendly front: LabGrid holds its options, lab_spec_json() makes the grid spec from them,
// and a lab folder is a grid folder like any other (sweep.json, runs/, points/), trained by the
// one launcher and its workers, so a killed lab continues where it stopped. Plain C++.
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/lab_stats.h"
#include "hsm/sweep.h"
#include "hsm/task_run.h"

namespace hsm {

struct LabGrid {
  std::vector<std::string> tasks;   // task specs (hsm/tasks.h)
  std::vector<std::string> models;  // preset names or config files
  std::vector<double> lrs;
  // Weight decays as an axis (train.weight_decay; MAD's {0, 0.1}); empty: none, every run at 0.
  std::vector<double> weight_decays;
  int64_t seeds = 1;                // training seeds 1..seeds (the data seed is the task's)
  int64_t steps = 300, batch = 32;
  std::string size = "lab";         // "lab" / "tiny": model_at_size() of each; "as_is": the model as given
  int64_t test_examples = 1280;
  std::string device = "cpu";       // where every run trains and is scored
  double stop_accuracy = 0;         // a run ends, done, at the first validation this accurate (0: off)
  // A run ends, done, when its validation loss fell by less than stop_stall_gain over the last
  // stop_stall_steps steps (train.stop_stall_steps; 0: off): it has stopped learning.
  int64_t stop_stall_steps = 0;
  double stop_stall_gain = 0.03;
  std::string protocol;             // a named protocol's grid ("zoology"), "" for any other; kept as the spec's name
  bool operator==(const LabGrid& o) const;
};

// MQAR at context 64 and 16, in_context_recall x gpt_2layer (a lab model: Zoology's 2-layer
// attention), hsm_ab, hybrid_0_6 at lab size; learning rates 0.003 and 0.01 (the best counts), two
// seeds, up to 2,000 steps of 128 (warm-up 200, cosine over the 2,000) with an early stop at 0.99
// and the stall stop (1,000 steps, 0.03: a run whose validation loss fell less than 3 % over its
// last 1,000 steps is done; docs/lab.md, "The stall stop"). Its time on two cores: docs/lab.md,
// "The default lab".
LabGrid default_lab_grid();
// ---- Lab models (issue 68; docs/lab.md, "Lab models"): a preset changed the way a cited paper's
// model differs from it, named for the lab and resolved by name in a lab's model axis (before the
// presets; the grid keeps its config in sweep.json like any model's). Not presets: the presets are
// the HSM paper's configurations. "gpt_2layer": gpt's attention at 2 layers, Zoology's MQAR model
// (Arora et al. 2023), which the default lab trains in gpt's place.
std::vector<std::string> lab_model_names();
// Each lab model's config (JSON), by name.
std::map<std::string, std::string> lab_model_configs();

// Every task at the difficulty the lab offers it (the default grid's first): what a form lists
// for the user to tick.
std::vector<std::string> lab_task_choices();

// The runs of a lab: tasks x models x learning rates x weight decays x seeds (the one place this
// is written).
int64_t lab_run_count(const LabGrid& grid);
// The optimiser settings a cell chooses its best among: learning rates x weight decays (MAD's
// "best run counts"; the at-chance test's Bonferroni k).
size_t lab_optimiser_settings(const LabGrid& grid);

// The grid spec of a lab (hsm/sweep.h): axes task, model, train.lr, train.weight_decay (when the
// grid has weight decays) and seed; its models at lab
// size (or as they are); each run's learning rate decaying to a tenth; scored on test_examples.
std::string lab_spec_json(const LabGrid& grid);

// ---- Named protocols (docs/lab.md, "Protocols"): a published grid as a lab.

// The protocols `hsm lab --protocol` knows: "zoology", "mad", "state" (state tracking: parity, S5, A5).
std::vector<std::string> lab_protocols();

struct LabProtocol {
  LabGrid grid;  // its models are config files under DIR/models/
  // Each model's config file (absolute path) -> its JSON, written by write_protocol_models.
  std::map<std::string, std::string> model_files;
  std::string summary;  // one line: what it is and after whom
};
// The protocol `name` for a lab in `dir` (its models' files under dir/models/, absolute paths).
// Throws std::invalid_argument for an unknown name, listing the known ones.
LabProtocol lab_protocol(const std::string& name, const std::string& dir);
// Writes the protocol's model files (dir/models/) whole; a file there already with the same text
// is kept, one with other text is refused, naming it (never overwritten).
void write_protocol_models(const LabProtocol& protocol);
// What write_protocol_models refuses, nothing written (`hsm lab --protocol P --dry-run`).
void check_protocol_models(const LabProtocol& protocol);

// ---- What a lab costs, before it runs.

struct LabEstimate {
  int64_t runs = 0;
  double cpu_s = 0;        // every run at its full steps (early stopping can only shorten it)
  double longest_run_s = 0;
  std::string longest_run; // its point's name
};
// Estimated CPU time of the grid's points from their multiply-adds (hsm/cost.h): per training
// token 3 x the forward MACs (forward and backward; the output layer on the task's answer rows
// only), plus the validations and the test scoring (forward only), at kLabCpuMacsPerSecond
// per core, plus kLabRunFixedSeconds per run (docs/lab.md, "What a lab costs").
LabEstimate estimate_lab(const Sweep& sweep);
inline constexpr double kLabCpuMacsPerSecond = 1e10;
inline constexpr double kLabRunFixedSeconds = 3;
// The parsed grid of a lab, nothing written: for --dry-run and the estimate. model_files: the
// models' configs by file (a protocol's, not yet written), else each file is read.
Sweep lab_sweep(const LabGrid& grid, const std::map<std::string, std::string>& model_files = {});

struct LabRun {
  std::string task, model, run_dir;
  double lr = 0, weight_decay = 0;
  int64_t seed = 0, steps = 0;
  double wall_s = 0;
  TaskScore score;  // on fresh test examples
  // How its training ended (hsm/lab_stats.h), read from its validations in runs/NAME/metrics.jsonl
  // ("unknown" when the folder holds none).
  RunConvergence convergence;
};

// A cell of the table (task x model) and the protocol's verdict on it (docs/lab.md, "The
// protocol"; the tests are hsm/lab_stats.h's).
struct LabCell {
  std::string task, model;
  // The learning rate and weight decay whose mean answer accuracy over seeds is highest (the first
  // in the grid's order on a tie): MAD's best over lr x weight decay.
  double best_lr = 0, best_weight_decay = 0;
  double answer_accuracy = NAN, sequence_accuracy = NAN;  // mean over seeds at the best setting
  std::vector<double> seed_accuracy;                      // answer accuracy per seed at the best setting
  double answer_sd = NAN;      // sample standard deviation of seed_accuracy (n - 1); NaN for one seed
  int64_t n = 0;               // seeds scored at best_lr
  int64_t right = 0, answers = 0;  // the test answers at best_lr, pooled over its seeds
  double chance = NAN;         // the task's chance rate, 1 / its answer tokens (Task::chance)
  // One-sided exact binomial test of right of answers against chance: at_chance when its p-value
  // is at least kChanceAlpha / (the grid's optimiser settings, lab_optimiser_settings).
  double p_above_chance = NAN;
  bool at_chance = false;
  bool best = false;           // the highest mean of its task's row (the first on a tie)
  // The test of "the row's best > this cell": Welch's t-test over seeds when both have two or more,
  // else the two-proportion z-test on pooled answers; tied_with_best when its p-value is at least
  // kTieAlpha (the best cell itself: true, p 1).
  std::string tie_test;        // "welch", "two_proportion", "" (no test: the best, or no runs)
  double p_below_best = NAN;
  bool tied_with_best = false;
  // Not converged (issue 68; docs/lab.md, "Not converged"): a run at the best setting ended by the
  // stall rule on a plateau, or ran all its steps with its accuracy still rising. Such a cell
  // answers no capability question (neither "can" nor "cannot"), whatever its other marks.
  bool not_converged = false;
  std::vector<std::string> not_converged_evidence;  // one line per such run: "seed 1: stopped by ..."
  int64_t runs = 0;                                       // finished runs of the cell (all lrs)
  int64_t expected_runs = 0;                              // the grid's runs of the cell (lrs x wds x seeds)
  bool finished() const { return runs >= expected_runs; }
};

// How a run's training ended, from the validations of its RUN/metrics.jsonl and the settings it
// trained under (hsm/lab_stats.h); "unknown" when it has none or they cannot be read (a lab
// shipped without its runs' records).
RunConvergence read_run_convergence(const std::string& run_dir, const TrainSettings& train);
// The same as one JSON object's text (state, last_step, last_accuracy, last_slope, evidence): what
// a scored point's "finished" event carries (hsm/grid_workers.h), so that the studio keeps a lab's
// cells from the events without reading the run's files.
std::string run_convergence_json(const RunConvergence& convergence);

// The table of `runs` (a cell per task x model in the grid's order, the best setting of each and
// the protocol's marks): what Lab::table() gives from results(), here from runs held already (the
// studio's, kept from the workers' events), reading no file.
std::vector<LabCell> lab_cells(const LabGrid& grid, const std::vector<LabRun>& runs);

// What Lab's constructor refuses, nothing written (`hsm lab --dry-run` refuses what the real
// command refuses, issue 65): the grid's values; an --out that is not a folder (a file, /dev/full)
// or cannot be made; a folder holding an older lab, a run, another grid, or runs/ or points/ that
// are links. Throws std::invalid_argument naming the folder.
void check_lab_folder(const std::string& dir, const LabGrid& grid);

class Lab {
 public:
  // Opens dir as a lab (its grid folder created if missing). A folder holding another grid is
  // refused (std::invalid_argument naming the folder); give the grid it holds, or another
  // folder. So is a grid with a value twice (--lr 0.003 twice), a run's folder, a lab of an older
  // hsm (naming `hsm lab convert DIR`), and a folder whose runs/ is a link. A new lab keeps each
  // model's config in sweep.json (a snapshot taken once): editing a config file later changes
  // no run of the lab.
  Lab(std::string dir, LabGrid grid);
  // The lab a grid folder holds; throws when it holds none (a sweep's grid is not a lab's).
  static LabGrid stored_grid(const std::string& dir);

  // The scored runs, each once, in the grid's order. A point state whose score is ill-typed is
  // skipped; warnings (not null) gets a line naming its file.
  std::vector<LabRun> results(std::vector<std::string>* warnings = nullptr) const;
  // Per task and model: the best learning rate and its accuracies (lab_cells of results()).
  std::vector<LabCell> table(std::vector<std::string>* warnings = nullptr) const;
  // The scored run a worker's "finished" event reports (one JSON object, hsm/grid_workers.h: a
  // scored point's event carries its score, wall time and convergence), equal to what results()
  // reads of it from the folder; nullopt for an event of no scored run of this lab (stopped,
  // failed, a point of another grid, an event without its score). Reads no file.
  std::optional<LabRun> run_of_event(const std::string& event_json) const;
  // The grid's runs (their folder names under runs/) not scored yet.
  std::vector<std::string> unfinished() const;
  static std::string table_csv(const std::vector<LabCell>& cells);
  // Writes dir/table.csv whole (a temporary renamed over it): a link there is replaced, never
  // written through.
  void write_table_csv(const std::string& csv) const;

  const LabGrid& grid() const { return grid_; }
  const std::string& dir() const { return dir_; }
  const Sweep& sweep() const { return sweep_; }

 private:
  std::string dir_;
  LabGrid grid_;
  Sweep sweep_;
};

// Converts, in place, a lab folder an older hsm made (lab.json, results.jsonl, runs/ named
// t0_mqar__m1_hsm_ab__lr0.003__s1) to a grid folder: sweep.json from its grid and its model
// snapshots, each run folder renamed to its point's name, each scored run's score kept in its
// point's state. lab.json and results.jsonl are left as they are. Refuses (naming it) a folder
// holding no such lab, one already converted, and a point's name already taken. report: a line
// per run moved.
void convert_old_lab(const std::string& dir, const std::function<void(const std::string&)>& report = {});

}  // namespace hsm
