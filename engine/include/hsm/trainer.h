#pragma once
// Training (docs/architecture.md, "Data and training"): AdamW with the paper's defaults,
// optional warm-up + cosine decay, gradient clipping, periodic evaluation and checkpoints,
// pause / resume / stop from another thread. Plain C++ API; LibTorch stays inside the engine.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/cpu_threads.h"
#include "hsm/diagnostics.h"
#include "hsm/distributed.h"
#include "hsm/progress.h"
#include "hsm/run_folder.h"

namespace hsm {

// What to train: a new run, or the continuation of one (resume).
struct RunSpec {
  std::string run_dir;         // created if missing; holds everything of the run
  std::string data_path;       // corpus file or folder (corpus.h)
  // A synthetic task instead of a corpus, "NAME[:key=value,...]" (hsm/tasks.h): the loss on its
  // answer positions only; validation reports answer and sequence accuracy. The model's
  // vocabulary and context must fit it (hsm/task_run.h). On resume "" = the run's own task;
  // another one is refused.
  std::string task;
  ModelConfig model;           // ignored on resume (taken from the run folder)
  TrainSettings train;
  std::string tokenizer_path;  // existing tokenizer.model; "" = train one on data_path
  std::string cache_dir;       // encoded-corpus cache; "" = default_cache_dir() (hsm/dataset.h)
  bool resume = false;         // continue run_dir from its last checkpoint
  // This process as one rank of a data-parallel run (hsm/distributed.h; world_size 1: alone).
  // Not a property of the run: a run trained on N ranks resumes on M. train.batch_size stays
  // the run's (global) batch; each rank trains batch_size / world_size windows of it. Rank 0
  // alone writes the run folder and calls the callbacks.
  DistributedOptions dist;
  int threads = 0;  // > 0: LibTorch threads for this process, over train.threads (a rank's share)
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
  double answer_accuracy = NAN, sequence_accuracy = NAN;  // a task run's last validation
  double tokens_per_s = NAN;
  double wall_s = 0;
  bool stopped = false;        // stop() was called before the end
  bool started = false;        // training began (false: stopped while the data was prepared; no run)
  std::string run_dir;
  // Not empty when training went on but looks wrong (a loss far above the unigram baseline
  // after the warm-up): the words to show the user.
  std::string warning;
};

class Trainer {
 public:
  Trainer(RunSpec spec, TrainCallbacks callbacks = {});
  ~Trainer();
  // Prepares data and model, then trains; blocks the calling thread (run it on a worker:
  // LibTorch's thread-local state lives there). Holds the run folder's lock (hsm/run_folder.h)
  // while it runs: a second trainer of the folder is refused (RunBusy). Throws on bad input
  // (a SettingError for a setting, hsm/settings.h), and when training diverges (the message
  // names the step, the last finite checkpoint the folder keeps, and what to change). A new
  // run that fails before its first checkpoint leaves no half-made run folder.
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

// set_cpu_threads and cpu_threads_note: hsm/cpu_threads.h (included above).

}  // namespace hsm
