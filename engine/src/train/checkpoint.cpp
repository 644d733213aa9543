#include "train/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "hsm/safetensors.h"
#include "hsm/params.h"
#include "hsm/task_run.h"
#include "hsm/tasks.h"
#include "io/io_util.h"
#include "model/weights_io.h"
#include "tasks/task_data.h"

namespace fs = std::filesystem;

namespace hsm {

namespace {

constexpr const char* kStepPrefix = "step-";

std::string step_dir_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%012lld", kStepPrefix, static_cast<long long>(step));
  return buf;
}

// The step of a published checkpoint folder's name, or -1 (a temporary, or another entry). A
// step-<digits> name whose number this program never writes (more than 18 digits) is named in
// the error rather than read as a number (issue 34: "stoll").
int64_t step_of(const fs::path& entry) {
  const std::string name = entry.filename().string();
  if (name.rfind(kStepPrefix, 0) != 0 || name.size() == 5) return -1;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return -1;
  if (name.size() > 5 + 18)
    throw std::runtime_error("'" + entry.string() + "' is not a checkpoint this program wrote (its step number has " +
                             std::to_string(name.size() - 5) + " digits): move it out of checkpoints/");
  return std::stoll(name.substr(5));
}

Checkpoint checkpoint_at(const std::string& dir, int64_t step) {
  Checkpoint c;
  c.step = step;
  c.dir = dir;
  c.weights = (fs::path(dir) / "model.safetensors").string();
  c.optimizer = (fs::path(dir) / "optimizer.safetensors").string();
  c.config = (fs::path(dir) / "config.json").string();
  return c;
}

// Published checkpoints, newest first.
std::vector<Checkpoint> published_checkpoints(const std::string& checkpoints_dir) {
  std::vector<Checkpoint> all;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir, ec)) {
    const int64_t step = step_of(entry.path());
    if (step >= 0 && entry.is_directory()) all.push_back(checkpoint_at(entry.path().string(), step));
  }
  std::sort(all.begin(), all.end(), [](const Checkpoint& a, const Checkpoint& b) { return a.step > b.step; });
  return all;
}

// Replaces `to` by a hard link to `from` (a copy where the file system has no hard links),
// through a temporary name and one rename.
void replace_with_link(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(from, tmp, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec) throw std::runtime_error("cannot write '" + tmp + "': " + ec.message());
  }
  fs::rename(tmp, to, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + to + "': " + ec.message());
  }
}

}  // namespace

