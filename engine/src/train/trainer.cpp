#include "hsm/trainer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "kernels/gemm.h"
#include "kernels/parallel_gemm.h"
#include "train/adamw.h"
#include "kernels/blas_threads.h"
#include "diagnostics/mixing_matrix.h"
#include "train/checkpoint.h"
#include "train/evaluation.h"
#include "io/hash_util.h"
#include "hsm/corpus.h"
#include "hsm/dataset.h"
#include "hsm/settings.h"
#include "hsm/tokenizer.h"
#include "io/io_util.h"
#include "io/run_lock.h"
#include "model/model.h"
#include "kernels/fast_kernels.h"
#include "model/torch_compat.h"

namespace fs = std::filesystem;

namespace hsm {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double learning_rate(const TrainSettings& s, int64_t step, int64_t total) {
  if (s.warmup_steps > 0 && step < s.warmup_steps)
    return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  if (!s.cosine) return s.lr;
  const double span = static_cast<double>(std::max<int64_t>(1, total - s.warmup_steps));
  const double progress = std::min(1.0, static_cast<double>(step - s.warmup_steps) / span);
  return s.min_lr + 0.5 * (s.lr - s.min_lr) * (1 + std::cos(M_PI * progress));
}

// Entropy of the unigram distribution of the training tokens, in nats: the loss of a model
// that knows only how often each token occurs. A trained model's loss far above it after the
// warm-up means something is broken (a diverging learning rate, a damaged corpus).
double unigram_entropy(const std::vector<uint16_t>& tokens, int64_t vocab) {
  std::vector<int64_t> counts(static_cast<size_t>(std::max<int64_t>(vocab, 1)), 0);
  for (uint16_t t : tokens)
    if (t < counts.size()) ++counts[t];
  const auto n = static_cast<double>(tokens.size());
  double h = 0;
  for (int64_t c : counts)
    if (c > 0) h -= static_cast<double>(c) / n * std::log(static_cast<double>(c) / n);
  return h;
}

// The training split of one step's dropout masks and the like: a function of the seed and the
// step alone, so a resumed run draws what the uninterrupted one drew (same final weights).
uint64_t step_seed(uint64_t seed, int64_t step) {
  return seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(step) * 0xbf58476d1ce4e5b9ULL + 1;
}

// A number for a message: "0.002", "1e-05", "nan", "inf".
std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Thrown when the loss or the weights stop being finite; the run folder keeps the last finite
// checkpoint.
struct Diverged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

struct Trainer::Impl {
  RunSpec spec;
  TrainCallbacks cb;
  std::atomic<bool> stop_flag{false}, pause_flag{false};
  std::mutex mu;
  std::condition_variable cv;

