#pragma once
// Training (SPEC §5): AdamW with the paper's defaults, optional warm-up + cosine decay,
// gradient clipping, periodic evaluation and checkpoints, pause / resume / stop from
// another thread. Plain C++ API; LibTorch stays inside the engine.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "hsm/progress.h"

namespace hsm {

// Saved in config.json as "training"; every field has the paper's value as default
// (HSM §7: batch 256, lr 0.002, dropout 0.1 (in ModelConfig), 20 epochs, AdamW).
struct TrainSettings {
  int64_t steps = 0;           // optimizer steps to run in total; 0 = use epochs
  double epochs = 20;          // passes over the training split (fractions allowed)
  int64_t batch_size = 256;
  double lr = 0.002;
  double weight_decay = 0.01;  // AdamW decoupled decay, on weight matrices only
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double grad_clip = 1.0;      // max global gradient norm; 0 = off
  int64_t warmup_steps = 0;    // linear warm-up from 0
  bool cosine = false;         // cosine decay from lr to min_lr over the run
  double min_lr = 0.0;
  int64_t eval_every = 200;    // steps between validations (and at every epoch end); 0 = epoch ends only
  int64_t eval_batches = 20;   // batches per periodic validation; epoch-end validation uses the whole split
  int64_t checkpoint_every = 500;  // steps between checkpoints (also at epoch ends, on stop, at the end)
  int64_t log_every = 10;      // steps between train-loss records
  uint64_t seed = 1337;
  std::string device = "auto"; // cpu, cuda, cuda:N, auto
  int threads = 0;             // CPU threads for LibTorch; 0 = the measured default
  bool bf16 = true;            // bf16 autocast on CUDA where LibTorch supports it
};

// One line of metrics.jsonl and one callback to the studio.
struct MetricRecord {
  std::string kind;            // "train" (running loss) or "eval" (validation)
  int64_t step = 0;
  int64_t total_steps = 0;     // steps the run is set to reach (for progress and ETA)
  double epoch = 0;            // fractional: step / steps per epoch
  double train_loss = NAN;     // mean over the steps since the last record
  double val_loss = NAN;
  double val_accuracy = NAN;   // top-1 next-token accuracy
  double tokens_per_s = NAN;
  double lr = NAN;
  double wall_s = 0;           // seconds of training so far (across resumes)
};

// What to train: a new run, or the continuation of one (resume).
struct RunSpec {
  std::string run_dir;         // created if missing; holds everything of the run
  std::string data_path;       // corpus file or folder (corpus.h)
  ModelConfig model;           // ignored on resume (taken from the run folder)
  TrainSettings train;
  std::string tokenizer_path;  // existing tokenizer.model; "" = train one on data_path
  std::string cache_dir;       // encoded-corpus cache; "" = <run_dir>/../.hsm-cache next to the runs
  bool resume = false;         // continue run_dir from its last checkpoint
};

struct TrainCallbacks {
  std::function<void(const MetricRecord&)> on_metric;
  // Free-form progress: data preparation stages, then ("training", step / total).
  ProgressFn on_progress;
  std::function<void(const std::string&)> on_log;  // one human line at a time
  // The learned mixer weights (diagnostics.h), at the start (step 0 or the resumed step)
  // and after every validation, so the Weights view follows training live.
  std::function<void(int64_t step, const std::vector<MixerWeights>&)> on_weights;
};

struct TrainSummary {
  int64_t steps = 0;
  int64_t total_steps = 0;
  double epochs = 0;
  double val_loss = NAN, val_accuracy = NAN, train_loss = NAN;
  double tokens_per_s = NAN;
  double wall_s = 0;
  bool stopped = false;        // stop() was called before the end
  std::string run_dir;
};

class Trainer {
 public:
  Trainer(RunSpec spec, TrainCallbacks callbacks = {});
  ~Trainer();
  // Prepares data and model, then trains; blocks the calling thread (run it on a worker:
  // LibTorch's thread-local state lives there). Throws on bad input.
  TrainSummary run();
  // From any thread.
  void pause();
  void resume();
  void stop();  // finishes the current step, writes a checkpoint, returns from run()
  bool paused() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The training settings stored in a run folder's config.json (for --resume).
TrainSettings stored_settings(const std::string& run_dir);
// The corpus a run was trained on (config.json's data.path).
std::string stored_data_path(const std::string& run_dir);

// CPU threads for LibTorch (intra-op) and OpenBLAS; n <= 0 picks the measured default.
// Returns the number in use.
int set_cpu_threads(int n);

}  // namespace hsm
