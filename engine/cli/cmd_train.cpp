// `hsm train`: trains a model on a corpus into a run folder, with a live progress line;
// Ctrl-C stops after the current step and writes a checkpoint (continue with --resume).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <fstream>
#include <sstream>
#include <map>
#include <thread>

#include "commands.h"
#include "number_options.h"
#include "hsm/distributed.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "hsm/settings.h"
#include "hsm/task_run.h"
#include "hsm/tasks.h"
#include "hsm/train_until_stopped.h"
#include "hsm/trainer.h"
#include "hsm/worker_process.h"
#include "layer_report.h"

namespace hsm::cli {
namespace {

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

// The step of the run's last validation (metrics.jsonl), -1 when it has none: after a stop
// during a validation it is an earlier step than the summary's (issue 46).
int64_t val_step(const TrainSummary& s) {
  int64_t at = -1;
  try {
    for (const MetricRecord& m : read_metrics(s.run_dir))
      if (m.kind == "eval" && m.step <= s.steps && std::isfinite(m.val_loss)) at = m.step;
  } catch (const std::exception&) {
  }
  return at;
}

// The summary's numbers, each only when known (a run stopped before its first validation has
// no val loss; a resumed finished run trained nothing): never "nan" or an undefined tok/s.
std::string summary_numbers(const TrainSummary& s) {
  std::ostringstream out;
  if (std::isfinite(s.val_loss)) {
    out << "val loss " << s.val_loss << ", val accuracy " << s.val_accuracy;
    if (const int64_t at = val_step(s); at >= 0 && at != s.steps) out << " (of step " << at << ")";
  } else {
    out << "no validation yet";
  }
  if (std::isfinite(s.tokens_per_s)) out << ", " << static_cast<long long>(s.tokens_per_s) << " tok/s";
  return out.str();
}

// This process's arguments after the program name (/proc/self/cmdline), for the ranks the
// launcher starts with the same command line.
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  if (!args.empty()) args.erase(args.begin());
  return args;
}

// --nproc N, the torchrun environment, and the flags of a data-parallel run (docs/distributed.md).
struct ParallelArgs {
  int nproc = 0;
  DistributedOptions dist;
};

void add_parallel_options(CLI::App* cmd, ParallelArgs& p) {
  cmd->add_option("--nproc", p.nproc,
                  "Train data-parallel on N processes of this machine (the cores shared among them); --batch is "
                  "per process. Across machines, start one hsm train per rank with the torchrun environment "
                  "(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)")
      ->check(whole_in(1, 1024));
  cmd->add_option("--backend", p.dist.backend, "Data-parallel collectives: auto, gloo (CPU) or nccl (CUDA)")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  cmd->add_option("--timeout", p.dist.timeout_s,
                  "Seconds a data-parallel rank waits for a missing or hung peer before the run stops with a message "
                  "naming it")
      ->check(number_in(0, 1e9, true));
  cmd->add_option("--bucket-mb", p.dist.bucket_mb, "Gradient bucket size (MiB) of the overlapped all-reduce")
      ->check(number_in(0, 65536, true));
}

// The rank's options from the environment, with the flags; the threads the launcher gave it.
DistributedOptions rank_options(const ParallelArgs& p, RunSpec& spec) {
  DistributedOptions d = distributed_from_env();
  d.backend = p.dist.backend;
  d.timeout_s = p.dist.timeout_s;
  d.bucket_mb = p.dist.bucket_mb;
  if (p.nproc > 0 && d.enabled() && p.nproc != d.world_size)
    throw std::invalid_argument("--nproc " + std::to_string(p.nproc) + " but WORLD_SIZE=" +
                                std::to_string(d.world_size) + ": give one of them");
  validate(d);
  if (const char* t = std::getenv("HSM_RANK_THREADS")) spec.threads = std::atoi(t);
  return d;
}

// What `hsm train` was given: the flags, each training setting as text by key.
struct TrainArgs {
  std::string preset, config, data, out, tokenizer;
  RunSpec spec;
  std::map<std::string, std::string> values;  // each training setting as given, by key
  bool json = false;
  ParallelArgs parallel;
};
using SettingOptions = std::vector<std::pair<const SettingSpec*, CLI::Option*>>;

// --preset or --config, --data or --task, --out. Returns --preset's and --config's options.
std::pair<CLI::Option*, CLI::Option*> add_model_and_data_options(CLI::App* cmd, TrainArgs& a) {
  auto* preset = cmd->add_option("--preset", a.preset, "Model preset (see `hsm presets`)");
  auto* config = cmd->add_option("--config", a.config, "Model config JSON file")->check(CLI::ExistingFile);
  preset->excludes(config);
  auto* data = cmd->add_option("--data", a.data, "Corpus: TinyStories .txt/.json/.jsonl, a text file or a folder")
                   ->check(CLI::ExistingPath);
  cmd->add_option("--task", a.spec.task,
                  "Train on a synthetic task instead of a corpus: NAME[:key=value,...] (hsm task list); the loss on "
                  "its answers only. A preset takes the task's vocabulary and context; a config must have them")
      ->excludes(data);
  cmd->add_option("--out", a.out, "Run folder (created; holds weights, config, tokenizer, metrics)")->required();
  return {preset, config};
}

// Every training setting from its one declaration (hsm/settings.h): the flag, its help, and
// the check the trainer and the studio make too. Values are kept as given, as text, and
// parsed by the declaration, so "nan" or "-4" is refused with the range to use.
SettingOptions add_setting_options(CLI::App* cmd, TrainArgs& a) {
  SettingOptions settings;
  for (const SettingSpec& s : train_setting_specs()) {
    std::string& value = a.values[s.key];
    CLI::Option* option = nullptr;
    if (s.kind == SettingSpec::Kind::kSwitch) {
      option = cmd->add_flag_function(
          s.flag, [&value](int64_t n) { value = n > 0 ? "true" : "false"; }, s.help);
    } else {
      option = cmd->add_option(s.flag, value, s.help);
      option->type_name(s.kind == SettingSpec::Kind::kInteger ? "INT"
                        : s.kind == SettingSpec::Kind::kReal  ? "NUMBER"
                        : s.kind == SettingSpec::Kind::kBool  ? "BOOL"
                                                              : "TEXT");
    }
    settings.emplace_back(&s, option);
  }
  cmd->get_option("--steps")->excludes(cmd->get_option("--epochs"));
  return settings;
}

// The run's training settings and ranks from the flags. On --resume the stored settings stand
// unless a flag was given; a new run starts from its preset's or config file's own settings
// (its "training" object, as the starter preset has) or the paper's defaults.
RunSpec spec_from_flags(const TrainArgs& a, const SettingOptions& settings) {
  RunSpec spec = a.spec;
  spec.run_dir = a.out;
  spec.data_path = a.data;
  spec.tokenizer_path = a.tokenizer;
  spec.train = spec.resume          ? stored_settings(a.out)
               : !a.preset.empty() ? preset_train_settings(a.preset)
               : !a.config.empty() ? preset_or_config_train_settings(a.config)
                                    : TrainSettings{};
  for (const auto& [setting, option] : settings) {
    if (option->count() == 0) continue;
    setting->set(spec.train, a.values.at(setting->key));
    if (std::string(setting->key) == "epochs") spec.train.steps = 0;  // run by epochs, not stored steps
  }
  validate_train_settings(spec.train);
  spec.dist = rank_options(a.parallel, spec);
  return spec;
}

// The launcher: N copies of this command, each a rank (docs/distributed.md).
int launch_ranks(const TrainArgs& a) {
  LaunchOptions lo;
  lo.nproc = a.parallel.nproc;
  lo.args = own_arguments();
  lo.threads_per_rank = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / lo.nproc);
  lo.grace_s = a.parallel.dist.timeout_s + 10;
  return launch_local_ranks(lo, [](const std::string& line) { std::cerr << "hsm: " << line << "\n"; });
}