  void log(const std::string& line) {
    if (cb.on_log) cb.on_log(line);
  }
  void progress(const std::string& stage, double f) {
    if (cb.on_progress) cb.on_progress(stage, f);
  }
  TrainSummary run();
};

Trainer::Trainer(RunSpec spec, TrainCallbacks callbacks) : impl_(std::make_unique<Impl>()) {
  impl_->spec = std::move(spec);
  impl_->cb = std::move(callbacks);
}
Trainer::~Trainer() = default;
TrainSummary Trainer::run() {
  try {
    return impl_->run();
  } catch (const Cancelled&) {
    // stop() while the tokenizer or the data were being prepared: nothing was trained.
    impl_->log("stopped before training started");
    TrainSummary s;
    s.stopped = true;
    s.run_dir = impl_->spec.run_dir;
    return s;
  }
}
void Trainer::pause() { impl_->pause_flag = true; }
void Trainer::resume() {
  impl_->pause_flag = false;
  impl_->cv.notify_all();
}
void Trainer::stop() {
  impl_->stop_flag = true;
  impl_->cv.notify_all();
}
bool Trainer::paused() const { return impl_->pause_flag; }

TrainSummary Trainer::Impl::run() {
  const auto started = Clock::now();
  TrainSettings ts = spec.train;
  validate_train_settings(ts);
  if (spec.run_dir.empty()) throw std::invalid_argument("no run folder given (--out)");
  const RunPaths paths(spec.run_dir);
  const std::string cache_dir = spec.cache_dir.empty() ? default_cache_dir() : spec.cache_dir;

  // ---- the run folder: locked for this trainer, cleaned of what a killed one left ----------
  if (spec.resume && !fs::exists(paths.config))
    throw std::invalid_argument("'" + spec.run_dir + "' is not a run folder: nothing to resume (train a new run with "
                                "--preset or --config)");
  if (!spec.resume && fs::exists(paths.config))
    throw std::invalid_argument("'" + spec.run_dir +
                                "' already holds a run; continue it with --resume or choose another --out");
  // A new run that fails before its first checkpoint leaves nothing behind: the folder goes if
  // this trainer made it, else the files it made in it.
  const bool made_folder = !spec.resume && !fs::exists(spec.run_dir);
  std::error_code mkdir_error;
  fs::create_directories(spec.run_dir, mkdir_error);
  if (mkdir_error)
    throw std::runtime_error("cannot create the run folder '" + spec.run_dir + "': " + mkdir_error.message());
  std::optional<RunLock> lock;
  try {
    lock.emplace(spec.run_dir);
  } catch (...) {
    if (made_folder) fs::remove(spec.run_dir, mkdir_error);
    throw;
  }
  remove_stale_temporaries(spec.run_dir);
  bool started_run = spec.resume;  // true once the run folder holds a loadable checkpoint
  struct Cleanup {
    const bool& started;
    bool made_folder;
    const RunPaths& paths;
    ~Cleanup() {
      if (started) return;
      std::error_code ec;
      if (made_folder) {
        fs::remove_all(paths.dir, ec);
        return;
      }
      for (const std::string& f : {paths.tokenizer, paths.metrics, paths.config, paths.weights,
                                   (fs::path(paths.dir) / ".lock").string()})
        fs::remove(f, ec);
      fs::remove_all(paths.checkpoints, ec);
    }
  } cleanup{started_run, made_folder, paths};

  // ---- model config, tokenizer, previous state --------------------------------------------
  ModelConfig model_config;
  int64_t start_step = 0;
  double wall_offset = 0;
  std::optional<Tokenizer> tokenizer;
  std::optional<Checkpoint> resume_from;
  nlohmann::json resumed_state = nlohmann::json::object();
  if (spec.resume) {
    // The newest complete checkpoint, whatever the top-level files say (a kill between its
    // publication and their update leaves them a step behind); a run written before step
    // folders resumes from its top-level files.
    resume_from = latest_checkpoint(spec.run_dir);
    const std::string config_file = resume_from ? resume_from->config : paths.config;
    const nlohmann::json run = read_run_config(spec.run_dir);  // checks the format
    const nlohmann::json at =
        resume_from ? parse_run_config(read_text_file(config_file, "checkpoint config"), config_file) : run;
    model_config = config_from_json(at["model"].dump(), config_file);
    resumed_state = at.value("state", nlohmann::json::object());
    start_step = resumed_state.value("step", int64_t{0});
    wall_offset = resumed_state.value("wall_s", 0.0);
    if (spec.data_path.empty()) spec.data_path = at.value("data", nlohmann::json::object()).value("path", "");
    tokenizer = load_run_tokenizer(spec.run_dir, at);
    if (resume_from && run.value("state", nlohmann::json::object()).value("step", int64_t{-1}) != start_step)
      refresh_run_view(paths, *resume_from);  // what eval and the studio read catches up
    log("resuming " + spec.run_dir + " at step " + std::to_string(start_step) +
        (resume_from ? " (checkpoint " + resume_from->dir + ")" : ""));
  } else {
    model_config = spec.model;
    validate(model_config);
    if (spec.data_path.empty()) throw std::invalid_argument("no training data given (--data)");
    if (!spec.tokenizer_path.empty()) {
      tokenizer = Tokenizer::load(spec.tokenizer_path);
    } else {
      // Tokenizers are cached by corpus and vocabulary, so a second run on the same corpus
      // skips training one (and then also hits the encoded-token cache, keyed by its hash).
      const std::string key = Fnv1a64()
                                  .field(corpus_fingerprint(spec.data_path))
                                  .number(static_cast<uint64_t>(model_config.vocab_size))
                                  .field("tokenizer-cache/1")
                                  .hex();
      const fs::path cached = fs::path(cache_dir) / ("tokenizer-" + key + ".model");
      if (fs::exists(cached)) {
        tokenizer = Tokenizer::load(cached.string());
        log("tokenizer from cache " + cached.string());
      } else {
        log("training a " + std::to_string(model_config.vocab_size) + "-token tokenizer on " + spec.data_path);
        TokenizerTrainOptions to;
        to.vocab_size = static_cast<int>(model_config.vocab_size);
        to.progress = cb.on_progress;
        to.cancel = &stop_flag;
        fs::create_directories(cache_dir);
        tokenizer = Tokenizer::train(spec.data_path, cached.string(), to);
      }
    }
    tokenizer->save(paths.tokenizer);
    if (tokenizer->vocab_size() != model_config.vocab_size) {
      log("vocab_size set to the tokenizer's " + std::to_string(tokenizer->vocab_size()) + " (config said " +
          std::to_string(model_config.vocab_size) + ")");
      model_config.vocab_size = tokenizer->vocab_size();
    }
  }

  // ---- data ----------------------------------------------------------------------------------
  DatasetOptions data_options;
  data_options.context = model_config.context;
  data_options.val_fraction = kValFraction;
  data_options.seed = kSplitSeed;
  data_options.cache_dir = cache_dir;
  data_options.progress = cb.on_progress;
  data_options.cancel = &stop_flag;
  const TokenDataset data = load_dataset(spec.data_path, *tokenizer, data_options);
  log("data: " + std::to_string(data.train.size()) + " train / " + std::to_string(data.val.size()) +
      " validation tokens from " + std::to_string(data.documents) + " documents (" +
      std::to_string(data.dropped_short) + " shorter than the context dropped)" + (data.from_cache ? ", cached" : ""));

  const int64_t T = model_config.context;
  const WindowLayout layout = window_layout(ts.windows);
  const auto eot = static_cast<uint16_t>(tokenizer->end_of_text_id());
  const std::vector<int64_t> train_starts = window_starts(data.train, T, layout, eot);
  const std::vector<int64_t> val_starts = window_starts(data.val, T, layout, eot);
  const auto windows = static_cast<int64_t>(train_starts.size());
  if (windows < 1)
    throw std::runtime_error("the training split holds no window of " + std::to_string(T + 1) + " tokens (" +
                             ts.windows + " layout)");
  const int64_t batch = std::min(ts.batch_size, windows);
  if (batch < ts.batch_size) log("batch size lowered to " + std::to_string(batch) + " (all the training windows)");
  const int64_t steps_per_epoch = std::max<int64_t>(1, windows / batch);
  const int64_t total_steps =
      ts.steps > 0 ? ts.steps : static_cast<int64_t>(std::ceil(ts.epochs * static_cast<double>(steps_per_epoch)));
  if (spec.resume && total_steps == start_step) {
    log("the run is finished at step " + std::to_string(start_step) + "; give --steps above it to train on");
    TrainSummary done;
    done.steps = done.total_steps = start_step;
    done.epochs = static_cast<double>(start_step) / steps_per_epoch;
    done.wall_s = wall_offset;
    done.run_dir = spec.run_dir;
    return done;
  }
  if (spec.resume && total_steps < start_step)
    throw std::invalid_argument(
        "the run is at step " + std::to_string(start_step) + " and is set to " + std::to_string(total_steps) +
        " steps: nothing to train. Give --steps above " + std::to_string(start_step) + " (or more --epochs) to continue it");
  const double unigram = unigram_entropy(data.train, model_config.vocab_size);

  // ---- model and optimizer -----------------------------------------------------------------------
  set_cpu_threads(ts.threads);
  const torch::Device device = compat::parse_device(ts.device);
  const bool bf16 = ts.bf16 && device.is_cuda() && compat::autocast_supported();
  torch::manual_seed(ts.seed + static_cast<uint64_t>(start_step));
  Gpt model(model_config);
  // fixed_seq_qk's fixed sequence: the first `context` tokens of the validation split (its
  // first document: shorter ones were dropped), saved with the weights (docs/mixers.md).
  if (!spec.resume && static_cast<int64_t>(data.val.size()) >= T)
    model->set_fixed_tokens(std::vector<int64_t>(data.val.begin(), data.val.begin() + T));
  model->to(device);
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
  AdamW optimizer(named, {ts.lr, ts.beta1, ts.beta2, ts.eps, ts.weight_decay});
  if (spec.resume) {
    load_weights(model, resume_from ? resume_from->weights : paths.weights);
    load_optimizer(optimizer, resume_from ? resume_from->optimizer : paths.optimizer, start_step);
  }
  log("model " + model_config.name + " on " + device.str() + (bf16 ? " (bf16 autocast)" : "") + ", " +
      cpu_threads_note() + "; " + std::to_string(total_steps) + " steps of " + std::to_string(batch) +
      "x" + std::to_string(T) + " tokens, " + std::to_string(steps_per_epoch) + " steps per epoch");

  // ---- metrics file: on resume, drop records past the checkpoint so the curve continues ------
  if (spec.resume && fs::exists(paths.metrics)) {
    std::string kept;
    int64_t dropped = 0;
    MetricsReader reader(spec.run_dir);
    for (const MetricRecord& m : reader.poll())
      if (m.step <= start_step) kept += metric_to_json_line(m) + "\n";
    for (const std::string& problem : reader.problems()) log(problem);
    dropped += reader.skipped();
    if (dropped > 0) log(std::to_string(dropped) + " damaged line(s) of metrics.jsonl dropped");
    write_file_atomic(paths.metrics, kept);
  }
  // A new run starts its curve afresh (a killed start may have left a file); a resumed one goes on.
  std::ofstream metrics_out(paths.metrics, spec.resume ? std::ios::app : std::ios::trunc);
  if (!metrics_out) throw std::runtime_error("cannot write " + paths.metrics);

  MetricRecord last_eval;
  double last_train_loss = NAN, last_tokens_per_s = NAN;
  auto emit = [&](MetricRecord m) {
    m.total_steps = total_steps;
    metrics_out << metric_to_json(m).dump() << "\n";
    metrics_out.flush();
    if (cb.on_metric) cb.on_metric(m);
  };
  auto wall = [&] { return wall_offset + seconds_since(started); };

  // Keep-best: the weights of the lowest validation loss so far, beside the latest ones
  // (which resume needs). A resumed run continues from the best it had.
  const std::string best_weights = (fs::path(spec.run_dir) / "best.safetensors").string();
  double best_val_loss = INFINITY;
  int64_t best_step = -1;
  if (spec.resume && ts.keep_best && fs::exists(best_weights)) {
    const auto state = read_run_config(spec.run_dir).value("state", nlohmann::json::object());
    best_val_loss = state.value("best_val_loss", INFINITY);
    best_step = state.value("best_step", int64_t{-1});
  }
  int64_t last_checkpoint = start_step;
  auto checkpoint = [&](int64_t step) {
    // Non-finite weights never reach the disk: the last finite checkpoint stays the newest.
    const std::string bad = first_non_finite(model);
    if (!bad.empty())
      throw Diverged("training diverged by step " + std::to_string(step) + ": '" + bad +
                     "' holds NaN or infinite values");
    nlohmann::json run;
    run["format"] = kCheckpointFormat;
    run["model"] = nlohmann::json::parse(to_json(model_config));
    run["training"] = settings_to_json(ts);
    nlohmann::json data_info;
    data_info["path"] = fs::absolute(spec.data_path).string();
    data_info["tokenizer_hash"] = tokenizer->hash();
    data_info["train_tokens"] = static_cast<int64_t>(data.train.size());
    data_info["val_tokens"] = static_cast<int64_t>(data.val.size());
    data_info["documents"] = data.documents;
    data_info["train_documents"] = data.train_documents;
    data_info["val_documents"] = data.val_documents;
    data_info["dropped_short"] = data.dropped_short;
    data_info["val_fraction"] = kValFraction;
    data_info["split_seed"] = kSplitSeed;
    run["data"] = data_info;
    run["state"] = {{"step", step},
                    {"total_steps", total_steps},
                    {"steps_per_epoch", steps_per_epoch},
                    {"batch_size", batch},
                    {"wall_s", wall()},
                    {"finished", step >= total_steps}};
    if (best_step >= 0) {
      run["state"]["best_step"] = best_step;
      run["state"]["best_val_loss"] = best_val_loss;
    }
    nlohmann::json metrics = {{"step", step}, {"epoch", static_cast<double>(step) / steps_per_epoch}};
    if (std::isfinite(last_train_loss)) metrics["train_loss"] = last_train_loss;
    if (std::isfinite(last_eval.val_loss)) {
      metrics["val_loss"] = last_eval.val_loss;
      metrics["val_accuracy"] = last_eval.val_accuracy;
      metrics["val_step"] = last_eval.step;
    }
    if (std::isfinite(last_tokens_per_s)) metrics["tokens_per_s"] = last_tokens_per_s;
    run["metrics"] = metrics;
    write_checkpoint(paths, step, model, optimizer, run.dump(2) + "\n");
    last_checkpoint = step;
  };
  if (!spec.resume) checkpoint(0);  // a run folder is loadable (and resumable) from the start
  started_run = true;
  auto report_weights = [&](int64_t step) {
    if (cb.on_weights) cb.on_weights(step, mixer_weights(model));
  };
  report_weights(start_step);

  auto validate_now = [&](int64_t step, bool full) {
    const auto t0 = Clock::now();
    const WindowEval ev = evaluate_windows(model, data.val, val_starts, std::min<int64_t>(batch, 64),
                                           full ? 0 : ts.eval_batches, device, bf16, {}, &stop_flag);
    MetricRecord m;
    m.kind = "eval";
    m.step = step;
    m.epoch = static_cast<double>(step) / steps_per_epoch;
    m.val_loss = ev.loss;
    m.val_accuracy = ev.accuracy;
    m.wall_s = wall();
    emit(m);
    last_eval = m;
    report_weights(step);
    if (ts.keep_best && std::isfinite(m.val_loss) && !(m.val_loss >= best_val_loss)) {
      best_val_loss = m.val_loss;
      best_step = step;
      save_weights(model, best_weights);
      log("best validation loss so far (" + std::to_string(m.val_loss) + ") at step " + std::to_string(step) +
          ": kept in best.safetensors");
    }
    return seconds_since(t0);
  };

  // ---- the loop --------------------------------------------------------------------------------
  std::vector<int64_t> order;
  int64_t order_epoch = -1;
  double loss_sum = 0;
  int64_t loss_count = 0, tokens_since = 0;
  auto timer = Clock::now();
  double excluded_s = 0;  // evaluation and checkpoint time, kept out of tokens/s
  int64_t step = start_step;
  TrainSummary summary;
  bool warned_far_off = false;
  try {
    while (step < total_steps) {
      if (pause_flag) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !pause_flag || stop_flag; });
        timer = Clock::now();
        tokens_since = 0;
        excluded_s = 0;
      }
      if (stop_flag) break;
      const int64_t epoch = step / steps_per_epoch, index = step % steps_per_epoch;
      if (epoch != order_epoch) {
        // A fresh permutation of the windows per epoch, from the seed: resumable exactly.
        order.resize(windows);
        std::iota(order.begin(), order.end(), 0);
        std::mt19937_64 rng(ts.seed * 1000003ULL + static_cast<uint64_t>(epoch));
        std::shuffle(order.begin(), order.end(), rng);
        order_epoch = epoch;
      }
      std::vector<int64_t> starts(batch);
      for (int64_t b = 0; b < batch; ++b) starts[b] = train_starts[static_cast<size_t>(order[index * batch + b])];
      auto tokens = make_batch(data.train, starts, T, device);
      auto x = tokens.narrow(1, 0, T), y = tokens.narrow(1, 1, T);
      const double lr = learning_rate(ts, step, total_steps);

