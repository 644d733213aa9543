// RunFolder (hsm/run_folder.h): a run folder's file names, spelled here once, its checkpoints,
// the recipe for a copy of its model, and how a folder is written as one unit (run/staging.h).
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "hsm/run_folder.h"
#include "hsm/safetensors.h"
#include "io/io_util.h"
#include "run/run_json.h"
#include "run/staging.h"

namespace fs = std::filesystem;

namespace hsm {

namespace {

// Every file name of a run folder, here and nowhere else.
constexpr const char* kWeights = "model.safetensors";
constexpr const char* kOptimizer = "optimizer.safetensors";
constexpr const char* kConfig = "config.json";
constexpr const char* kTokenizer = "tokenizer.model";
constexpr const char* kTask = "task.json";
constexpr const char* kMetrics = "metrics.jsonl";
constexpr const char* kDiagnostics = "diagnostics.jsonl";
constexpr const char* kTraces = "traces.jsonl";
constexpr const char* kBest = "best.safetensors";
constexpr const char* kCheckpoints = "checkpoints";
constexpr const char* kSnapshots = "snapshots";
constexpr const char* kLock = ".lock";
constexpr const char* kStepPrefix = "step-";
constexpr const char* kDamagedPrefix = "damaged-";

std::string in(const std::string& dir, const char* name) { return (fs::path(dir) / name).string(); }

}  // namespace

RunFolder::RunFolder(std::string d)
    : dir(std::move(d)),
      config(in(dir, kConfig)),
      weights(in(dir, kWeights)),
      tokenizer(in(dir, kTokenizer)),
      task(in(dir, kTask)),
      metrics(in(dir, kMetrics)),
      diagnostics(in(dir, kDiagnostics)),
      traces(in(dir, kTraces)),
      best(in(dir, kBest)),
      checkpoints(in(dir, kCheckpoints)),
      snapshots(in(dir, kSnapshots)),
      lock(in(dir, kLock)),
      optimizer(in(dir, kOptimizer)) {}

bool RunFolder::has_model() const {
  std::error_code ec;
  return fs::exists(config, ec) && fs::exists(weights, ec);
}

namespace {

void refuse_link(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    throw std::runtime_error("'" + path + "' is a symbolic link: a run folder's files are its own, and writing "
                             "through the link would change a file outside the folder; replace the link by the "
                             "file it points to, or remove it");
}

// `dest` without a trailing separator ("out/" would stage inside the folder it replaces).
std::string folder_path(const std::string& dest) {
  fs::path d = fs::path(dest).lexically_normal();
  if (d.filename().empty()) d = d.parent_path();
  return d.string();
}

}  // namespace

void RunFolder::check_no_links() const {
  for (const std::string& f : {weights, optimizer, config, tokenizer, metrics, diagnostics, traces, best, lock,
                              checkpoints, snapshots})
    refuse_link(f);
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(checkpoints, ec))) return;
  for (const auto& entry : fs::directory_iterator(checkpoints, ec)) {
    refuse_link(entry.path().string());
    std::error_code inner;
    if (entry.is_directory(inner))
      for (const auto& file : fs::directory_iterator(entry.path(), inner)) refuse_link(file.path().string());
  }
}

std::string stage_folder(const std::string& dest_path) {
  const std::string staged = folder_path(dest_path) + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staged, ec);
  fs::create_directories(staged, ec);
  if (ec) throw std::runtime_error("cannot make the folder '" + staged + "': " + ec.message());
  return staged;
}

void publish_folder(const std::string& staged, const std::string& dest_path) {
  const std::string dest = folder_path(dest_path);
  sync_dir(staged);
  const std::string parent = fs::path(dest).has_parent_path() ? fs::path(dest).parent_path().string() : ".";
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dest, ec))) {
    if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0) {
      const int err = errno;
      if (err != EINVAL && err != ENOSYS)
        throw std::runtime_error("cannot replace '" + dest + "' by '" + staged + "': " + std::strerror(err));
      // A file system without the exchange: the old folder steps aside first (for a moment
      // `dest` is missing, never mixed).
      const std::string old = dest + ".old.tmp." + std::to_string(::getpid());
      fs::remove_all(old, ec);
      fs::rename(dest, old, ec);
      if (ec) throw std::runtime_error("cannot move '" + dest + "' aside: " + ec.message());
      fs::rename(staged, dest, ec);
      if (ec) {
        std::error_code back;
        fs::rename(old, dest, back);
        throw std::runtime_error("cannot rename '" + staged + "' to '" + dest + "': " + ec.message());
      }
      sync_dir(parent);
      fs::remove_all(old, ec);
      return;
    }
    sync_dir(parent);
    fs::remove_all(staged, ec);  // now the old folder
    return;
  }
  fs::rename(staged, dest, ec);
  if (ec) throw std::runtime_error("cannot rename '" + staged + "' to '" + dest + "': " + ec.message());
  sync_dir(parent);
}

