// A lab's cells kept from its workers' events (issue 66, the studio's LabState): a real small lab
// trained point by point in this process, each "finished" event turned into its run
// (hsm::Lab::run_of_event) and the cells made from the runs held (hsm::lab_cells), checked after
// every run against what Lab::table() and Lab::results() read from the folder.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hsm/lab.h"
#include "hsm/lab_report.h"
#include "hsm/sweep.h"
#include "training_test_util.h"

using namespace hsm;

namespace {

bool same_number(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_same_run(const LabRun& a, const LabRun& b) {
  SCOPED_TRACE(b.run_dir);
  EXPECT_EQ(a.task, b.task);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.run_dir, b.run_dir);
  EXPECT_EQ(a.lr, b.lr);
  EXPECT_EQ(a.weight_decay, b.weight_decay);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.wall_s, b.wall_s);
  EXPECT_TRUE(same_number(a.score.answer_accuracy, b.score.answer_accuracy));
  EXPECT_TRUE(same_number(a.score.sequence_accuracy, b.score.sequence_accuracy));
  EXPECT_TRUE(same_number(a.score.loss, b.score.loss));
  EXPECT_EQ(a.score.answers, b.score.answers);
  EXPECT_EQ(a.score.examples, b.score.examples);
  EXPECT_EQ(a.score.by_difficulty, b.score.by_difficulty);
  EXPECT_EQ(a.convergence.state, b.convergence.state);
  EXPECT_EQ(a.convergence.last_step, b.convergence.last_step);
  EXPECT_TRUE(same_number(a.convergence.last_accuracy, b.convergence.last_accuracy));
  EXPECT_TRUE(same_number(a.convergence.last_slope, b.convergence.last_slope));
  EXPECT_EQ(a.convergence.evidence, b.convergence.evidence);
}

// Every field of a cell (the CSV writes each, numbers in their exact shortest text) and the
// ones it leaves out.
void expect_same_cells(const std::vector<LabCell>& a, const std::vector<LabCell>& b) {
  EXPECT_EQ(Lab::table_csv(a), Lab::table_csv(b));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].expected_runs, b[i].expected_runs);
    EXPECT_EQ(a[i].seed_accuracy, b[i].seed_accuracy);
    EXPECT_EQ(a[i].not_converged_evidence, b[i].not_converged_evidence);
  }
}

void expect_same_panels(const std::vector<LabDistancePanel>& a, const std::vector<LabDistancePanel>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].series.size(), b[i].series.size());
    for (size_t m = 0; m < a[i].series.size(); ++m) EXPECT_EQ(a[i].series[m].counts, b[i].series[m].counts);
  }
}

}  // namespace

TEST(LabCells, TheCellsKeptFromTheWorkersEventsAreTheTableReadFromTheFolder) {
  const std::string dir = test::temp_dir("lab_cells") + "/lab";
  LabGrid grid = default_lab_grid();
  grid.tasks = {"mqar:vocab=32,pairs=2,context=16", "recall_at:vocab=32,context=16,max_distance=15"};
  grid.models = {"gpt", "hsm_ab"};
  grid.lrs = {0.001, 0.01};
  grid.weight_decays = {};
  grid.seeds = 2;
  grid.size = "tiny";
  grid.steps = 60;  // validations at 50 and 60: a convergence to read
  grid.batch = 4;
  grid.test_examples = 64;
  grid.stop_accuracy = 0;
  grid.stop_stall_steps = 0;
  const Lab lab(dir, grid);
  ASSERT_EQ(lab.sweep().points.size(), 16u);

  std::vector<LabRun> held;  // what the studio keeps: a run per scored event, in the grid's order
  size_t with_distances = 0;
  for (const SweepPoint& p : lab.sweep().points) {
    std::vector<std::string> events;
    ASSERT_EQ(run_sweep_point(dir, p.index, 1, nullptr, {}, [&](const std::string& e) { events.push_back(e); }), "done");
    ASSERT_FALSE(events.empty());
    const std::string& finished = events.back();
    const nlohmann::json e = nlohmann::json::parse(finished);
    ASSERT_EQ(e.value("event", ""), "finished") << finished;
    EXPECT_LT(finished.size() + 64, 4096u) << "one write(2) under PIPE_BUF";
    // The event's own run is read from it alone, and is what the folder says of it.
    const std::optional<LabRun> run = lab.run_of_event(finished);
    ASSERT_TRUE(run.has_value()) << finished;
    if (!run->score.by_difficulty.empty()) ++with_distances;
    held.push_back(*run);
    const std::vector<LabRun> read = lab.results();
    ASSERT_EQ(read.size(), held.size());
    expect_same_run(*run, read.back());
    // The cells of the runs held are the table the folder gives, after every run.
    const std::vector<LabCell> cells = lab_cells(grid, held);
    expect_same_cells(cells, lab.table());
    expect_same_panels(lab_distance_panels(lab, cells, held), lab_distance_panels(lab, lab.table(), read));
  }
  EXPECT_EQ(with_distances, held.size()) << "mqar's and recall_at's answers carry their distance";
  for (const LabRun& r : held) EXPECT_NE(r.convergence.state, "unknown") << r.run_dir;

  // An event of no scored run of this lab is none: a done point asked again (not trained, no
  // score), another lab's point of the same index, a stopped or failed one, an ill-typed score.
  std::vector<std::string> again;
  ASSERT_EQ(run_sweep_point(dir, 0, 1, nullptr, {}, [&](const std::string& x) { again.push_back(x); }), "done");
  EXPECT_FALSE(lab.run_of_event(again.back()).has_value()) << again.back();
  LabGrid one = grid;
  one.tasks = {grid.tasks[0]};
  one.models = {"hsm_ab"};
  one.lrs = {0.01};
  one.seeds = 1;
  one.steps = 3;
  const std::string dir2 = test::temp_dir("lab_cells_other") + "/lab";
  const Lab other(dir2, one);
  std::vector<std::string> events;
  ASSERT_EQ(run_sweep_point(dir2, 0, 1, nullptr, {}, [&](const std::string& x) { events.push_back(x); }), "done");
  nlohmann::json good = nlohmann::json::parse(events.back());
  ASSERT_TRUE(other.run_of_event(good.dump()).has_value());
  EXPECT_FALSE(lab.run_of_event(good.dump()).has_value()) << "another lab's point 0 has another name";
  good["name"] = lab.sweep().points[0].name;
  EXPECT_TRUE(lab.run_of_event(good.dump()).has_value());
  for (const char* state : {"stopped", "failed"}) {
    nlohmann::json e = good;
    e["state"] = state;
    EXPECT_FALSE(lab.run_of_event(e.dump()).has_value()) << state;
  }
  nlohmann::json e = good;
  e.erase("score");
  EXPECT_FALSE(lab.run_of_event(e.dump()).has_value());
  e = good;
  e["score"]["answers"] = "many";
  EXPECT_FALSE(lab.run_of_event(e.dump()).has_value());
  e = good;
  e["point"] = "0";
  EXPECT_FALSE(lab.run_of_event(e.dump()).has_value());
  EXPECT_FALSE(lab.run_of_event("not json").has_value());
}