      torch::manual_seed(step_seed(ts.seed, step));  // this step's dropout masks, whatever came before
      torch::Tensor loss;
      {
        compat::AutocastGuard autocast(device, bf16);
        loss = model->loss(x, y);
      }
      const double loss_value = loss.item<double>();
      if (!std::isfinite(loss_value))
        throw Diverged("training diverged at step " + std::to_string(step + 1) + ": the loss is " +
                       std::to_string(loss_value));
      optimizer.zero_grad();
      loss.backward();
      double grad_norm = 0;
      if (ts.grad_clip > 0)
        grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), ts.grad_clip);
      else
        for (const auto& p : model->parameters())
          if (p.grad().defined()) grad_norm += p.grad().pow(2).sum().item<double>();
      if (!std::isfinite(grad_norm))
        throw Diverged("training diverged at step " + std::to_string(step + 1) + ": the gradient is not finite (loss " +
                       std::to_string(loss_value) + ")");
      optimizer.step(lr);
      loss_sum += loss_value;
      ++loss_count;
      tokens_since += batch * T;
      ++step;

      if (step % ts.log_every == 0 || step == total_steps) {
        const double secs = std::max(1e-9, seconds_since(timer) - excluded_s);
        MetricRecord m;
        m.kind = "train";
        m.step = step;
        m.epoch = static_cast<double>(step) / steps_per_epoch;
        m.train_loss = loss_sum / static_cast<double>(loss_count);
        m.tokens_per_s = static_cast<double>(tokens_since) / secs;
        m.lr = lr;
        m.wall_s = wall();
        emit(m);
        last_train_loss = m.train_loss;
        last_tokens_per_s = m.tokens_per_s;
        if (!warned_far_off && step > std::max<int64_t>(ts.warmup_steps, 2 * ts.log_every) &&
            m.train_loss > 2 * std::max(unigram, 1.0)) {
          warned_far_off = true;
          summary.warning = "the training loss " + num(m.train_loss) + " at step " + std::to_string(step) +
                            " is far above the unigram baseline " + num(unigram) +
                            " (a model that only knows token frequencies): the learning rate " + num(ts.lr) +
                            " may be too high; try a lower --lr";
          log("warning: " + summary.warning);
        }
        loss_sum = 0;
        loss_count = 0;
        tokens_since = 0;
        excluded_s = 0;
        timer = Clock::now();
      }
      const bool epoch_end = step % steps_per_epoch == 0;
      if ((ts.eval_every > 0 && step % ts.eval_every == 0) || epoch_end || step == total_steps) {
        try {
          excluded_s += validate_now(step, epoch_end);
        } catch (const Cancelled&) {
          break;  // stop() during validation: keep the trained weights
        }
      }
      if ((ts.checkpoint_every > 0 && step % ts.checkpoint_every == 0) || epoch_end || step == total_steps) {
        const auto t0 = Clock::now();
        checkpoint(step);
        excluded_s += seconds_since(t0);
      }
      progress("training", static_cast<double>(step) / static_cast<double>(total_steps));
    }
    if (stop_flag && step < total_steps) {
      checkpoint(step);
      log("stopped at step " + std::to_string(step) + "; continue with --resume");
    }
  } catch (const Diverged& e) {
    throw std::runtime_error(std::string(e.what()) + ". The run folder keeps the checkpoint of step " +
                             std::to_string(last_checkpoint) +
                             ", the last with finite weights; continue from it with a lower learning rate: "
                             "hsm train --resume --out " + spec.run_dir + " --lr " + num(ts.lr / 10) + " (it was " +
                             num(ts.lr) + ")" + (ts.grad_clip > 0 ? "" : ", and a gradient clip (--grad-clip 1)"));
  }

  summary.steps = step;
  summary.total_steps = total_steps;
  summary.epochs = static_cast<double>(step) / steps_per_epoch;
  summary.val_loss = last_eval.val_loss;
  summary.val_accuracy = last_eval.val_accuracy;
  summary.train_loss = last_train_loss;
  summary.tokens_per_s = last_tokens_per_s;
  summary.wall_s = wall();
  summary.stopped = step < total_steps;
  summary.run_dir = spec.run_dir;
  return summary;
}

}  // namespace hsm
