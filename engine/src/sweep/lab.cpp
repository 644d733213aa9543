// The mixer lab (hsm/lab.h): a grid of task runs whose axes are task x model x learning rate x
// seed, its table of best learning rates, and the conversion of an older hsm's lab folder.
#include "hsm/lab.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hsm/errors.h"
#include "hsm/files.h"
#include "hsm/grid_workers.h"
#include "hsm/presets.h"
#include "hsm/tasks.h"

namespace fs = std::filesystem;

namespace hsm {

namespace {

using ojson = nlohmann::ordered_json;

nlohmann::json grid_json(const LabGrid& g) {
  return {{"tasks", g.tasks}, {"models", g.models}, {"lrs", g.lrs},   {"seeds", g.seeds},
          {"steps", g.steps}, {"batch", g.batch},   {"size", g.size}, {"test_examples", g.test_examples},
          {"device", g.device}};
}

// Exact (issue 46): 0.003 and 0.0030000001 never share a run folder.
std::string lr_text(double lr) { return exact_number_text(lr); }

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A list given with one value twice would train one run folder from two workers at once and
// count it twice in a cell: refused, naming the option and the value.
template <typename T, typename Text>
void refuse_repeats(const std::vector<T>& values, const std::string& option, Text text) {
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (values[i] == values[k])
        throw std::invalid_argument(option + " " + text(values[i]) + " is given twice; give each value once");
}

void check_grid(const LabGrid& g) {
  if (g.tasks.empty() || g.models.empty() || g.lrs.empty())
    throw std::invalid_argument("a lab needs at least one task, one model and one learning rate");
  if (g.seeds < 1) throw std::invalid_argument("--seeds " + std::to_string(g.seeds) + ": use 1 or more");
  if (!is_model_size(g.size)) throw std::invalid_argument("--size " + g.size + ": use lab, tiny or as_is");
  refuse_repeats(g.tasks, "--task", [](const std::string& t) { return t; });
  refuse_repeats(g.models, "--model", [](const std::string& m) { return m; });
  refuse_repeats(g.lrs, "--lr", lr_text);
  for (const std::string& t : g.tasks) parse_task(t);  // a bad task is named before anything runs
}

}  // namespace

bool LabGrid::operator==(const LabGrid& o) const { return grid_json(*this) == grid_json(o); }

LabGrid default_lab_grid() {
  LabGrid g;
  // The grid that answers the lab's first question within 15 minutes on two cores (docs/lab.md,
  // "The default lab"): associative recall, where attention finds a key anywhere in the context
  // and a 4-layer hsm_ab reaches 15 positions back; recall at a distance, whose by-distance
  // scores show that reach; MAD's in-context recall. The other tasks and the harder settings
  // are a --task away.
  g.tasks = {"mqar:vocab=128,pairs=8,context=64",
             "recall_at:vocab=64,context=64,min_distance=2,max_distance=63",
             "in_context_recall:vocab=16,context=64"};
  g.models = {"gpt", "hsm_ab", "hybrid_0_6"};
  // Attention leaves MQAR's plateau only at batch 128, after about 40,000 examples (docs/lab.md,
  // "The learning check"); 600 steps of 128 take it to 0.96 at lab size. Two seeds so that a
  // cell is a mean and a spread, not one seed's luck; one learning rate: a second costs as much
  // as the seeds (--lr repeated gives MAD's best-of-a-set).
  g.lrs = {3e-3};
  g.seeds = 2;
  g.steps = 600;
  g.batch = 128;
  return g;
}

std::vector<std::string> lab_task_choices() {
  std::vector<std::string> tasks = default_lab_grid().tasks;
  for (const char* t : {"fuzzy_recall:vocab=16,context=64", "noisy_recall:vocab=32,context=64",
                        "selective_copy:vocab=16,context=64,copy=8", "compress:vocab=16,context=33",
                        "memorize:vocab=128,context=32", "parity", "permutation"})
    tasks.emplace_back(t);
  return tasks;
}

int64_t lab_run_count(const LabGrid& g) {
  return static_cast<int64_t>(g.tasks.size() * g.models.size() * g.lrs.size()) * g.seeds;
}

std::string lab_spec_json(const LabGrid& g) {
  std::vector<int64_t> seeds;
  for (int64_t s = 1; s <= g.seeds; ++s) seeds.push_back(s);
  ojson axes = ojson::object();
  axes["task"] = g.tasks;
  axes["model"] = g.models;
  axes["train.lr"] = g.lrs;
  axes["seed"] = seeds;
  ojson train = ojson::object();
  train["steps"] = g.steps;
  train["batch_size"] = g.batch;
  train["warmup_steps"] = g.steps / 10;
  train["cosine"] = true;
  train["weight_decay"] = 0.0;  // MAD's grid has 0 and 0.1; 0 at this budget
  train["eval_every"] = std::max<int64_t>(50, g.steps / 6);
  train["eval_batches"] = 4;
  train["checkpoint_every"] = std::max<int64_t>(100, g.steps / 3);
  train["log_every"] = 25;
  train["device"] = g.device;
  train["probe_text"] = "";
  ojson spec = ojson::object();
  spec["name"] = "lab";
  spec["axes"] = axes;
  spec["train"] = train;
  spec["size"] = g.size;
  spec["test_examples"] = g.test_examples;
  spec["min_lr_fraction"] = 0.1;
  return spec.dump();
}

namespace {

// The lab a grid spec describes, or a refusal naming the folder when it is a sweep's.
LabGrid grid_of(const std::string& dir, const Sweep& sweep) {
  const nlohmann::json spec = nlohmann::json::parse(sweep.spec_json);
  const nlohmann::json axes = spec.value("axes", nlohmann::json::object());
  const bool lab = axes.is_object() && axes.size() == 4 && axes.contains("task") && axes.contains("model") &&
                   axes.contains("train.lr") && axes.contains("seed") && spec.contains("test_examples");
  if (!lab)
    throw std::invalid_argument("'" + dir + "' holds a sweep, not a lab (its axes are not task, model, train.lr, "
                                "seed); see it with hsm sweep table " + dir);
  LabGrid g;
  g.tasks = axes["task"].get<std::vector<std::string>>();
  g.models = axes["model"].get<std::vector<std::string>>();
  g.lrs = axes["train.lr"].get<std::vector<double>>();
  g.seeds = static_cast<int64_t>(axes["seed"].size());
  const nlohmann::json train = spec.value("train", nlohmann::json::object());
  g.steps = train.value("steps", g.steps);
  g.batch = train.value("batch_size", g.batch);
  g.device = train.value("device", g.device);
  g.size = sweep.size;
  g.test_examples = sweep.test_examples;
  return g;
}

}  // namespace

Lab::Lab(std::string dir, LabGrid grid) : dir_(std::move(dir)), grid_(std::move(grid)) {
  check_grid(grid_);
  if (fs::exists(fs::path(dir_) / "sweep.json")) {
    if (!(stored_grid(dir_) == grid_))
      throw std::invalid_argument("'" + dir_ + "' holds another lab grid (sweep.json); continue it with hsm lab --out " +
                                  dir_ + " alone, or give another --out");
    sweep_ = load_sweep(dir_);
    return;
  }
  sweep_ = open_sweep_folder(dir_, parse_sweep_spec(lab_spec_json(grid_)));
}

LabGrid Lab::stored_grid(const std::string& dir) { return grid_of(dir, load_sweep(dir)); }

std::vector<LabRun> Lab::results(std::vector<std::string>* warnings) const {
  std::vector<LabRun> runs;
  for (const SweepPoint& p : sweep_.points) {
    const PointState s = read_point_state(dir_, p, warnings);
    if (s.state != "done" || !s.scored) continue;
    LabRun r;
    r.task = p.task;
    r.model = p.model_source;
    r.run_dir = sweep_run_dir(dir_, p);
    r.lr = p.train.lr;
    r.seed = static_cast<int64_t>(p.train.seed);
    r.steps = p.train.steps;
    r.wall_s = s.wall_s;
    r.score = s.score;
    runs.push_back(std::move(r));
  }
  return runs;
}

std::vector<std::string> Lab::unfinished() const {
  std::vector<std::string> left;
  for (const SweepPoint& p : sweep_.points) {
    const PointState s = read_point_state(dir_, p);
    if (s.state != "done" || !s.scored) left.push_back(p.name);
  }
  return left;
}

std::vector<LabCell> Lab::table(std::vector<std::string>* warnings) const {
  const std::vector<LabRun> runs = results(warnings);
  std::vector<LabCell> cells;
  for (const std::string& task : grid_.tasks)
    for (const std::string& model : grid_.models) {
      LabCell c;
      c.task = task;
      c.model = model;
      c.expected_runs = static_cast<int64_t>(grid_.lrs.size()) * grid_.seeds;
      double best = -1;
      for (double lr : grid_.lrs) {
        std::vector<double> acc;
        double seq = 0;
        for (const LabRun& r : runs)
          if (r.task == task && r.model == model && r.lr == lr) {
            acc.push_back(r.score.answer_accuracy);
            seq += r.score.sequence_accuracy;
            ++c.runs;
          }
        if (acc.empty()) continue;
        double mean = 0;
        for (double a : acc) mean += a;
        mean /= static_cast<double>(acc.size());
        if (mean > best) {
          best = mean;
          c.best_lr = lr;
          c.answer_accuracy = mean;
          c.sequence_accuracy = seq / static_cast<double>(acc.size());
          c.seed_accuracy = acc;
        }
      }
      cells.push_back(std::move(c));
    }
  return cells;
}

void Lab::write_table_csv(const std::string& csv) const {
  write_file_atomic((fs::path(dir_) / "table.csv").string(), csv);
}

std::string Lab::table_csv(const std::vector<LabCell>& cells) {
  std::ostringstream out;
  out << "task,model,best_lr,answer_accuracy,sequence_accuracy,seed_accuracies,runs\n";
  auto quoted = [](const std::string& s) { return "\"" + s + "\""; };
  for (const LabCell& c : cells) {
    std::string seeds;
    for (double a : c.seed_accuracy) seeds += (seeds.empty() ? "" : " ") + number_text(a);
    out << quoted(c.task) << "," << quoted(c.model) << "," << (c.runs > 0 ? lr_text(c.best_lr) : "") << ","
        << (std::isfinite(c.answer_accuracy) ? number_text(c.answer_accuracy) : "") << ","
        << (std::isfinite(c.sequence_accuracy) ? number_text(c.sequence_accuracy) : "") << "," << seeds << "," << c.runs
        << "\n";
  }
  return out.str();
}

// ---- An older hsm's lab folder (lab.json, results.jsonl), converted once.

namespace {

// A model's short name as the older lab spelled it in its folder names.
std::string old_model_label(const std::string& model) {
  const fs::path p(model);
  return p.has_extension() ? p.stem().string() : p.filename().string();
}

// The older lab's scores, by run folder name; a line cut short or ill-typed is skipped.
std::map<std::string, TaskScore> old_results(const std::string& dir, const std::function<void(const std::string&)>& report) {
  std::map<std::string, TaskScore> scores;
  const std::string file = (fs::path(dir) / "results.jsonl").string();
  if (!fs::exists(fs::symlink_status(file))) return scores;
  std::istringstream in(read_text_file(file, "lab results"));
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("run_dir") || !j["run_dir"].is_string() || !j.contains("answer_accuracy") ||
        !j["answer_accuracy"].is_number()) {
      if (report && !line.empty()) report(file + " line " + std::to_string(number) + ": not a lab result; skipped");
      continue;
    }
    TaskScore s;
    auto number_of = [&](const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN; };
    auto whole_of = [&](const char* key) {
      return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : int64_t{0};
    };
    s.answer_accuracy = number_of("answer_accuracy");
    s.sequence_accuracy = number_of("sequence_accuracy");
    s.loss = number_of("loss");
    s.examples = whole_of("examples");
    s.answers = whole_of("answers");
    if (j.contains("by_distance") && j["by_distance"].is_object())
      for (const auto& [d, c] : j["by_distance"].items())
        if (!d.empty() && d.size() < 18 && d.find_first_not_of("0123456789") == std::string::npos && c.is_array() &&
            c.size() == 2 && c[0].is_number_integer() && c[1].is_number_integer())
          s.by_difficulty[std::stoll(d)] = {c[0].get<int64_t>(), c[1].get<int64_t>()};
    scores.emplace(fs::path(j["run_dir"].get<std::string>()).lexically_normal().filename().string(), s);
  }
  return scores;
}

}  // namespace