namespace {

// Why a published checkpoint cannot be resumed from, or "" when it is whole and valid: its
// three files present, their headers readable, and each of step N. Only headers are read.
std::string checkpoint_problem(const Checkpoint& c) {
  for (const std::string& f : {c.weights, c.optimizer, c.config})
    if (!fs::exists(f)) return fs::path(f).filename().string() + " is missing";
  try {
    const nlohmann::json j = parse_run_config(read_text_file(c.config, "checkpoint config"), c.config);
    const int64_t step = j.value("state", nlohmann::json::object()).value("step", int64_t{-1});
    if (step != c.step) return "config.json is of step " + std::to_string(step);
    read_safetensors_header(c.weights);
    const SafetensorsFile opt = read_safetensors_header(c.optimizer);
    const auto it = opt.metadata.find("step");
    if (it == opt.metadata.end() || it->second != std::to_string(c.step))
      return "optimizer.safetensors is not of step " + std::to_string(c.step);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

std::optional<Checkpoint> latest_checkpoint(const std::string& run_dir) {
  for (const Checkpoint& c : published_checkpoints(RunPaths(run_dir).checkpoints))
    if (checkpoint_problem(c).empty()) return c;
  return std::nullopt;
}

std::optional<Checkpoint> resume_checkpoint(const std::string& run_dir,
                                            const std::function<void(const std::string&)>& log) {
  const RunPaths paths(run_dir);
  std::optional<int64_t> top_step;
  try {
    top_step = read_run_config(run_dir).value("state", nlohmann::json::object()).value("step", int64_t{-1});
  } catch (const std::exception&) {
  }
  for (const Checkpoint& c : published_checkpoints(paths.checkpoints)) {
    const std::string problem = checkpoint_problem(c);
    if (problem.empty()) return c;
    // Set aside, not removed: it may hold the only copy of the newest weights, which training
    // again to its step would otherwise replace (or prune).
    const std::string aside = (fs::path(paths.checkpoints) / ("damaged-" + fs::path(c.dir).filename().string())).string();
    std::error_code ec;
    fs::remove_all(aside, ec);
    fs::rename(c.dir, aside, ec);
    if (ec)
      throw std::runtime_error("checkpoint '" + c.dir + "' cannot be resumed from (" + problem +
                               ") and cannot be set aside: " + ec.message());
    std::string kept;
    if (top_step && *top_step == c.step)  // the top-level files are this step's: keep what it lacks
      for (const auto& [from, name] : {std::pair{paths.weights, "model.safetensors"}, {paths.config, "config.json"}}) {
        const fs::path to = fs::path(aside) / name;
        if (fs::exists(to) || !fs::exists(from)) continue;
        fs::copy_file(from, to, ec);
        if (!ec) kept += std::string(kept.empty() ? "" : ", ") + "the run's " + name;
      }
    log("checkpoint step " + std::to_string(c.step) + " passed over: " + problem + "; set aside as " + aside +
        (kept.empty() ? "" : " (with " + kept + " of that step)"));
  }
  return std::nullopt;
}

void write_checkpoint(const RunPaths& paths, int64_t step, Gpt& model, const AdamW& optimizer,
                      const std::string& config_text) {
  fs::create_directories(paths.checkpoints);
  const std::string final_dir = (fs::path(paths.checkpoints) / step_dir_name(step)).string();
  const std::string tmp_dir = final_dir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp_dir, ec);
  if (fs::exists(final_dir)) {
    // This step is published already (a stop right after a periodic checkpoint, or a resume
    // that ran the validation a stop interrupted): it holds the same weights and moments; its
    // record is rewritten (the same step, the newer curve points), then the top-level view.
    write_file_atomic(checkpoint_at(final_dir, step).config, config_text);
  } else {
    try {
      fs::create_directories(tmp_dir);
      const Checkpoint c = checkpoint_at(tmp_dir, step);
      save_weights(model, c.weights);
      save_optimizer(optimizer, c.optimizer);
      write_file_atomic(c.config, config_text);
      publish_folder(tmp_dir, final_dir);  // the commit point: before it the checkpoint does not exist
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(tmp_dir, ignored);
      throw;
    }
  }
  refresh_run_view(paths, checkpoint_at(final_dir, step));
  const std::vector<Checkpoint> all = published_checkpoints(paths.checkpoints);
  for (size_t i = kKeptCheckpoints; i < all.size(); ++i) fs::remove_all(all[i].dir, ec);
  // A run written before step folders kept its optimizer at the top: it is stale now.
  fs::remove(paths.optimizer, ec);
}

void refresh_run_view(const RunPaths& paths, const Checkpoint& checkpoint) {
  replace_with_link(checkpoint.weights, paths.weights);
  write_file_atomic(paths.config, read_text_file(checkpoint.config, "checkpoint config"));
  sync_dir(paths.dir);
}

void remove_stale_temporaries(const std::string& run_dir) {
  const RunPaths paths(run_dir);
  check_no_links(paths);  // never remove entries of a folder the run's checkpoints/ links to
  remove_dead_temporaries(paths.dir);  // a killed writer's tokenizer.model.<n>.tmp.<pid>
  std::error_code ec;
  for (const std::string& dir : {paths.dir, paths.checkpoints})
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) fs::remove_all(entry.path(), ec);
    }
}

void save_optimizer(const AdamW& optimizer, const std::string& path) {
  std::vector<TensorBlob> blobs;
  for (const auto& [name, t] : optimizer.state()) blobs.push_back(to_blob(name, t));
  write_safetensors(path, blobs, {{"format", kCheckpointFormat}, {"step", std::to_string(optimizer.steps())}});
}

void load_optimizer(AdamW& optimizer, const std::string& path, int64_t expected_step) {
  const SafetensorsFile file = read_safetensors(path);
  auto it = file.metadata.find("step");
  if (it == file.metadata.end()) throw std::runtime_error(path + ": no optimizer step in the metadata");
  const int64_t step = std::stoll(it->second);
  if (step != expected_step)
    throw std::runtime_error(path + ": optimizer is at step " + std::to_string(step) + " but config.json says " +
                             std::to_string(expected_step) + " (an interrupted checkpoint write?)");
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& b : file.tensors) state.emplace_back(b.name, from_blob(b));
  optimizer.load_state(state, step);
}

namespace {

// What an export writes into its folder (besides nothing): an earlier export holds these only.
bool is_export_file(const std::string& name) {
  return name == "model.safetensors" || name == "config.json" || name == "tokenizer.model" ||
         name == "metrics.jsonl" || name == "task.json";
}

// An earlier export (what `hsm export` wrote, which it may replace): a config.json with an
// "export" record, and nothing but regular files an export writes. Throws nothing.
bool is_earlier_export(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_export_file(name) || !fs::is_regular_file(fs::symlink_status(entry.path(), ec))) return false;
  }
  if (ec) return false;
  try {
    const auto j = nlohmann::json::parse(read_text_file((fs::path(dir) / "config.json").string(), "export config"),
                                         nullptr, false);
    return j.is_object() && j.contains("export") && j["export"].is_object();
  } catch (const std::exception&) {
    return false;
  }
}

