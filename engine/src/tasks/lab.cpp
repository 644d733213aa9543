// The mixer lab (hsm/lab.h): a resumable grid of task runs.
#include "hsm/lab.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hsm/grid_workers.h"
#include "hsm/train_until_stopped.h"
#include "hsm/errors.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "hsm/trainer.h"
#include "io/io_util.h"

namespace fs = std::filesystem;

namespace hsm {

namespace {

nlohmann::json grid_json(const LabGrid& g) {
  return {{"tasks", g.tasks}, {"models", g.models}, {"lrs", g.lrs},   {"seeds", g.seeds},
          {"steps", g.steps}, {"batch", g.batch},   {"size", g.size}, {"test_examples", g.test_examples}};
}

LabGrid grid_from_json(const nlohmann::json& j) {
  LabGrid g;
  g.tasks = j.at("tasks").get<std::vector<std::string>>();
  g.models = j.at("models").get<std::vector<std::string>>();
  g.lrs = j.at("lrs").get<std::vector<double>>();
  g.seeds = j.at("seeds").get<int64_t>();
  g.steps = j.at("steps").get<int64_t>();
  g.batch = j.at("batch").get<int64_t>();
  g.size = j.at("size").get<std::string>();
  g.test_examples = j.at("test_examples").get<int64_t>();
  return g;
}

// A model's short name: the preset's, or a config file's stem.
std::string model_label(const std::string& model) {
  const fs::path p(model);
  return p.has_extension() ? p.stem().string() : p.filename().string();
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

std::string results_file(const std::string& dir) { return (fs::path(dir) / "results.jsonl").string(); }

// A run's identity in results.jsonl: its folder's name under runs/ (the grid's task, model,
// learning rate and seed), not the path the lab was reached by (--out ./lab after --out lab,
// a moved or copied lab).
std::string run_key(const std::string& run_dir) {
  return fs::path(run_dir).lexically_normal().filename().string();
}

}  // namespace

bool LabGrid::operator==(const LabGrid& o) const { return grid_json(*this) == grid_json(o); }

LabGrid default_lab_grid() {
  LabGrid g;
  // Difficulties a tiny model meets in a few hundred steps on a CPU; docs/lab.md gives the
  // papers' own and the commands for harder ones.
  g.tasks = {"mqar:vocab=128,pairs=8,context=64",
             "recall_at:vocab=64,context=64,min_distance=2,max_distance=63",
             "in_context_recall:vocab=16,context=64",
             "fuzzy_recall:vocab=16,context=64",
             "noisy_recall:vocab=32,context=64",
             "selective_copy:vocab=16,context=64,copy=8",
             "compress:vocab=16,context=33",
             "memorize:vocab=128,context=32"};
  g.models = {"gpt", "hsm_ab", "hybrid_0_6", "da_static_emb_qk", "ex_he"};
  // Sized for the issue's budget, under 15 minutes on two cores (docs/performance.md, "Tiny
  // models on synthetic tasks": 40 runs x 300 steps ≈ 1,300 CPU-seconds). One learning rate:
  // at this budget more steps tell the mixers apart better than a second rate does; --lr
  // repeated gives MAD's best-of-a-set protocol.
  g.lrs = {3e-3};
  g.seeds = 1;
  g.steps = 300;
  g.batch = 32;
  return g;
}

ModelConfig tiny_model(const ModelConfig& model) {
  constexpr int64_t kD = 64, kMaxLayers = 4;
  ModelConfig t = model;
  t.name = model.name + "_tiny";
  t.d_model = kD;
  t.dropout = 0;
  const auto n = static_cast<int64_t>(model.layers.size());
  t.layers.clear();
  const int64_t keep = std::min(n, kMaxLayers);
  int64_t narrowest = INT64_MAX;
  for (const LayerSpec& l : model.layers) narrowest = std::min(narrowest, std::max<int64_t>(1, l.ffn));
  for (int64_t i = 0; i < keep; ++i) {
    const int64_t from = keep == 1 ? 0 : (i * (n - 1) + (keep - 1) / 2) / (keep - 1);
    LayerSpec l = model.layers[static_cast<size_t>(from)];
    l.ffn = 4 * kD * l.ffn / narrowest;  // the narrowest FFN 4·d, a wider one in proportion
    while (l.heads > 1 && kD % l.heads != 0) --l.heads;
    t.layers.push_back(l);
  }
  t.description = "lab size (d 64, " + std::to_string(keep) + " layers) of " + model.name;
  return t;
}

Lab::Lab(std::string dir, LabGrid grid) : dir_(std::move(dir)), grid_(std::move(grid)) {
  if (grid_.tasks.empty() || grid_.models.empty() || grid_.lrs.empty())
    throw std::invalid_argument("a lab needs at least one task, one model and one learning rate");
  if (grid_.seeds < 1) throw std::invalid_argument("--seeds " + std::to_string(grid_.seeds) + ": use 1 or more");
  if (grid_.size != "tiny" && grid_.size != "as_is")
    throw std::invalid_argument("--size " + grid_.size + ": use tiny or as_is");
  refuse_repeats(grid_.tasks, "--task", [](const std::string& t) { return t; });
  refuse_repeats(grid_.models, "--model", [](const std::string& m) { return m; });
  refuse_repeats(grid_.lrs, "--lr", lr_text);
  for (const std::string& t : grid_.tasks) parse_task(t);  // a bad task is named before anything runs
  // Another kind of folder is not made a lab (its files would mix with the lab's).
  if (fs::exists(fs::path(dir_) / "sweep.json"))
    throw std::invalid_argument("'" + dir_ + "' holds a sweep (sweep.json), not a lab; give the lab a folder of its own");
  if (is_run_folder(dir_))
    throw std::invalid_argument("'" + dir_ + "' is a run folder, not a lab; give the lab a folder of its own");
  check_grid_folder(dir_, "lab");
  const fs::path file = fs::path(dir_) / "lab.json";
  if (fs::exists(file)) {
    if (!(stored_grid(dir_) == grid_))
      throw std::invalid_argument("'" + dir_ + "' holds another lab grid (lab.json); continue it with hsm lab --out " +
                                  dir_ + " alone, or give another --out");
    try {
      const auto j = nlohmann::json::parse(read_text_file(file.string(), "lab grid"));
      if (j.contains("model_configs"))
        for (const auto& [m, c] : j.at("model_configs").items()) model_snapshots_[m] = c.dump();
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(file.string() + " is damaged: " + json_error_text(e.what()));
    }
    for (const std::string& m : grid_.models) model_config(m);  // an old lab without snapshots: read now
    return;
  }
  // The snapshot (issue 46): each model's config as it is now, kept in lab.json.
  nlohmann::json configs = nlohmann::json::object();
  for (const std::string& m : grid_.models) {
    model_snapshots_[m] = to_json(load_preset_or_config(m), -1);
    configs[m] = nlohmann::json::parse(model_snapshots_[m]);
  }
  fs::create_directories(fs::path(dir_) / "runs");
  nlohmann::json j = grid_json(grid_);
  j["model_configs"] = configs;
  write_file_atomic(file.string(), j.dump(2) + "\n");
}

ModelConfig Lab::model_config(const std::string& model) const {
  const auto it = model_snapshots_.find(model);
  if (it == model_snapshots_.end()) return load_preset_or_config(model);
  return config_from_json(it->second, (fs::path(dir_) / "lab.json").string() + ": model " + model);
}

LabGrid Lab::stored_grid(const std::string& dir) {
  const std::string file = (fs::path(dir) / "lab.json").string();
  if (!fs::exists(file)) throw std::invalid_argument("'" + dir + "' is not a lab folder (no lab.json)");
  try {
    return grid_from_json(nlohmann::json::parse(read_text_file(file, "lab grid")));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file + " is damaged: " + json_error_text(e.what()));
  }
}

std::vector<LabRun> Lab::results(std::vector<std::string>* warnings) const {
  std::vector<LabRun> runs;
  const std::string file = results_file(dir_);
  if (!fs::exists(fs::symlink_status(file))) return runs;
  std::istringstream in(read_text_file(file, "lab results"));
  std::set<std::string> seen;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("answer_accuracy")) continue;  // a line a kill cut short
    LabRun r;
    try {
      // Each field checked for its type, so a refusal names the field, not the JSON library.
      auto field = [&](const char* key, bool (nlohmann::json::*is)() const, const char* what) -> const nlohmann::json* {
        if (!j.contains(key) || j[key].is_null()) return nullptr;
        if (!(j[key].*is)()) throw std::invalid_argument(std::string("\"") + key + "\" is not " + what);
        return &j[key];
      };
      auto text = [&](const char* key) {
        const auto* v = field(key, &nlohmann::json::is_string, "a text");
        return v ? v->get<std::string>() : std::string();
      };
      auto number = [&](const char* key, double fallback) {
        const auto* v = field(key, &nlohmann::json::is_number, "a number");
        return v ? v->get<double>() : fallback;
      };
      auto whole = [&](const char* key) {
        const auto* v = field(key, &nlohmann::json::is_number_integer, "a whole number");
        return v ? v->get<int64_t>() : int64_t{0};
      };
      r.task = text("task");
      r.model = text("model");
      r.run_dir = text("run_dir");
      r.lr = number("lr", 0.0);
      r.seed = whole("seed");
      r.steps = whole("steps");
      r.wall_s = number("wall_s", 0.0);
      if (!j["answer_accuracy"].is_number()) throw std::invalid_argument("\"answer_accuracy\" is not a number");
      r.score.answer_accuracy = number("answer_accuracy", NAN);
      r.score.sequence_accuracy = number("sequence_accuracy", NAN);
      r.score.loss = number("loss", NAN);
      r.score.examples = whole("examples");
      r.score.answers = whole("answers");
      if (const auto* by = field("by_distance", &nlohmann::json::is_object, "an object"))
        for (const auto& [d, c] : by->items()) {
          const bool digits = !d.empty() && d.size() < 18 && d.find_first_not_of("0123456789") == std::string::npos;
          if (!digits || !c.is_array() || c.size() != 2 || !c[0].is_number_integer() || !c[1].is_number_integer())
            throw std::invalid_argument("\"by_distance\" entry \"" + d + "\" is not a distance with two counts");
          r.score.by_difficulty[std::stoll(d)] = {c[0].get<int64_t>(), c[1].get<int64_t>()};
        }
    } catch (const std::exception& e) {
      // An ill-typed record (issue 46): skipped, named; the lab goes on (the run trains again).
      if (warnings)
        warnings->push_back(file + " line " + std::to_string(number) + ": not a lab result (" +
                            (dynamic_cast<const nlohmann::json::exception*>(&e) ? json_error_text(e.what())
                                                                               : std::string(e.what())) +
                            "); skipped");
      continue;
    }
    if (!seen.insert(run_key(r.run_dir)).second) continue;  // one run scored twice (a moved lab, before issue 46)
    runs.push_back(std::move(r));
  }
  return runs;
}

