#pragma once
// The mixer lab (issue 38; docs/lab.md): a grid of synthetic tasks x models, each cell trained
// at a small set of learning rates and seeds and scored on fresh test examples; per cell the
// best learning rate (by the mean over seeds), as MAD does. A lab lives in a folder: lab.json
// (the grid), runs/ (one run folder per task, model, learning rate and seed) and results.jsonl
// (one line per finished run), so a killed lab continues where it stopped. Plain C++.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/progress.h"
#include "hsm/task_run.h"

namespace hsm {

struct LabGrid {
  std::vector<std::string> tasks;   // task specs (hsm/tasks.h)
  std::vector<std::string> models;  // preset names or config files
  std::vector<double> lrs;
  int64_t seeds = 1;                // training seeds 1..seeds (the data seed is the task's)
  int64_t steps = 300, batch = 32;
  std::string size = "tiny";        // "tiny": tiny_model() of each; "as_is": the model as given
  int64_t test_examples = 1280;
  bool operator==(const LabGrid& o) const;
};

// Every task at its lab difficulty x gpt, hsm_ab, hybrid_0_6, da_static_emb_qk, ex_he; one
// learning rate (0.003), one seed, 300 steps of 32: the 15 minutes on two cores.
LabGrid default_lab_grid();

// A preset at lab size: d_model 64, at most 4 of its layers (its first and last, and evenly
// between: a hybrid keeps its pattern), FFN 4·d (a wider layer keeps its ratio), dropout 0.
ModelConfig tiny_model(const ModelConfig& model);

struct LabRun {
  std::string task, model, run_dir;
  double lr = 0;
  int64_t seed = 0, steps = 0;
  double wall_s = 0;
  TaskScore score;  // on fresh test examples
};

struct LabCell {
  std::string task, model;
  double best_lr = 0;
  double answer_accuracy = NAN, sequence_accuracy = NAN;  // mean over seeds at best_lr
  std::vector<double> seed_accuracy;                      // answer accuracy per seed at best_lr
  int64_t runs = 0;                                       // finished runs of the cell (all lrs)
  int64_t expected_runs = 0;                              // the grid's runs of the cell (lrs x seeds)
  bool finished() const { return runs >= expected_runs; }
};

class Lab {
 public:
  // Opens dir (created if missing). A folder holding another grid is refused (TaskError-like
  // std::invalid_argument naming the folder); give the grid it holds, or another folder. So is a
  // grid with a value twice (--lr 0.003 twice), a sweep's or a run's folder, and a folder whose
  // runs/ is a link. A new lab keeps each model's config in lab.json (a snapshot taken once):
  // editing a config file later changes no run of the lab.
  Lab(std::string dir, LabGrid grid);
  // The grid a lab folder holds; throws when it holds none.
  static LabGrid stored_grid(const std::string& dir);

  // Trains and scores every run not yet in results.jsonl, in order; a run killed half-way
  // resumes from its last checkpoint. on_log: one line at a time; cancel: stops between steps
  // (the run keeps its checkpoint; the next run() continues it). worker / workers: this
  // process takes runs worker, worker + workers, ... of the grid (several processes share a lab,
  // one per core: tiny models leave a second core idle otherwise; docs/performance.md);
  // threads: LibTorch's and OpenBLAS's threads per run (0: one; OpenBLAS waking its threads costs a
  // tiny model more than its arithmetic, docs/performance.md).
  // on_step: the run in training (its folder name under runs/) and how far it is, 0..1, after
  // each step, so a caller can show progress inside a run as well as between runs.
  void run(const std::function<void(const std::string&)>& on_log = {}, const CancelFlag* cancel = nullptr,
           int worker = 0, int workers = 1, int threads = 0,
           const std::function<void(const std::string& run, double fraction)>& on_step = {});

  // The finished runs, each once (keyed by its run folder's name, not the lab's path). A line
  // that is not a whole record (cut short by a kill, ill-typed) is skipped; warnings (not null)
  // gets a line naming the file and the line number for each ill-typed one.
  std::vector<LabRun> results(std::vector<std::string>* warnings = nullptr) const;
  // Per task and model: the best learning rate and its accuracies.
  std::vector<LabCell> table(std::vector<std::string>* warnings = nullptr) const;
  // The grid's runs (their folder names under runs/) not in results.jsonl yet.
  std::vector<std::string> unfinished() const;
  static std::string table_csv(const std::vector<LabCell>& cells);
  // Writes dir/table.csv whole (a temporary renamed over it): a link there is replaced, never
  // written through.
  void write_table_csv(const std::string& csv) const;

  const LabGrid& grid() const { return grid_; }
  const std::string& dir() const { return dir_; }

 private:
  struct PlannedRun {
    size_t task, model;
    double lr;
    int64_t seed, index;
    std::string name;  // the run folder's name under runs/
  };
  std::vector<PlannedRun> plan() const;
  ModelConfig model_config(const std::string& model) const;

  std::string dir_;
  LabGrid grid_;
  std::map<std::string, std::string> model_snapshots_;  // model -> its config JSON, from lab.json
};

}  // namespace hsm
