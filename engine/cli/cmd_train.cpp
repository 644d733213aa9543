// `hsm train`: trains a model on a corpus into a run folder, with a live progress line;
// Ctrl-C stops after the current step and writes a checkpoint (continue with --resume).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include "commands.h"
#include "hsm/presets.h"
#include "hsm/trainer.h"
#include "layer_report.h"

namespace hsm::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted = true; }

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

}  // namespace

Command add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model on a corpus into a run folder");
  struct Args {
    std::string preset, config, data, out, tokenizer;
    RunSpec spec;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  TrainSettings& t = a->spec.train;
  auto* preset = cmd->add_option("--preset", a->preset, "Model preset (see `hsm presets`)");
  auto* config = cmd->add_option("--config", a->config, "Model config JSON file")->check(CLI::ExistingFile);
  preset->excludes(config);
  cmd->add_option("--data", a->data, "Corpus: TinyStories .txt/.json/.jsonl, a text file or a folder")
      ->check(CLI::ExistingPath);
  cmd->add_option("--out", a->out, "Run folder (created; holds weights, config, tokenizer, metrics)")->required();
  auto* steps = cmd->add_option("--steps", t.steps, "Optimizer steps in total")->check(CLI::PositiveNumber);
  auto* epochs = cmd->add_option("--epochs", t.epochs, "Passes over the training split (default 20)")
                     ->check(CLI::PositiveNumber);
  steps->excludes(epochs);
  auto* batch = cmd->add_option("--batch", t.batch_size, "Batch size in sequences (default 256)")->check(CLI::PositiveNumber);
  auto* lr = cmd->add_option("--lr", t.lr, "Peak learning rate (default 0.002)")->check(CLI::PositiveNumber);
  auto* wd = cmd->add_option("--weight-decay", t.weight_decay, "AdamW weight decay on matrices (default 0.01)");
  auto* warmup = cmd->add_option("--warmup", t.warmup_steps, "Linear warm-up steps (default 0)");
  auto* cosine = cmd->add_flag("--cosine", t.cosine, "Cosine decay to --min-lr over the run");
  auto* min_lr = cmd->add_option("--min-lr", t.min_lr, "Final learning rate of the cosine decay");
  auto* clip = cmd->add_option("--grad-clip", t.grad_clip, "Max gradient norm, 0 = off (default 1)");
  auto* eval_every = cmd->add_option("--eval-every", t.eval_every, "Steps between validations (default 200)");
  auto* eval_batches = cmd->add_option("--eval-batches", t.eval_batches, "Batches per periodic validation (default 20)");
  auto* ckpt = cmd->add_option("--checkpoint-every", t.checkpoint_every, "Steps between checkpoints (default 500)");
  auto* log_every = cmd->add_option("--log-every", t.log_every, "Steps between train-loss records (default 10)")
                        ->check(CLI::PositiveNumber);
  auto* device = cmd->add_option("--device", t.device, "cpu, cuda, cuda:N or auto (default)");
  auto* threads = cmd->add_option("--threads", t.threads, "CPU threads (default: all cores)");
  auto* seed = cmd->add_option("--seed", t.seed, "Random seed (default 1337)");
  auto* bf16 = cmd->add_option("--bf16", t.bf16, "bf16 autocast on CUDA (default true)");
  cmd->add_option("--windows", t.windows,
                  "Window layout: packed (default; every context tokens across stories) or story_start "
                  "(windows begin at story starts)")
      ->check(CLI::IsMember({"packed", "story_start"}));
  auto* keep_best = cmd->add_flag("--keep-best", t.keep_best,
                                  "Also keep best.safetensors, the weights of the lowest validation loss");
  cmd->add_option("--tokenizer", a->tokenizer, "Use this tokenizer.model instead of training one")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cache-dir", a->spec.cache_dir, "Where tokenizers and encoded corpora are cached");
  auto* resume = cmd->add_flag("--resume", a->spec.resume, "Continue the run in --out from its last checkpoint");
  resume->excludes(preset)->excludes(config);
  cmd->add_flag("--json", a->json, "Print the final summary as JSON");

  // On --resume, the stored settings stand unless a flag was given explicitly.
  using Copy = void (*)(TrainSettings&, const TrainSettings&);
  const std::vector<std::pair<CLI::Option*, Copy>> overridable = {
      {steps, [](TrainSettings& d, const TrainSettings& s) { d.steps = s.steps, d.epochs = 0; }},
      {epochs, [](TrainSettings& d, const TrainSettings& s) { d.epochs = s.epochs, d.steps = 0; }},
      {batch, [](TrainSettings& d, const TrainSettings& s) { d.batch_size = s.batch_size; }},
      {lr, [](TrainSettings& d, const TrainSettings& s) { d.lr = s.lr; }},
      {wd, [](TrainSettings& d, const TrainSettings& s) { d.weight_decay = s.weight_decay; }},
      {warmup, [](TrainSettings& d, const TrainSettings& s) { d.warmup_steps = s.warmup_steps; }},
      {cosine, [](TrainSettings& d, const TrainSettings& s) { d.cosine = s.cosine; }},
      {min_lr, [](TrainSettings& d, const TrainSettings& s) { d.min_lr = s.min_lr; }},
      {clip, [](TrainSettings& d, const TrainSettings& s) { d.grad_clip = s.grad_clip; }},
      {eval_every, [](TrainSettings& d, const TrainSettings& s) { d.eval_every = s.eval_every; }},
      {eval_batches, [](TrainSettings& d, const TrainSettings& s) { d.eval_batches = s.eval_batches; }},
      {ckpt, [](TrainSettings& d, const TrainSettings& s) { d.checkpoint_every = s.checkpoint_every; }},
      {log_every, [](TrainSettings& d, const TrainSettings& s) { d.log_every = s.log_every; }},
      {device, [](TrainSettings& d, const TrainSettings& s) { d.device = s.device; }},
      {threads, [](TrainSettings& d, const TrainSettings& s) { d.threads = s.threads; }},
      {keep_best, [](TrainSettings& d, const TrainSettings& s) { d.keep_best = s.keep_best; }},
      {seed, [](TrainSettings& d, const TrainSettings& s) { d.seed = s.seed; }},
      {bf16, [](TrainSettings& d, const TrainSettings& s) { d.bf16 = s.bf16; }},
  };
  return {cmd, [a, overridable]() {
            RunSpec spec = a->spec;
            spec.run_dir = a->out;
            spec.data_path = a->data;
            spec.tokenizer_path = a->tokenizer;
            if (spec.resume) {
              const TrainSettings given = spec.train;
              spec.train = stored_settings(a->out);
              for (const auto& [option, copy] : overridable)
                if (option->count() > 0) copy(spec.train, given);
            } else {
              if (a->preset.empty() && a->config.empty())
                throw std::invalid_argument("choose a model with --preset NAME or --config FILE (or --resume)");
              if (a->data.empty()) throw std::invalid_argument("--data is required for a new run");
              spec.model = load_preset_or_config(a->preset.empty() ? a->config : a->preset);
            }

            const bool tty = ::isatty(STDERR_FILENO);
            const auto t0 = std::chrono::steady_clock::now();
            int64_t first_step = -1, last_step = 0, total = 0;
            double val_loss = NAN, val_acc = NAN, train_loss = NAN, tps = NAN;
            std::string stage_shown;
            TrainCallbacks cb;
            cb.on_log = [&](const std::string& line) {
              std::cerr << (tty ? "\r\033[K" : "") << line << "\n";
            };
            cb.on_progress = [&](const std::string& stage, double f) {
              if (stage == "training") return;
              if (tty) {
                std::fprintf(stderr, "\r\033[K%s %s", stage.c_str(), f >= 0 ? (std::to_string(int(f * 100)) + "%").c_str() : "");
                std::fflush(stderr);
              } else if (stage != stage_shown) {
                std::cerr << stage << "...\n";
              }
              stage_shown = stage;
            };
            cb.on_metric = [&](const MetricRecord& m) {
              if (m.kind == "eval") {
                val_loss = m.val_loss;
                val_acc = m.val_accuracy;
              } else {
                train_loss = m.train_loss;
                tps = m.tokens_per_s;
              }
              if (first_step < 0) first_step = m.step - (m.kind == "train" ? 1 : 0);
              last_step = m.step;
              const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              const double per_step = last_step > first_step ? elapsed / static_cast<double>(last_step - first_step) : NAN;
              total = m.total_steps;
              char line[256];
              std::snprintf(line, sizeof line, "step %lld/%lld (epoch %.2f) | loss %.4f", static_cast<long long>(m.step),
                            static_cast<long long>(total), m.epoch, train_loss);
              std::string text = line;
              if (std::isfinite(val_loss)) {
                std::snprintf(line, sizeof line, " | val %.4f acc %.3f", val_loss, val_acc);
                text += line;
              }
              std::snprintf(line, sizeof line, " | %.0f tok/s | elapsed %s", tps, duration_text(elapsed).c_str());
              text += line;
              if (total > 0) text += " | ETA " + duration_text(per_step * static_cast<double>(total - last_step));
              if (tty)
                std::cerr << "\r\033[K" << text << std::flush;
              else if (m.kind == "eval" || m.step % (10 * std::max<int64_t>(1, spec.train.log_every)) == 0)
                std::cerr << text << "\n";
            };
            Trainer trainer(spec, cb);
            g_interrupted = false;
            auto previous = std::signal(SIGINT, on_interrupt);
            std::atomic<bool> done{false};
            std::thread watcher([&] {
              while (!done) {
                if (g_interrupted) {
                  trainer.stop();
                  g_interrupted = false;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
              }
            });
            TrainSummary s;
            try {
              s = trainer.run();
            } catch (...) {
              done = true;
              watcher.join();
              std::signal(SIGINT, previous);
              if (tty) std::cerr << "\n";
              throw;
            }
            done = true;
            watcher.join();
            std::signal(SIGINT, previous);
            if (tty) std::cerr << "\n";
            if (a->json) {
              nlohmann::json j = {{"run_dir", s.run_dir}, {"steps", s.steps},       {"total_steps", s.total_steps},
                                  {"epochs", s.epochs},   {"wall_s", s.wall_s},     {"stopped", s.stopped}};
              if (std::isfinite(s.val_loss)) j["val_loss"] = s.val_loss, j["val_accuracy"] = s.val_accuracy;
              if (std::isfinite(s.train_loss)) j["train_loss"] = s.train_loss;
              if (std::isfinite(s.tokens_per_s)) j["tokens_per_s"] = s.tokens_per_s;
              std::cout << j.dump(2) << "\n";
            } else {
              std::cout << (s.stopped ? "stopped" : "finished") << " at step " << s.steps << "/" << s.total_steps
                        << " (" << s.epochs << " epochs) in " << duration_text(s.wall_s) << ": val loss " << s.val_loss
                        << ", val accuracy " << s.val_accuracy << ", " << static_cast<long long>(s.tokens_per_s)
                        << " tok/s\n  run folder: " << s.run_dir << "\n";
            }
            return s.stopped ? 130 : 0;
          }};
}

}  // namespace hsm::cli