// What a rank trains: --batch is per rank, and the run's batch (what it stores, and resumes
// with on any number of ranks) is the global one; a new run's model from --preset or --config.
void complete_spec(RunSpec& spec, const TrainArgs& a, const SettingOptions& settings) {
  for (const auto& [setting, option] : settings)
    if (spec.dist.enabled() && std::string(setting->key) == "batch_size" && option->count() > 0)
      spec.train.batch_size *= spec.dist.world_size;
  if (spec.resume) return;
  if (a.preset.empty() && a.config.empty())
    throw std::invalid_argument("choose a model with --preset NAME or --config FILE (or --resume)");
  if (a.data.empty() && spec.task.empty())
    throw std::invalid_argument("--data (a corpus) or --task (a synthetic task) is required for a new run");
  spec.model = load_preset_or_config(a.preset.empty() ? a.config : a.preset);
  if (!spec.task.empty() && !a.preset.empty()) adopt_task_shape(spec.model, *parse_task(spec.task));
}

// The live progress on stderr: one line rewritten in place on a terminal, else a line every
// 10 log intervals and at each validation; the trainer's log lines and its stages before training.
class ProgressLine {
 public:
  explicit ProgressLine(int64_t log_every) : log_every_(log_every) {}
  bool tty() const { return tty_; }

  TrainCallbacks callbacks() {
    TrainCallbacks cb;
    cb.on_log = [this](const std::string& line) { std::cerr << (tty_ ? "\r\033[K" : "") << line << "\n"; };
    cb.on_progress = [this](const std::string& stage, double f) { on_stage(stage, f); };
    cb.on_metric = [this](const MetricRecord& m) { on_metric(m); };
    return cb;
  }