std::vector<Lab::PlannedRun> Lab::plan() const {
  std::vector<PlannedRun> runs;
  int64_t index = 0;
  for (size_t ti = 0; ti < grid_.tasks.size(); ++ti)
    for (size_t mi = 0; mi < grid_.models.size(); ++mi)
      for (double lr : grid_.lrs)
        for (int64_t seed = 1; seed <= grid_.seeds; ++seed) {
          const auto task = parse_task(grid_.tasks[ti]);
          const std::string name = "t" + std::to_string(ti) + "_" + task->name() + "__m" + std::to_string(mi) + "_" +
                                   model_label(grid_.models[mi]) + "__lr" + lr_text(lr) + "__s" + std::to_string(seed);
          runs.push_back({ti, mi, lr, seed, ++index, name});
        }
  return runs;
}

std::vector<std::string> Lab::unfinished() const {
  std::set<std::string> done;
  for (const LabRun& r : results()) done.insert(run_key(r.run_dir));
  std::vector<std::string> left;
  for (const PlannedRun& p : plan())
    if (!done.count(p.name)) left.push_back(p.name);
  return left;
}

void Lab::run(const std::function<void(const std::string&)>& on_log, const CancelFlag* cancel, int worker,
              int workers, int threads, const std::function<void(const std::string&, double)>& on_step) {
  auto log = [&](const std::string& l) {
    if (on_log) on_log(l);
  };
  check_grid_folder(dir_, "lab");
  std::vector<std::string> warnings;
  std::set<std::string> done;
  for (const LabRun& r : results(&warnings)) done.insert(run_key(r.run_dir));
  for (const std::string& w : warnings) log("warning: " + w);
  const std::vector<PlannedRun> planned = plan();
  const int64_t total = static_cast<int64_t>(planned.size());
  for (const PlannedRun& p : planned) {
    const int64_t index = p.index;
    if ((index - 1) % workers != worker) continue;
    const size_t ti = p.task;
    const double lr = p.lr;
    const int64_t seed = p.seed;
    const auto task = parse_task(grid_.tasks[ti]);
    const std::string& model = grid_.models[p.model];
    const std::string& name = p.name;
    const std::string run_dir = (fs::path(dir_) / "runs" / name).string();
    if (done.count(name)) continue;
    if (cancel && *cancel) return;
    check_grid_run_dir(run_dir);
    RunSpec spec;
    spec.run_dir = run_dir;
    spec.task = grid_.tasks[ti];
    spec.resume = is_run_folder(run_dir);
    if (!spec.resume) {
      std::error_code ec;
      fs::remove_all(run_dir, ec);  // a start killed before its first checkpoint
      ModelConfig m = model_config(model);
      if (grid_.size == "tiny") m = tiny_model(m);
      adopt_task_shape(m, *task);
      spec.model = m;
      TrainSettings& ts = spec.train;
      ts.steps = grid_.steps;
      ts.batch_size = grid_.batch;
      ts.lr = lr;
      ts.min_lr = lr / 10;
      ts.warmup_steps = grid_.steps / 10;
      ts.cosine = true;
      ts.weight_decay = 0.0;  // MAD's grid has 0 and 0.1; 0 at this budget
      ts.eval_every = std::max<int64_t>(50, grid_.steps / 6);
      ts.eval_batches = 4;
      ts.checkpoint_every = std::max<int64_t>(100, grid_.steps / 3);
      ts.log_every = 25;
      ts.seed = static_cast<uint64_t>(seed);
      ts.device = "cpu";
      ts.probe_text.clear();
    } else {
      spec.train = stored_settings(run_dir);
      log("continuing " + name);
    }
    const auto t0 = std::chrono::steady_clock::now();
    spec.threads = threads > 0 ? threads : 1;  // tiny models: one thread (docs/performance.md)
    TrainCallbacks callbacks;
    if (on_step)
      callbacks.on_progress = [&on_step, &name](const std::string& stage, double f) {
        if (stage == "training") on_step(name, f);
      };
    if (on_step) on_step(name, 0.0);
    Trainer trainer(spec, callbacks);
    const TrainSummary s = train_until_stopped(trainer, cancel);
    if (s.stopped) return;
    const TaskScore score = score_task_run(run_dir, grid_.test_examples, "cpu");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::json j = {{"task", grid_.tasks[ti]}, {"model", model}, {"lr", lr}, {"seed", seed},
                        {"run_dir", run_dir},      {"steps", s.steps}, {"wall_s", s.wall_s},
                        {"answer_accuracy", score.answer_accuracy},
                        {"sequence_accuracy", score.sequence_accuracy},
                        {"loss", score.loss},      {"examples", score.examples}, {"answers", score.answers}};
    if (!score.by_difficulty.empty()) {
      nlohmann::json by = nlohmann::json::object();
      for (const auto& [d, c] : score.by_difficulty) by[std::to_string(d)] = {c.first, c.second};
      j["by_distance"] = by;
    }
    // One write(2) with O_APPEND (workers' lines never interleave), never through a link.
    append_file_no_follow(results_file(dir_), j.dump() + "\n");
    char line[256];
    std::snprintf(line, sizeof line, "[%lld/%lld] %s: answer accuracy %.3f, sequence accuracy %.3f (%.1f s)",
                  static_cast<long long>(index), static_cast<long long>(total), name.c_str(),
                  score.answer_accuracy, score.sequence_accuracy, secs);
    log(line);
  }
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

}  // namespace hsm
