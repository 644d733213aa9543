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
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/sweep.h"
#include "hsm/task_run.h"

namespace hsm {

struct LabGrid {
  std::vector<std::string> tasks;   // task specs (hsm/tasks.h)
  std::vector<std::string> models;  // preset names or config files
  std::vector<double> lrs;
  int64_t seeds = 1;                // training seeds 1..seeds (the data seed is the task's)
  int64_t steps = 300, batch = 32;
  std::string size = "lab";         // "lab" / "tiny": model_at_size() of each; "as_is": the model as given
  int64_t test_examples = 1280;
  std::string device = "cpu";       // where every run trains and is scored
  bool operator==(const LabGrid& o) const;
};

// MQAR, recall_at and in_context_recall at context 64 x gpt, hsm_ab, hybrid_0_6 at lab size;
// one learning rate (0.003), two seeds, 600 steps of 128: the 15 minutes on two cores.
LabGrid default_lab_grid();
// Every task at the difficulty the lab offers it (the default grid's first): what a form lists
// for the user to tick.
std::vector<std::string> lab_task_choices();

// The runs of a lab: tasks x models x learning rates x seeds (the one place this is written).
int64_t lab_run_count(const LabGrid& grid);

// The grid spec of a lab (hsm/sweep.h): axes task, model, train.lr and seed; its models at lab
// size (or as they are); each run's learning rate decaying to a tenth; scored on test_examples.
std::string lab_spec_json(const LabGrid& grid);

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
  // Per task and model: the best learning rate and its accuracies.
  std::vector<LabCell> table(std::vector<std::string>* warnings = nullptr) const;
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