 private:
  void on_stage(const std::string& stage, double f) {
    if (stage == "training") return;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s %s", stage.c_str(), f >= 0 ? (std::to_string(int(f * 100)) + "%").c_str() : "");
      std::fflush(stderr);
    } else if (stage != stage_shown_) {
      std::cerr << stage << "...\n";
    }
    stage_shown_ = stage;
  }

  void on_metric(const MetricRecord& m) {
    if (m.kind == "eval") {
      val_loss_ = m.val_loss;
      val_acc_ = m.val_accuracy;
    } else {
      train_loss_ = m.train_loss;
      tps_ = m.tokens_per_s;
    }
    if (first_step_ < 0) first_step_ = m.step - (m.kind == "train" ? 1 : 0);
    last_step_ = m.step;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const double per_step = last_step_ > first_step_ ? elapsed / static_cast<double>(last_step_ - first_step_) : NAN;
    const int64_t total = m.total_steps;
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld (epoch %.2f) | loss %.4f", static_cast<long long>(m.step),
                  static_cast<long long>(total), m.epoch, train_loss_);
    std::string text = line;
    if (std::isfinite(val_loss_)) {
      std::snprintf(line, sizeof line, " | val %.4f acc %.3f", val_loss_, val_acc_);
      text += line;
    }
    std::snprintf(line, sizeof line, " | %.0f tok/s | elapsed %s", tps_, duration_text(elapsed).c_str());
    text += line;
    if (total > 0) text += " | ETA " + duration_text(per_step * static_cast<double>(total - last_step_));
    if (tty_)
      std::cerr << "\r\033[K" << text << std::flush;
    else if (m.kind == "eval" || m.step % (10 * std::max<int64_t>(1, log_every_)) == 0)
      std::cerr << text << "\n";
  }

  const int64_t log_every_;
  const bool tty_ = ::isatty(STDERR_FILENO);
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  int64_t first_step_ = -1, last_step_ = 0;
  double val_loss_ = NAN, val_acc_ = NAN, train_loss_ = NAN, tps_ = NAN;
  std::string stage_shown_;
};

// Trains until done or stopped. SIGTERM (a scheduler, kill) and SIGHUP (a closed terminal) stop
// as Ctrl-C does: the step ends, a checkpoint is written, the exit status is 130 (issue 34).
// SA_RESTART: the training's own calls go on.
TrainSummary train_with_progress(const RunSpec& spec) {
  ProgressLine progress(spec.train.log_every);
  TrainSummary s;
  {
    // Before the Trainer: each thread it starts keeps the signals off (hsm/worker_process.h).
    StopSignals stop(true);
    Trainer trainer(spec, progress.callbacks());
    try {
      s = train_until_stopped(trainer, StopSignals::flag());
    } catch (...) {
      if (progress.tty()) std::cerr << "\n";
      throw;
    }
  }
  if (progress.tty()) std::cerr << "\n";
  return s;
}

// The run's summary on stdout: a line (and the folder), or JSON.
void print_summary(const TrainSummary& s, bool json) {
  if (json) {
    nlohmann::json j = {{"run_dir", s.run_dir}, {"steps", s.steps},       {"total_steps", s.total_steps},
                        {"epochs", s.epochs},   {"wall_s", s.wall_s},     {"stopped", s.stopped}};
    if (std::isfinite(s.val_loss)) j["val_loss"] = s.val_loss, j["val_accuracy"] = s.val_accuracy;
    if (std::isfinite(s.answer_accuracy))
      j["answer_accuracy"] = s.answer_accuracy, j["sequence_accuracy"] = s.sequence_accuracy;
    if (std::isfinite(s.train_loss)) j["train_loss"] = s.train_loss;
    if (std::isfinite(s.tokens_per_s)) j["tokens_per_s"] = s.tokens_per_s;
    if (const int64_t at = val_step(s); at >= 0) j["val_step"] = at;
    if (!s.warning.empty()) j["warning"] = s.warning;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << (s.stopped ? "stopped" : "finished") << " at step " << s.steps << "/" << s.total_steps << " ("
              << s.epochs << " epochs) in " << duration_text(s.wall_s) << ": " << summary_numbers(s)
              << "\n  run folder: " << s.run_dir << "\n";
  }
  if (!s.warning.empty()) std::cerr << "hsm: warning: " << s.warning << "\n";
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model on a corpus into a run folder");
  auto a = std::make_shared<TrainArgs>();
  const auto [preset, config] = add_model_and_data_options(cmd, *a);
  const SettingOptions settings = add_setting_options(cmd, *a);
  cmd->add_option("--tokenizer", a->tokenizer, "Use this tokenizer.model instead of training one")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cache-dir", a->spec.cache_dir, "Where tokenizers and encoded corpora are cached");
  auto* resume = cmd->add_flag("--resume", a->spec.resume, "Continue the run in --out from its last checkpoint");
  resume->excludes(preset)->excludes(config);
  cmd->add_flag("--json", a->json, "Print the final summary as JSON");
  add_parallel_options(cmd, a->parallel);

  return {cmd, [a, settings]() {
            RunSpec spec = spec_from_flags(*a, settings);
            if (a->parallel.nproc > 1 && !spec.dist.enabled()) return launch_ranks(*a);
            complete_spec(spec, *a, settings);
            const TrainSummary s = train_with_progress(spec);
            if (!spec.dist.is_writer()) return s.stopped ? 130 : 0;  // rank 0 reports the run
            if (!s.started) return 130;  // stopped while preparing (the log said so): no run to summarise
            print_summary(s, a->json);
            return s.stopped ? 130 : 0;
          }};
}

}  // namespace hsm::cli