void convert_old_lab(const std::string& dir, const std::function<void(const std::string&)>& report) {
  const fs::path root(dir);
  const std::string lab_file = (root / "lab.json").string();
  if (!fs::exists(lab_file)) throw std::invalid_argument("'" + dir + "' holds no lab of an older hsm (no lab.json)");
  if (fs::exists(root / "sweep.json"))
    throw std::invalid_argument("'" + dir + "' is converted already (it holds sweep.json); hsm lab --out " + dir +
                                " continues it");
  check_grid_folder(dir, "lab");
  LabGrid g;
  std::map<std::string, std::string> snapshots;
  try {
    const auto j = nlohmann::json::parse(read_text_file(lab_file, "lab grid"));
    g.tasks = j.at("tasks").get<std::vector<std::string>>();
    g.models = j.at("models").get<std::vector<std::string>>();
    g.lrs = j.at("lrs").get<std::vector<double>>();
    g.seeds = j.at("seeds").get<int64_t>();
    g.steps = j.at("steps").get<int64_t>();
    g.batch = j.at("batch").get<int64_t>();
    g.size = j.at("size").get<std::string>();
    g.test_examples = j.at("test_examples").get<int64_t>();
    g.device = "cpu";  // an older lab trained every run on the CPU
    if (j.contains("model_configs"))
      for (const auto& [m, c] : j.at("model_configs").items()) snapshots[m] = c.dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(lab_file + " is damaged: " + json_error_text(e.what()));
  }
  check_grid(g);
  const Sweep sweep = parse_sweep_spec(lab_spec_json(g), ".", "", "", snapshots);
  const std::map<std::string, TaskScore> scores = old_results(dir, report);
  // Each point's older folder name (t0_mqar__m1_hsm_ab__lr0.003__s1); every new name checked
  // free before anything moves.
  std::vector<std::pair<const SweepPoint*, std::string>> moves;
  for (const SweepPoint& p : sweep.points) {
    const size_t ti = std::find(g.tasks.begin(), g.tasks.end(), p.task) - g.tasks.begin();
    const size_t mi = std::find(g.models.begin(), g.models.end(), p.model_source) - g.models.begin();
    const std::string old = "t" + std::to_string(ti) + "_" + parse_task(p.task)->name() + "__m" + std::to_string(mi) +
                            "_" + old_model_label(p.model_source) + "__lr" + lr_text(p.train.lr) + "__s" +
                            std::to_string(p.train.seed);
    if (old != p.name && fs::exists(fs::symlink_status(root / "runs" / p.name)))
      throw std::invalid_argument("'" + (root / "runs" / p.name).string() + "' exists already; move it away to convert");
    if (fs::exists(fs::symlink_status(root / "points" / (p.name + ".json"))))
      throw std::invalid_argument("'" + (root / "points" / (p.name + ".json")).string() +
                                  "' exists already; move it away to convert");
    moves.emplace_back(&p, old);
  }
  fs::create_directories(root / "points");
  for (const auto& [p, old] : moves) {
    const fs::path from = root / "runs" / old, to = root / "runs" / p->name;
    if (fs::exists(fs::symlink_status(from)) && from != to) {
      check_grid_run_dir(from.string());
      fs::rename(from, to);
      if (report) report("runs/" + old + " -> runs/" + p->name);
    }
    const auto scored = scores.find(old);
    if (scored == scores.end()) continue;  // not scored: the point trains (or resumes) when the lab continues
    PointState s;
    s.state = "done";
    s.scored = true;
    s.score = scored->second;
    write_point_state(dir, *p, s);
  }
  // Last: until sweep.json is written the folder is still the older lab (lab.json alone).
  write_sweep_manifest(dir, sweep);
}

}  // namespace hsm