// Why `out` is never replaced by an export, even with --force (issue 46), or "": it is or holds
// the run being exported, or a training run's checkpoints (its only copy of the weights and
// the optimizer state). The folder is walked without following links, up to a bound.
std::string never_replaced(const std::string& out, const std::string& run_dir) {
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(fs::absolute(out), ec), r = fs::weakly_canonical(fs::absolute(run_dir), ec);
  const auto [mismatch, rest] = std::mismatch(o.begin(), o.end(), r.begin(), r.end());
  (void)rest;
  if (mismatch == o.end()) return "it is or holds the run being exported ('" + run_dir + "')";
  constexpr int kMaxEntries = 100000;
  int seen = 0;
  for (fs::recursive_directory_iterator it(out, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (++seen > kMaxEntries)
      return "it holds more than " + std::to_string(kMaxEntries) + " entries, too many to check that none is a run's";
    const std::string name = it->path().filename().string();
    std::error_code st;
    const bool dir = fs::is_directory(fs::symlink_status(it->path(), st));
    if ((name == "checkpoints" && dir) || name == "optimizer.safetensors")
      return "it holds a training run's checkpoints or optimizer state ('" + it->path().string() + "')";
  }
  if (ec) return "it cannot be read whole (" + ec.message() + ")";
  return {};
}

// Throws std::invalid_argument when the export may not be published at `out_dir` (issue 46: an
// export once replaced any folder holding a config.json, a run and its checkpoints included).
void check_export_target(const std::string& run_dir, const std::string& out_dir, bool force) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out_dir, ec);
  if (!fs::exists(st)) return;  // a new folder
  const std::string at = "export to '" + out_dir + "': ";
  if (fs::is_symlink(st))
    throw std::invalid_argument(at + "it is a symbolic link (an export never writes through one): choose another --out");
  if (!fs::is_directory(st))
    throw std::invalid_argument(at + "it exists and is not a folder: choose another --out");
  if (fs::equivalent(run_dir, out_dir, ec))
    throw std::invalid_argument("export into the run folder itself: choose another --out");
  if (fs::is_empty(out_dir, ec) || is_earlier_export(out_dir)) return;  // nothing of anyone else's is replaced
  const std::string why = never_replaced(out_dir, run_dir);
  if (!why.empty()) throw std::invalid_argument(at + "the folder is never replaced, even with --force: " + why);
  if (!force)
    throw std::invalid_argument(at + "the folder exists and holds files that are not an earlier export; an export "
                                "replaces its folder whole, so it would delete them: choose a new --out, or give "
                                "--force to replace that folder and everything in it");
}

}  // namespace

void export_run(const std::string& run_dir, const std::string& out_dir, const ExportOptions& options) {
  const torch::ScalarType target = scalar_type(options.dtype);
  const RunPaths from(run_dir);
  const std::string weights = options.best && fs::exists(from.best) ? from.best : from.weights;
  nlohmann::json config = read_run_config(run_dir);  // checks it is a run folder
  std::error_code ec;
  check_export_target(run_dir, out_dir, options.force);
  // A task run has its task (task.json) and no tokenizer: the export carries what it has.
  const std::string task = run_task(run_dir);
  const bool task_run = !task.empty();
  // The source loads as every other command loads it, or nothing is exported (issue 34).
  const ModelConfig model_config = config_from_json(config["model"].dump(), from.config);
  if (task_run)
    check_run_fits_task(run_dir, model_config, *parse_task(task));
  else
    load_run_tokenizer(run_dir, config);  // the export carries the model's own tokenizer, or none
  check_weights_fit(model_config, weights, from.config);
  {
    Gpt model(model_config);
    load_weights(model, weights);  // shapes, names, finite values
  }
  SafetensorsFile file = read_safetensors(weights);
  std::vector<TensorBlob> blobs;
  for (const TensorBlob& b : file.tensors) {
    if (b.dtype == "I64") {  // token ids stay integers
      blobs.push_back(b);
      continue;
    }
    auto t = from_blob(b).to(target).contiguous();
    if (!torch::isfinite(t).all().item<bool>())
      throw std::runtime_error(weights + ": tensor '" + b.name + "' does not fit in " + options.dtype +
                               " (values beyond its range): export as F32 (--dtype F32)");
    TensorBlob out;
    out.name = b.name;
    out.dtype = options.dtype;
    out.shape = b.shape;
    out.data.assign(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
    blobs.push_back(std::move(out));
  }
  file.metadata["exported_from"] = fs::path(weights).filename().string();
  config["export"] = {{"dtype", options.dtype}, {"weights", fs::path(weights).filename().string()}};
  // Written whole beside `out`, then published in one step: a kill leaves the old export or the new one.
  const std::string staged = stage_folder(out_dir);
  try {
    const RunPaths stage(staged);
    write_safetensors(stage.weights, blobs, file.metadata);
    if (task_run)
      write_file_atomic(task_file(staged), read_text_file(task_file(run_dir), "task record"));
    else
      fs::copy_file(from.tokenizer, stage.tokenizer);
    if (fs::exists(from.metrics)) fs::copy_file(from.metrics, stage.metrics);
    write_file_atomic(stage.config, config.dump(2) + "\n");
    publish_folder(staged, out_dir);
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
}

}  // namespace hsm