namespace {

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
  if (name.rfind(kStepPrefix, 0) != 0 || name.size() == std::strlen(kStepPrefix)) return -1;
  for (size_t i = std::strlen(kStepPrefix); i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return -1;
  if (name.size() > std::strlen(kStepPrefix) + 18)
    throw std::runtime_error("'" + entry.string() + "' is not a checkpoint this program wrote (its step number has " +
                             std::to_string(name.size() - std::strlen(kStepPrefix)) + " digits): move it out of checkpoints/");
  return std::stoll(name.substr(std::strlen(kStepPrefix)));
}

RunFolder::Checkpoint checkpoint_at(const std::string& dir, int64_t step) {
  RunFolder::Checkpoint c;
  c.step = step;
  c.dir = dir;
  c.weights = in(dir, kWeights);
  c.optimizer = in(dir, kOptimizer);
  c.config = in(dir, kConfig);
  return c;
}

// Published checkpoints, newest first.
std::vector<RunFolder::Checkpoint> published_checkpoints(const std::string& checkpoints_dir) {
  std::vector<RunFolder::Checkpoint> all;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir, ec)) {
    const int64_t step = step_of(entry.path());
    if (step >= 0 && entry.is_directory()) all.push_back(checkpoint_at(entry.path().string(), step));
  }
  std::sort(all.begin(), all.end(), [](const RunFolder::Checkpoint& a, const RunFolder::Checkpoint& b) { return a.step > b.step; });
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
std::string checkpoint_problem(const RunFolder::Checkpoint& c) {
  for (const std::string& f : {c.weights, c.optimizer, c.config})
    if (!fs::exists(f)) return fs::path(f).filename().string() + " is missing";
  try {
    const nlohmann::json j = parse_run_config(read_text_file(c.config, "checkpoint config"), c.config);
    const int64_t step = j.value("state", nlohmann::json::object()).value("step", int64_t{-1});
    if (step != c.step) return std::string(kConfig) + " is of step " + std::to_string(step);
    read_safetensors_header(c.weights);
    const SafetensorsFile opt = read_safetensors_header(c.optimizer);
    const auto it = opt.metadata.find("step");
    if (it == opt.metadata.end() || it->second != std::to_string(c.step))
      return std::string(kOptimizer) + " is not of step " + std::to_string(c.step);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

std::optional<RunFolder::Checkpoint> RunFolder::latest_checkpoint() const {
  for (const Checkpoint& c : published_checkpoints(checkpoints))
    if (checkpoint_problem(c).empty()) return c;
  return std::nullopt;
}

std::optional<RunFolder::Checkpoint> RunFolder::resume_checkpoint(
    const std::function<void(const std::string&)>& log) const {
  std::optional<int64_t> top_step;
  try {
    top_step = read_run_config(dir).value("state", nlohmann::json::object()).value("step", int64_t{-1});
  } catch (const std::exception&) {
  }
  for (const Checkpoint& c : published_checkpoints(checkpoints)) {
    const std::string problem = checkpoint_problem(c);
    if (problem.empty()) return c;
    // Set aside, not removed: it may hold the only copy of the newest weights, which training
    // again to its step would otherwise replace (or prune).
    const std::string aside = (fs::path(checkpoints) / (kDamagedPrefix + fs::path(c.dir).filename().string())).string();
    std::error_code ec;
    fs::remove_all(aside, ec);
    fs::rename(c.dir, aside, ec);
    if (ec)
      throw std::runtime_error("checkpoint '" + c.dir + "' cannot be resumed from (" + problem +
                               ") and cannot be set aside: " + ec.message());
    std::string kept;
    if (top_step && *top_step == c.step)  // the top-level files are this step's: keep what it lacks
      for (const auto& [from, name] : {std::pair{weights, kWeights}, {config, kConfig}}) {
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

void RunFolder::write_checkpoint(int64_t step, const std::string& config_text,
                                 const std::function<void(const Checkpoint& staged)>& write_tensors) const {
  fs::create_directories(checkpoints);
  const std::string final_dir = (fs::path(checkpoints) / step_dir_name(step)).string();
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
      write_tensors(c);
      write_file_atomic(c.config, config_text);
      publish_folder(tmp_dir, final_dir);  // the commit point: before it the checkpoint does not exist
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(tmp_dir, ignored);
      throw;
    }
  }
  refresh_view(checkpoint_at(final_dir, step));
  const std::vector<Checkpoint> all = published_checkpoints(checkpoints);
  for (size_t i = kKeptCheckpoints; i < all.size(); ++i) fs::remove_all(all[i].dir, ec);
  // A run written before step folders kept its optimizer at the top: it is stale now.
  fs::remove(optimizer, ec);
}

void RunFolder::refresh_view(const Checkpoint& checkpoint) const {
  replace_with_link(checkpoint.weights, weights);
  write_file_atomic(config, read_text_file(checkpoint.config, "checkpoint config"));
  sync_dir(dir);
}

void RunFolder::remove_stale_temporaries() const {
  check_no_links();  // never remove entries of a folder the run's checkpoints/ links to
  remove_dead_temporaries(dir);  // a killed writer's tokenizer.model.<n>.tmp.<pid>
  std::error_code ec;
  for (const std::string& folder : {dir, checkpoints})
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) fs::remove_all(entry.path(), ec);
    }
}

namespace {

// What an export writes into its folder (besides nothing): an earlier export holds these only.
bool is_export_file(const std::string& name) {
  for (const char* file : {kWeights, kConfig, kTokenizer, kMetrics, kTask})
    if (name == file) return true;
  return false;
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
    const auto j = nlohmann::json::parse(read_text_file(in(dir, kConfig), "export config"),
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
    if ((name == kCheckpoints && dir) || name == kOptimizer)
      return "it holds a training run's checkpoints or optimizer state ('" + it->path().string() + "')";
  }
  if (ec) return "it cannot be read whole (" + ec.message() + ")";
  return {};
}

}  // namespace

// Issue 46: an export once replaced any folder holding a config.json, a run and its checkpoints included.
void RunFolder::check_export_target(const std::string& out_dir, bool force) const {
  const std::string& run_dir = dir;
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


void RunFolder::publish_copy(const std::string& out_dir, const std::string& config_text,
                             const std::function<void(const std::string& weights)>& write_weights) const {
  const bool task_run = fs::exists(task);  // a task run has its task and no tokenizer
  const std::string staged = stage_folder(out_dir);
  try {
    const RunFolder copy(staged);
    write_weights(copy.weights);
    if (task_run)
      write_file_atomic(copy.task, read_text_file(task, "task record"));
    else
      fs::copy_file(tokenizer, copy.tokenizer);
    if (fs::exists(metrics)) fs::copy_file(metrics, copy.metrics);
    write_file_atomic(copy.config, config_text);
    publish_folder(staged, out_dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staged, ec);
    throw;
  }
}

std::string run_task(const std::string& run_dir) {
  const std::string file = RunFolder(run_dir).task;
  if (!fs::exists(file)) return "";
  const auto j = nlohmann::json::parse(read_text_file(file, "task record"), nullptr, false);
  if (!j.is_object() || !j.contains("task") || !j["task"].is_string())
    throw std::runtime_error(file + " is damaged: it names no task (\"task\": \"NAME:key=value,...\")");
  return j["task"].get<std::string>();
}

// ---- snapshots (issue 67) ------------------------------------------------------------------------

bool RunFolder::keep_snapshot(int64_t step) const {
  const std::string final_dir = (fs::path(snapshots) / step_dir_name(step)).string();
  std::error_code ec;
  if (fs::exists(final_dir, ec)) return true;  // kept already (a resumed run reaching it again)
  if (static_cast<int>(published_checkpoints(snapshots).size()) >= kMaxSnapshots) return false;
  const Checkpoint c = checkpoint_at((fs::path(checkpoints) / step_dir_name(step)).string(), step);
  for (const std::string& f : {c.weights, c.config})
    if (!fs::exists(f, ec)) throw std::runtime_error("no snapshot of step " + std::to_string(step) + ": '" + f + "' is missing");
  fs::create_directories(snapshots, ec);
  const std::string staged = stage_folder(final_dir);
  try {
    const Checkpoint s = checkpoint_at(staged, step);
    replace_with_link(c.weights, s.weights);
    replace_with_link(c.config, s.config);
    publish_folder(staged, final_dir);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staged, ignored);
    throw;
  }
  return true;
}

std::vector<int64_t> RunFolder::kept_steps() const {
  std::vector<int64_t> steps;
  for (const Checkpoint& c : published_checkpoints(snapshots)) steps.push_back(c.step);
  for (const Checkpoint& c : published_checkpoints(checkpoints))
    if (checkpoint_problem(c).empty()) steps.push_back(c.step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

RunFolder::Checkpoint RunFolder::model_at(int64_t step) const {
  for (const Checkpoint& c : published_checkpoints(snapshots))
    if (c.step == step && fs::exists(c.weights) && fs::exists(c.config)) return {c.step, c.dir, c.weights, "", c.config};
  for (const Checkpoint& c : published_checkpoints(checkpoints))
    if (c.step == step && checkpoint_problem(c).empty()) return c;
  std::string kept;
  for (int64_t s : kept_steps()) kept += (kept.empty() ? "" : ", ") + std::to_string(s);
  throw std::invalid_argument(dir + " keeps no model of step " + std::to_string(step) + "; it keeps step" +
                              (kept.find(',') == std::string::npos ? " " : "s ") + (kept.empty() ? "none" : kept) +
                              " (train with --snapshot-every N or --snapshot-log to keep more)");
}

void RunFolder::drop_snapshots_after(int64_t step) const {
  std::error_code ec;
  for (const Checkpoint& c : published_checkpoints(snapshots))
    if (c.step > step) fs::remove_all(c.dir, ec);
}

}  // namespace hsm
