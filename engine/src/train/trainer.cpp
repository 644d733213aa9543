#include "hsm/trainer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
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
#include "train/cuda_graph_step.h"
#include "kernels/blas_threads.h"
#include "eval/mixing_matrix.h"
#include "train/checkpoint.h"
#include "model/weights_io.h"
#include "run/run_json.h"
#include "train/distributed.h"
#include "eval/evaluation.h"
#include "eval/task_data.h"
#include "io/hash_util.h"
#include "hsm/corpus.h"
#include "hsm/dataset.h"
#include "hsm/settings.h"
#include "hsm/tokenizer.h"
#include "train/diagnostics_recorder.h"
#include "train/trace_recorder.h"
#include "hsm/formation.h"
#include "io/io_util.h"
#include "hsm/run_folder.h"
#include "model/cuda_fused.h"
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
  bool writer = true;  // rank 0 of a data-parallel run (or the only process): writes and reports

  void log(const std::string& line) {
    if (writer && cb.on_log) cb.on_log(line);
  }
  void progress(const std::string& stage, double f) {
    if (writer && cb.on_progress) cb.on_progress(stage, f);
  }
  TrainSummary run();
  struct Run;  // one call of run(): its steps, in order (below)
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

// One training run, as the named steps Trainer::Impl::run() takes in order. The state they
// share (the folder, the data, the model, the curve so far) is this object's.
struct Trainer::Impl::Run {
  Impl& trainer;
  RunSpec& spec;
  const Clock::time_point started = Clock::now();
  TrainSettings ts;
  RunFolder paths;
  std::string cache_dir;

  // the folder
  bool made_folder = false;  // this run created it
  std::optional<RunLock> lock;
  bool cleanup_armed = false;  // the folder is ours (locked): a failed start removes what it made
  bool started_run = false;    // the folder holds a loadable checkpoint (nothing to clean up)
  // model config, tokenizer, previous state
  ModelConfig model_config;
  int64_t start_step = 0;
  double wall_offset = 0;
  std::optional<Tokenizer> tokenizer;
  std::optional<RunFolder::Checkpoint> resume_from;
  // data: a corpus, or a synthetic task (eval/task_data.h)
  std::optional<TaskData> task;
  TokenDataset data;
  int64_t T = 0, windows = 0, batch = 0, steps_per_epoch = 1, total_steps = 0;
  std::vector<int64_t> train_starts, val_starts;
  double unigram = 0;
  // model and optimizer
  torch::Device device{torch::kCPU};
  bool bf16 = false;
  Gpt model{nullptr};
  std::optional<AdamW> optimizer;
  // the curve and the checkpoints
  std::string metrics_failure;  // why metrics.jsonl is behind (lines held in memory), or ""
  std::optional<DiagnosticsRecorder> diagnostics;  // RUN/diagnostics.jsonl (train/diagnostics_recorder.h)
  std::optional<TraceRecorder> traces;             // RUN/traces.jsonl (train/trace_recorder.h)
  bool snapshots_full = false;                     // RunFolder::kMaxSnapshots kept (said once)
  MetricRecord last_eval;
  double last_train_loss = NAN, last_tokens_per_s = NAN;
  std::string best_weights;
  double best_val_loss = INFINITY;
  int64_t best_step = -1, last_checkpoint = 0;
  // (step, validation loss) of every validation so far, a resumed run's from metrics.jsonl: what
  // the stall stop (ts.stop_stall_steps) compares
  std::vector<std::pair<int64_t, double>> val_history;
  // the loop
  std::vector<int64_t> order;
  int64_t order_epoch = -1, step = 0;
  double loss_sum = 0;
  int64_t loss_count = 0, tokens_since = 0;
  // On CUDA (one process) a step does not wait for the GPU: its loss is summed on the device and
  // a non-finite loss or gradient is flagged there (the update is then skipped, AdamW::clip_and_step);
  // settle() reads both at the steps that log, validate or checkpoint.
  bool deferred = false;
  torch::Tensor pending_loss_sum, pending_bad;
  int64_t settled_step = 0;  // the last step whose loss and gradient are known to be finite
  Clock::time_point timer;
  double excluded_s = 0;  // evaluation and checkpoint time, kept out of tokens/s
  bool warned_far_off = false;
  bool stopped_early = false;  // reached ts.stop_accuracy, or stalled (ts.stop_stall_steps): done, before total_steps
  bool validation_stopped = false;  // stop() came during the validation of `step`: it has no val point
  TrainSummary summary;
  // data parallel (train/distributed.h): this rank's share of each batch, the stop every rank
  // agreed on, and where a step's time went (docs/distributed.md: the overlap)
  std::unique_ptr<DataParallel> dp;
  bool writer = true;  // writes the run folder: rank 0, or the only process
  int64_t rank_batch = 0;
  bool stop_agreed = false;
  double forward_s = 0, backward_s = 0, exposed_comm_s = 0;
  int64_t timed_steps = 0;

  explicit Run(Impl& t) : trainer(t), spec(t.spec), ts(t.spec.train), paths(t.spec.run_dir) {}
  ~Run() { clean_up_failed_start(); }

  void log(const std::string& line) { trainer.log(line); }
  double wall() const { return wall_offset + seconds_since(started); }

  void join_group();
  void prepare();
  bool open_task();
  void prepare_task_data();
  void prepare_corpus_data();
  void split_batches();
  WindowEval evaluate_task(bool full);
  TaskScore task_score;  // the last validation's, on a task
  bool stop_now() const { return dp ? stop_agreed : trainer.stop_flag.load(); }
  WindowEval evaluate_validation(bool full);
  double global_mean_loss(double loss_value);
  void backward(torch::Tensor& loss);
  void lock_folder();
  void load_previous_state_or_tokenizer();
  void prepare_data();
  // A resume at the last step whose validation a stop interrupted (issue 46): that validation
  // is run now, not skipped.
  bool final_validation_missing() const {
    return spec.resume && total_steps == start_step && start_step > 0 && last_eval.step != start_step;
  }
  bool finished_already() const { return spec.resume && total_steps == start_step && !final_validation_missing(); }
  void restore_last_metrics(const nlohmann::json& metrics);
  TrainSummary finished_summary() const;
  TrainSummary finished_early_summary(const std::string& why);
  void build_model();
  void open_metrics();
  void open_diagnostics();
  void record_diagnostics(int64_t at);
  void record_trace(const MetricRecord& m);
  void keep_snapshot(int64_t at);
  void emit(MetricRecord m);
  void restore_best();
  void restore_val_history();
  std::string stalled(int64_t at) const;
  std::string early_stop(int64_t at) const;
  std::string stopped_early_already() const;
  void checkpoint(int64_t at);
  void report_weights(int64_t at);
  double run_validation(int64_t at, bool full);
  void shuffle_for_epoch(int64_t epoch);
  double train_step(double lr);
  void settle();
  // The deferred step's loss and not-finite flag, added to those not yet settled.
  void add_pending(const torch::Tensor& loss, const torch::Tensor& bad);
  // The step as a CUDA graph (train/cuda_graph_step.h): recorded once after kEagerStepsFirst
  // eager steps (cuBLAS handles and autocast's first casts happen outside the recording), then
  // replayed; a step it cannot take (another batch shape) and a recording that fails stay eager.
  static constexpr int64_t kEagerStepsFirst = 3;
  bool graph_wanted = false;
  int64_t eager_steps = 0;
  std::unique_ptr<CudaGraphStep> graph;
  void record_graph(const std::vector<torch::Tensor>& example);
  void log_training(double lr);
  void loop();
  TrainSummary finish();
  void clean_up_failed_start();
};

TrainSummary Trainer::Impl::run() {
  validate_train_settings(spec.train);
  if (spec.run_dir.empty()) throw std::invalid_argument("no run folder given (--out)");
  Run r(*this);
  r.cache_dir = spec.cache_dir.empty() ? default_cache_dir() : spec.cache_dir;
  r.join_group();
  r.prepare();
  if (r.finished_already()) return r.finished_summary();
  r.restore_val_history();
  // Before the model is built and the run's files are opened: nothing of it is touched.
  if (const std::string why = r.stopped_early_already(); !why.empty()) return r.finished_early_summary(why);
  r.build_model();
  if (r.writer) {
    r.open_metrics();
    r.open_diagnostics();
    r.traces.emplace(r.paths, r.ts, r.task ? &r.task->task() : nullptr, r.tokenizer ? &*r.tokenizer : nullptr,
                     r.model->config, r.spec.resume, r.start_step, [&r](const std::string& l) { r.log(l); });
    if (r.spec.resume) r.paths.drop_snapshots_after(r.start_step);
  }
  r.restore_best();
  if (!spec.resume) r.checkpoint(0);  // a run folder is loadable (and resumable) from the start
  r.started_run = true;
  r.report_weights(r.start_step);
  r.loop();
  return r.finish();
}

// ---- data parallel: the group, and rank 0 preparing the folder and the data first ---------------
void Trainer::Impl::Run::join_group() {
  if (!spec.dist.enabled()) return;
  dp = std::make_unique<DataParallel>(spec.dist, ts.device);
  writer = trainer.writer = dp->rank() == 0;
  log("data parallel: rank " + std::to_string(dp->rank()) + " of " + std::to_string(dp->world_size()) + " (" +
      dp->backend() + " on " + dp->device().str() + ", rendezvous " + spec.dist.master_addr + ":" +
      std::to_string(spec.dist.master_port) + ")" + (dp->backend_note().empty() ? "" : ": " + dp->backend_note()));
}

// Rank 0 locks the folder, trains or loads the tokenizer and encodes the corpus into the cache;
// then the others read what it made (they write nothing and take no lock). On several machines
// the run folder and the corpus are at the same path on each (a shared file system).
void Trainer::Impl::Run::prepare() {
  if (!dp) {
    lock_folder();
    load_previous_state_or_tokenizer();
    prepare_data();
    return;
  }
  if (writer) {
    try {
      lock_folder();
      load_previous_state_or_tokenizer();
      prepare_data();
    } catch (const std::exception& e) {
      dp->publish_ready(e.what());
      throw;
    }
    dp->publish_ready("");
  } else {
    dp->await_ready();
    load_previous_state_or_tokenizer();
    prepare_data();
  }
}

// The mean loss over every rank's windows (the global batch's, as one process would log it).
double Trainer::Impl::Run::global_mean_loss(double loss_value) {
  if (!dp) return loss_value;
  // The stop request travels with it: every rank stops after the same step.
  auto t = torch::tensor({loss_value, trainer.stop_flag ? 1.0 : 0.0}, torch::kDouble);
  dp->guarded("the all-reduce of the loss", [&] { dp->all_reduce_sum(t); });
  if (t[1].item<double>() > 0) stop_agreed = true;
  return t[0].item<double>() / dp->world_size();
}

// loss.backward(); on several ranks the Reducer all-reduces the gradients (their mean) in
// buckets while backward runs. Timed: the time from the last gradient's hook to the end of
// backward is communication the backward pass did not hide.
void Trainer::Impl::Run::backward(torch::Tensor& loss) {
  const auto t0 = Clock::now();
  if (!dp) {
    loss.backward();
    backward_s += seconds_since(t0);
    return;
  }
  dp->prepare_backward(loss);
  dp->guarded("the gradient all-reduce", [&] { loss.backward(); });
  const double total = seconds_since(t0);
  backward_s += total;
  exposed_comm_s += std::max(0.0, total - dp->last_gradient_ready_s());
}

// Validation split over the ranks (each a contiguous share of the windows one process would
// evaluate, summed), so every rank holds the same result and none waits for another's.
WindowEval Trainer::Impl::Run::evaluate_validation(bool full) {
  if (task) return evaluate_task(full);
  const int64_t eval_batch = std::min<int64_t>(batch, 64);
  const int64_t max_batches = full ? 0 : ts.eval_batches;
  if (!dp)
    return evaluate_windows(model, data.val, val_starts, eval_batch, max_batches, device, bf16, {}, &trainer.stop_flag);
  auto n = static_cast<int64_t>(val_starts.size());
  if (max_batches > 0) n = std::min(n, max_batches * eval_batch);
  const int64_t world = dp->world_size(), r = dp->rank();
  const std::vector<int64_t> share(val_starts.begin() + n * r / world, val_starts.begin() + n * (r + 1) / world);
  // No cancel: a rank leaving validation alone would leave the others waiting.
  const WindowEval mine = evaluate_windows(model, data.val, share, eval_batch, 0, device, bf16, {}, nullptr);
  const auto tokens = static_cast<double>(mine.tokens);
  auto t = torch::tensor({mine.loss * tokens, mine.accuracy * tokens, tokens}, torch::kDouble);
  dp->guarded("the all-reduce of the validation", [&] { dp->all_reduce_sum(t); });
  WindowEval all;
  all.tokens = static_cast<int64_t>(t[2].item<double>());
  if (all.tokens > 0) {
    all.loss = t[0].item<double>() / t[2].item<double>();
    all.accuracy = t[1].item<double>() / t[2].item<double>();
  }
  return all;
}

// ---- the run folder: locked for this trainer, cleaned of what a killed one left ----------------
void Trainer::Impl::Run::lock_folder() {
  if (spec.resume && !fs::exists(paths.config))
    throw std::invalid_argument("'" + spec.run_dir + "' is not a run folder: nothing to resume (train a new run with "
                                "--preset or --config)");
  if (!spec.resume && fs::exists(paths.config))
    throw std::invalid_argument("'" + spec.run_dir +
                                "' already holds a run; continue it with --resume or choose another --out");
  // A new run that fails before its first checkpoint leaves nothing behind: the folder goes if
  // this trainer made it, else the files it made in it (clean_up_failed_start).
  made_folder = !spec.resume && !fs::exists(spec.run_dir);
  std::error_code mkdir_error;
  fs::create_directories(spec.run_dir, mkdir_error);
  if (mkdir_error)
    throw std::runtime_error("cannot create the run folder '" + spec.run_dir + "': " + mkdir_error.message());
  try {
    paths.check_no_links();  // nothing written through a link out of the folder (issue 34)
    lock.emplace(spec.run_dir);
  } catch (...) {
    if (made_folder) fs::remove(spec.run_dir, mkdir_error);
    throw;
  }
  started_run = spec.resume;
  cleanup_armed = true;
  paths.remove_stale_temporaries();
}

void Trainer::Impl::Run::clean_up_failed_start() {
  if (!cleanup_armed || started_run) return;
  paths.clear(made_folder);
}

// ---- model config, tokenizer, previous state ----------------------------------------------------
void Trainer::Impl::Run::load_previous_state_or_tokenizer() {
  if (spec.resume) {
    // The newest complete checkpoint, whatever the top-level files say (a kill between its
    // publication and their update leaves them a step behind); a run written before step
    // folders resumes from its top-level files.
    resume_from = paths.resume_checkpoint([this](const std::string& l) { log(l); });
    const std::string config_file = resume_from ? resume_from->config : paths.config;
    const nlohmann::json run = read_run_config(spec.run_dir);  // checks the format
    const nlohmann::json at =
        resume_from ? parse_run_config(read_text_file(config_file, "checkpoint config"), config_file) : run;
    model_config = config_from_json(at["model"].dump(), config_file);
    const nlohmann::json state = at.value("state", nlohmann::json::object());
    start_step = state.value("step", int64_t{0});
    wall_offset = state.value("wall_s", 0.0);
    restore_last_metrics(at.value("metrics", nlohmann::json::object()));
    if (spec.data_path.empty()) spec.data_path = at.value("data", nlohmann::json::object()).value("path", "");
    if (!open_task()) tokenizer = load_run_tokenizer(spec.run_dir, at);
    if (writer && resume_from && run.value("state", nlohmann::json::object()).value("step", int64_t{-1}) != start_step)
      paths.refresh_view(*resume_from);  // what eval and the studio read catches up
    log("resuming " + spec.run_dir + " at step " + std::to_string(start_step) +
        (resume_from ? " (checkpoint " + resume_from->dir + ")" : ""));
    return;
  }
  model_config = spec.model;
  validate(model_config);
  if (open_task()) return;
  if (spec.data_path.empty()) throw std::invalid_argument("no training data given (--data)");
  if (!writer) {
    tokenizer = Tokenizer::load(paths.tokenizer);  // rank 0's, saved before it said "ready"
    model_config.vocab_size = tokenizer->vocab_size();
    return;
  }
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
      to.progress = trainer.cb.on_progress;
      to.cancel = &trainer.stop_flag;
      fs::create_directories(cache_dir);
      tokenizer = Tokenizer::train(spec.data_path, cached.string(), to);
    }
  }
  paths.write_tokenizer(*tokenizer);
  if (tokenizer->vocab_size() != model_config.vocab_size) {
    log("vocab_size set to the tokenizer's " + std::to_string(tokenizer->vocab_size()) + " (config said " +
        std::to_string(model_config.vocab_size) + ")");
    model_config.vocab_size = tokenizer->vocab_size();
  }
}

// ---- a task instead of a corpus (issue 38): no tokenizer, examples made as they are needed -------
bool Trainer::Impl::Run::open_task() {
  const std::string recorded = spec.resume ? run_task(spec.run_dir) : "";
  if (spec.resume && !spec.task.empty()) {
    if (recorded.empty())
      throw TaskError("--task: '" + spec.run_dir + "' trains on a corpus, not a task; resume it without --task");
    const std::string given = parse_task(spec.task)->spec();
    if (given != recorded)
      throw TaskError("--task " + given + ": the run trains on " + recorded +
                      "; resume it without --task, or train another task in a new run (--out)");
  }
  const std::string name = spec.resume ? recorded : spec.task;
  if (name.empty()) return false;
  if (dp) throw std::invalid_argument("--task: a task trains on one process; drop the data-parallel ranks");
  task.emplace(parse_task(name));
  check_model_fits_task(model_config, task->task());
  if (writer && !spec.resume)
    paths.write_task(task->task().spec());
  return true;
}

void Trainer::Impl::Run::prepare_task_data() {
  const Task& t = task->task();
  T = t.context();
  windows = t.train_examples();
  train_starts.resize(static_cast<size_t>(windows));  // example indices: the epoch's order shuffles them
  std::iota(train_starts.begin(), train_starts.end(), int64_t{0});
  // fixed_seq_qk's fixed sequence: the first validation example.
  const TaskExample first = t.example(TaskSplit::kValidation, 0);
  data.val.assign(first.tokens.begin(), first.tokens.end());
  unigram = std::log(static_cast<double>(t.vocab_size()));  // the loss of a uniform guess
  log("data: task " + t.spec() + ": " + std::to_string(windows) + " training examples of " + std::to_string(T) +
      " tokens, made as they are needed");
}

// MAD's test sets hold 1,280 examples; a validation between steps scores eval_batches x 64 of them.
WindowEval Trainer::Impl::Run::evaluate_task(bool full) {
  constexpr int64_t kFull = 1280, kBatch = 64;
  const int64_t n = full || ts.eval_batches <= 0 ? kFull : std::min(kFull, ts.eval_batches * kBatch);
  task_score = task->score(model, TaskSplit::kValidation, n, kBatch, device, &trainer.stop_flag);
  WindowEval ev;
  ev.loss = task_score.loss;
  ev.accuracy = task_score.answer_accuracy;
  ev.tokens = task_score.answers;
  return ev;
}

// ---- data: the split, the windows, the steps ----------------------------------------------------
void Trainer::Impl::Run::prepare_data() {
  if (ts.stop_accuracy > 0 && !task)
    throw std::invalid_argument("--stop-accuracy " + num(ts.stop_accuracy) + ": a corpus run has no answers; it is "
                                "for a task run (--task)");
  if (ts.stop_accuracy > 0 && dp)
    throw std::invalid_argument("--stop-accuracy is for one process; train without --nproc, or without it");
  if (ts.stop_stall_steps > 0 && dp)
    throw std::invalid_argument("--stop-stall-steps is for one process; train without --nproc, or without it");
  if (task)
    prepare_task_data();
  else
    prepare_corpus_data();
  split_batches();
}

void Trainer::Impl::Run::prepare_corpus_data() {
  DatasetOptions data_options;
  data_options.context = model_config.context;
  data_options.val_fraction = kValFraction;
  data_options.seed = kSplitSeed;
  data_options.cache_dir = cache_dir;
  data_options.progress = trainer.cb.on_progress;
  data_options.cancel = &trainer.stop_flag;
  data = load_dataset(spec.data_path, *tokenizer, data_options);
  log("data: " + std::to_string(data.train.size()) + " train / " + std::to_string(data.val.size()) +
      " validation tokens from " + std::to_string(data.documents) + " documents (" +
      std::to_string(data.dropped_short) + " shorter than the context dropped)" + (data.from_cache ? ", cached" : ""));

  T = model_config.context;
  const WindowLayout layout = window_layout(ts.windows);
  const auto eot = static_cast<uint16_t>(tokenizer->end_of_text_id());
  train_starts = window_starts(data.train, T, layout, eot);
  val_starts = window_starts(data.val, T, layout, eot);
  windows = static_cast<int64_t>(train_starts.size());
  if (windows < 1)
    throw std::runtime_error("the training split holds no window of " + std::to_string(T + 1) + " tokens (" +
                             ts.windows + " layout)");
  unigram = unigram_entropy(data.train, model_config.vocab_size);
}

void Trainer::Impl::Run::split_batches() {
  batch = std::min(ts.batch_size, windows);
  if (batch < ts.batch_size) log("batch size lowered to " + std::to_string(batch) + " (all the training windows)");
  const int64_t world = dp ? dp->world_size() : 1;
  if (batch % world != 0 || batch < world)
    throw std::invalid_argument("the batch of " + std::to_string(batch) + " windows does not split evenly over " +
                                std::to_string(world) + " ranks: give a --batch per rank (the global batch is --batch x "
                                "ranks)");
  rank_batch = batch / world;
  if (dp)
    log("global batch " + std::to_string(batch) + " = " + std::to_string(rank_batch) + " per rank x " +
        std::to_string(world) + " ranks");
  steps_per_epoch = std::max<int64_t>(1, windows / batch);
  total_steps =
      ts.steps > 0 ? ts.steps : static_cast<int64_t>(std::ceil(ts.epochs * static_cast<double>(steps_per_epoch)));
  if (spec.resume && total_steps < start_step)
    throw std::invalid_argument(
        "the run is at step " + std::to_string(start_step) + " and is set to " + std::to_string(total_steps) +
        " steps: nothing to train. Give --steps above " + std::to_string(start_step) + " (or more --epochs) to continue it");
}

// The last curve points a checkpoint recorded (config.json's "metrics", run/run_json.h): a resumed
// run reports them until it makes its own, and writes them on in its checkpoints.
void Trainer::Impl::Run::restore_last_metrics(const nlohmann::json& metrics) {
  auto number = [&](const char* key) {
    const auto it = metrics.find(key);
    return it != metrics.end() && it->is_number() ? it->get<double>() : NAN;
  };
  last_train_loss = number("train_loss");
  last_tokens_per_s = number("tokens_per_s");
  last_eval.kind = "eval";
  last_eval.val_loss = number("val_loss");
  last_eval.val_accuracy = number("val_accuracy");
  const auto val_step = metrics.find("val_step");
  last_eval.step = std::isfinite(last_eval.val_loss) && val_step != metrics.end() && val_step->is_number_integer()
                       ? val_step->get<int64_t>()
                       : -1;
}

// A resume of a finished run: nothing to train; its own last numbers (issue 46: not NaN and an
// undefined tokens/s).
TrainSummary Trainer::Impl::Run::finished_summary() const {
  trainer.log("the run is finished at step " + std::to_string(start_step) + "; give --steps above it to train on");
  TrainSummary done;
  done.steps = done.total_steps = start_step;
  done.epochs = static_cast<double>(start_step) / steps_per_epoch;
  done.wall_s = wall_offset;
  done.val_loss = last_eval.val_loss;
  done.val_accuracy = last_eval.val_accuracy;
  done.train_loss = last_train_loss;
  done.tokens_per_s = last_tokens_per_s;
  done.started = true;
  done.run_dir = spec.run_dir;
  return done;
}

// A resume of a run that stopped early at its checkpoint (stopped_early_already): done there.
TrainSummary Trainer::Impl::Run::finished_early_summary(const std::string& why) {
  log("the run was done at its checkpoint: " + why);
  step = start_step;
  stopped_early = true;
  return finish();
}

// ---- model and optimizer ------------------------------------------------------------------------
void Trainer::Impl::Run::build_model() {
  // More threads than cores only wait on each other (1024 on two cores took ~860 OS threads and
  // a minute for four tokens, issue 65); the setting is kept as saved, the run uses the cores.
  int threads = spec.threads > 0 ? spec.threads : ts.threads;
  if (threads > machine_cores()) {
    log("note: --threads " + std::to_string(threads) + " is more than this machine's " +
        std::to_string(machine_cores()) + " cores; using " + std::to_string(machine_cores()));
    threads = machine_cores();
  }
  set_cpu_threads(threads);
  device = dp ? dp->device() : compat::parse_device(ts.device);  // a rank's own GPU (train/distributed.h)
  bf16 = ts.bf16 && device.is_cuda() && compat::autocast_supported();
  // HSM_STEP_SYNC (docs/performance.md, "On a GPU"): "every" reads each step's loss on the host (a
  // divergence's exact step on CUDA), "deferred" keeps it on the device on the CPU too (the tests).
  deferred = device.is_cuda() && !dp;
  if (const char* env = std::getenv("HSM_STEP_SYNC"); env && !dp) {
    if (std::string(env) == "every") deferred = false;
    if (std::string(env) == "deferred") deferred = true;
  }
  graph_wanted = deferred && !dp && CudaGraphStep::available(device);
  torch::manual_seed(ts.seed + static_cast<uint64_t>(start_step));
  if (spec.resume)  // the config against the weights' header, before a model of its size is built
    check_weights_fit(model_config, resume_from ? resume_from->weights : paths.weights,
                      resume_from ? resume_from->config : paths.config);
  model = Gpt(model_config);
  // fixed_seq_qk's fixed sequence: the first `context` tokens of the validation split (its
  // first document: shorter ones were dropped), saved with the weights (docs/mixers.md).
  if (!spec.resume && static_cast<int64_t>(data.val.size()) >= T)
    model->set_fixed_tokens(std::vector<int64_t>(data.val.begin(), data.val.begin() + T));
  model->to(device);
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
  optimizer.emplace(named, AdamWOptions{ts.lr, ts.beta1, ts.beta2, ts.eps, ts.weight_decay});
  if (spec.resume) {
    load_weights(model, resume_from ? resume_from->weights : paths.weights);  // check_weights_fit came first
    load_optimizer(*optimizer, resume_from ? resume_from->optimizer : paths.optimizer, start_step);
  }
  if (dp) dp->attach(model->parameters());
  log("model " + model_config.name + " on " + device.str() + (bf16 ? " (bf16 autocast)" : "") +
      (device.is_cuda() ? " (" + cuda_fused::describe() + ")" : "") + ", " +
      cpu_threads_note() + "; " + std::to_string(total_steps) + " steps of " + std::to_string(batch) + "x" +
      std::to_string(T) + " tokens, " + std::to_string(steps_per_epoch) + " steps per epoch");
}

// ---- metrics file: on resume, drop records past the checkpoint so the curve continues ------------
void Trainer::Impl::Run::open_metrics() {
  // A new run starts its curve afresh (a killed start may have left a file); a resumed one goes on.
  std::optional<std::string> kept;
  if (spec.resume && fs::exists(paths.metrics)) {
    kept.emplace();
    MetricsReader reader(spec.run_dir);
    for (const MetricRecord& m : reader.poll())
      if (m.step <= start_step) *kept += metric_to_json_line(m) + "\n";
    for (const std::string& problem : reader.problems()) log(problem);
    if (reader.skipped() > 0) log(std::to_string(reader.skipped()) + " damaged line(s) of metrics.jsonl dropped");
  }
  paths.start_metrics(kept);
}

// ---- diagnostics.jsonl: the probe text diagnosed at every validation (issue 23) -------------------
void Trainer::Impl::Run::open_diagnostics() {
  if (task) return;  // the probe text is text: a task has no tokenizer
  diagnostics.emplace(paths, ts.probe_text, spec.resume, start_step, [this](const std::string& l) { log(l); });
}

void Trainer::Impl::Run::record_diagnostics(int64_t at) {
  if (!diagnostics || !diagnostics->on()) return;
  try {
    diagnostics->record(model, *tokenizer, at, device);
    if (diagnostics->records() == 1)  // what it costs, once (docs/diagnostics.md §7)
      log("diagnostics.jsonl: a record of the probe text takes " +
          std::to_string(static_cast<int>(diagnostics->seconds() * 1000 + 0.5)) + " ms");
  } catch (const std::exception& e) {  // a diagnostic never ends the training it watches
    log("diagnostics.jsonl: no record at step " + std::to_string(at) + " and none after it: " + e.what());
    diagnostics.reset();
  }
}

// ---- traces.jsonl: the fixed example traced at validations (issue 67) ---------------------------
void Trainer::Impl::Run::record_trace(const MetricRecord& m) {
  if (!traces || !traces->due(m.step)) return;
  try {
    traces->record(model, m.step, m.val_loss, task ? m.answer_accuracy : m.val_accuracy);
    if (traces->records() == kMaxTraceRecords)
      log("traces.jsonl: " + std::to_string(kMaxTraceRecords) + " records, its bound: no more are recorded");
  } catch (const std::exception& e) {  // a trace never ends the training it watches
    log("traces.jsonl: no record at step " + std::to_string(m.step) + " and none after it: " + e.what());
    traces.reset();
  }
}

void Trainer::Impl::Run::emit(MetricRecord m) {
  if (!writer) return;
  m.total_steps = total_steps;
  // A failed write (a full disk) is neither torn nor the end of the curve: the record is held
  // and written before the next one; the log says when the file fell behind and caught up.
  const std::string failure = paths.append_metric(m);
  if (!failure.empty() && metrics_failure.empty())
    log("warning: cannot write metrics.jsonl (" + failure + ") at step " + std::to_string(m.step) +
        ": its records are kept in memory and written when the disk has room");
  else if (failure.empty() && !metrics_failure.empty())
    log("metrics.jsonl written again at step " + std::to_string(m.step) + ", with the records held meanwhile");
  metrics_failure = failure;
  if (trainer.cb.on_metric) trainer.cb.on_metric(m);
}

// Keep-best: the weights of the lowest validation loss so far, beside the latest ones (which
// resume needs). A resumed run continues from the best it had.
void Trainer::Impl::Run::restore_best() {
  best_weights = paths.best;
  last_checkpoint = start_step;
  if (spec.resume && ts.keep_best && fs::exists(best_weights)) {
    const auto state = read_run_config(spec.run_dir).value("state", nlohmann::json::object());
    best_val_loss = state.value("best_val_loss", INFINITY);
    best_step = state.value("best_step", int64_t{-1});
  }
}

// The stall stop's memory of a resumed run: its validations up to the checkpoint it continues from,
// so that a run killed and resumed stops where it would have stopped whole.
void Trainer::Impl::Run::restore_val_history() {
  if (!spec.resume || !writer || (ts.stop_stall_steps == 0 && ts.stop_accuracy <= 0)) return;
  for (const MetricRecord& m : read_metrics(spec.run_dir)) {
    if (m.kind != "eval" || m.step > start_step) continue;
    if (std::isfinite(m.val_loss)) val_history.emplace_back(m.step, m.val_loss);
    // config.json's metrics keep the loss and accuracy of the checkpoint's validation, not a
    // task's answer accuracy, which --stop-accuracy reads.
    if (m.step == start_step && last_eval.step == start_step) {
      last_eval.answer_accuracy = m.answer_accuracy;
      last_eval.sequence_accuracy = m.sequence_accuracy;
    }
  }
}

// The stall stop: the best validation loss of the validations at or before `at` - stop_stall_steps
// against the best of all. "" while the run still sheds at least stop_stall_gain of it; else the
// line that says why it ends. Not before the warm-up plus the window: a run is judged on steps
// at its full learning rate.
std::string Trainer::Impl::Run::stalled(int64_t at) const {
  const int64_t from = at - ts.stop_stall_steps;
  if (from < ts.warmup_steps) return "";
  double before = INFINITY, now = INFINITY;
  for (const auto& [s, loss] : val_history) {
    if (s <= from) before = std::min(before, loss);
    if (s <= at) now = std::min(now, loss);
  }
  if (!std::isfinite(before) || !(before > 0)) return "";
  const double gain = (before - now) / before;
  if (gain >= ts.stop_stall_gain) return "";
  return "best validation loss " + num(now) + ", " + num(100 * gain) + " % below its best by step " +
         std::to_string(from) + " (" + num(before) + "): less than --stop-stall-gain " + num(ts.stop_stall_gain) +
         " over the last " + std::to_string(ts.stop_stall_steps) + " steps; stopped early at step " +
         std::to_string(at) + " of " + std::to_string(total_steps) + ", done (it has stopped learning)";
}

// The early stops, at a validation of step `at` (last_eval): Zoology's (--stop-accuracy, at 0.99)
// and the stall stop (docs/lab.md, "The stall stop"). "" when the run goes on; else the line that
// says why it is done.
std::string Trainer::Impl::Run::early_stop(int64_t at) const {
  if (ts.stop_accuracy > 0 && last_eval.answer_accuracy >= ts.stop_accuracy)
    return "answer accuracy " + num(last_eval.answer_accuracy) + " reached --stop-accuracy " + num(ts.stop_accuracy) +
           " at step " + std::to_string(at) + " of " + std::to_string(total_steps) + ": stopped early, done";
  if (ts.stop_stall_steps > 0) return stalled(at);
  return "";
}

// A resume from the checkpoint of a validation at which the run, with these settings, stops
// early: it was done there (a lab or sweep killed between a run's early stop and its score
// continues it), so it is not trained on. The validation is the checkpoint's own (its step);
// a checkpoint whose validation let the run go on lets it go on again.
std::string Trainer::Impl::Run::stopped_early_already() const {
  if (!spec.resume || start_step <= 0 || start_step >= total_steps || last_eval.step != start_step) return "";
  return early_stop(start_step);
}

// ---- a checkpoint: config.json's record (run/run_json.h, beside its reader) with the weights ----
void Trainer::Impl::Run::checkpoint(int64_t at) {
  // Non-finite weights never reach the disk: the last finite checkpoint stays the newest.
  const std::string bad = first_non_finite(model);
  if (!bad.empty())
    throw Diverged("training diverged by step " + std::to_string(at) + ": '" + bad + "' holds NaN or infinite values");
  last_checkpoint = at;
  if (!writer) return;
  RunRecord record;
  record.model_json = to_json(model_config);
  record.training = ts;
  record.data_path = task ? "" : fs::absolute(spec.data_path).string();  // a task: task.json
  record.tokenizer_hash = tokenizer ? tokenizer->hash() : "";
  record.train_tokens = static_cast<int64_t>(data.train.size());
  record.val_tokens = static_cast<int64_t>(data.val.size());
  record.documents = data.documents;
  record.train_documents = data.train_documents;
  record.val_documents = data.val_documents;
  record.dropped_short = data.dropped_short;
  record.val_fraction = kValFraction;
  record.split_seed = kSplitSeed;
  record.step = at;
  record.total_steps = total_steps;
  record.steps_per_epoch = steps_per_epoch;
  record.batch_size = batch;
  record.wall_s = wall();
  record.best_step = best_step;
  record.best_val_loss = best_val_loss;
  record.train_loss = last_train_loss;
  record.last_eval = last_eval;
  record.tokens_per_s = last_tokens_per_s;
  paths.write_checkpoint(at, run_config_text(record), [&](const RunFolder::Checkpoint& c) {
    save_weights(model, c.weights);
    save_optimizer(*optimizer, c.optimizer);
  });
  last_checkpoint = at;
  if (is_snapshot_step(ts, at)) keep_snapshot(at);
}

// A snapshot of the checkpoint just written (issue 67); a failure is said and training goes on.
void Trainer::Impl::Run::keep_snapshot(int64_t at) {
  try {
    if (!paths.keep_snapshot(at) && !snapshots_full) {
      snapshots_full = true;
      log("snapshots/ holds " + std::to_string(RunFolder::kMaxSnapshots) + " snapshots, its bound: no more are kept");
    }
  } catch (const std::exception& e) {
    log(std::string("warning: no snapshot of step ") + std::to_string(at) + ": " + e.what());
  }
}

void Trainer::Impl::Run::report_weights(int64_t at) {
  if (writer && trainer.cb.on_weights) trainer.cb.on_weights(at, mixer_weights(model));
}

// ---- validation: the curve's eval points, and keep-best --------------------------------------
double Trainer::Impl::Run::run_validation(int64_t at, bool full) {
  const auto t0 = Clock::now();
  const WindowEval ev = evaluate_validation(full);
  MetricRecord m;
  m.kind = "eval";
  m.step = at;
  m.epoch = static_cast<double>(at) / steps_per_epoch;
  m.val_loss = ev.loss;
  m.val_accuracy = ev.accuracy;
  if (task) {
    m.answer_accuracy = task_score.answer_accuracy;
    m.sequence_accuracy = task_score.sequence_accuracy;
  }
  m.wall_s = wall();
  emit(m);
  last_eval = m;
  if (std::isfinite(m.val_loss)) val_history.emplace_back(at, m.val_loss);
  report_weights(at);
  record_diagnostics(at);
  record_trace(m);
  if (ts.keep_best && std::isfinite(m.val_loss) && !(m.val_loss >= best_val_loss)) {
    best_val_loss = m.val_loss;
    best_step = at;
    if (writer) save_weights(model, best_weights);
    log("best validation loss so far (" + std::to_string(m.val_loss) + ") at step " + std::to_string(at) +
        ": kept in best.safetensors");
  }
  return seconds_since(t0);
}

// ---- one step ------------------------------------------------------------------------------------
void Trainer::Impl::Run::shuffle_for_epoch(int64_t epoch) {
  // A fresh permutation of the windows per epoch, from the seed: resumable exactly.
  order.resize(windows);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(ts.seed * 1000003ULL + static_cast<uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), rng);
  order_epoch = epoch;
}

// Forward, loss, backward and the optimizer on this step's batch; returns the loss.
double Trainer::Impl::Run::train_step(double lr) {
  const int64_t epoch = step / steps_per_epoch, index = step % steps_per_epoch;
  if (epoch != order_epoch) shuffle_for_epoch(epoch);
  // This rank's share of the global batch: windows [rank * rank_batch, (rank + 1) * rank_batch).
  const int64_t first = index * batch + (dp ? dp->rank() : 0) * rank_batch;
  std::vector<int64_t> starts(rank_batch);
  for (int64_t b = 0; b < rank_batch; ++b) starts[b] = train_starts[static_cast<size_t>(order[first + b])];
  torch::Tensor tokens, x, y;
  std::optional<TaskBatch> answers;  // a task: its examples `starts`, the loss on their answers
  if (task) {
    answers = task->batch(TaskSplit::kTrain, starts, device);
  } else {
    tokens = make_batch(data.train, starts, T, device);
    x = tokens.narrow(1, 0, T);
    y = tokens.narrow(1, 1, T);
  }

  // This step's dropout masks, whatever came before; each rank its own (rank 0 as one process).
  torch::manual_seed(step_seed(ts.seed, step) ^ (static_cast<uint64_t>(dp ? dp->rank() : 0) * 0x94d049bb133111ebULL));
  const auto t0 = Clock::now();
  if (graph_wanted) {
    const std::vector<torch::Tensor> inputs =
        answers ? std::vector<torch::Tensor>{answers->x, answers->y, answers->rows} : std::vector<torch::Tensor>{tokens};
    if (!graph && eager_steps >= kEagerStepsFirst) record_graph(inputs);
    if (graph && graph->fits(inputs)) {  // the whole step in one launch: forward, backward, clip, AdamW
      auto [loss, bad] = graph->replay(inputs, lr);
      optimizer->count_recorded_step();
      forward_s += seconds_since(t0);
      ++timed_steps;
      add_pending(loss, bad);
      return 0.0;  // settle() adds the sum to loss_sum
    }
    ++eager_steps;
  }
  torch::Tensor loss;
  {
    compat::AutocastGuard autocast(device, bf16);
    loss = answers ? TaskData::loss(model, *answers) : model->loss(x, y);
  }
  forward_s += seconds_since(t0);
  ++timed_steps;
  if (dp) dp->at_step(step);
  if (deferred) {  // no host sync: clipped, updated (or skipped) and summed on the device
    optimizer->zero_grad();
    backward(loss);
    add_pending(loss, optimizer->clip_and_step(lr, ts.grad_clip, loss));
    return 0.0;  // settle() adds the sum to loss_sum
  }
  const double loss_value = global_mean_loss(loss.item<double>());
  if (!std::isfinite(loss_value))
    throw Diverged("training diverged at step " + std::to_string(step + 1) + ": the loss is " +
                   std::to_string(loss_value));
  optimizer->zero_grad();
  backward(loss);
  double grad_norm = 0;
  if (ts.grad_clip > 0)
    grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), ts.grad_clip);
  else
    for (const auto& p : model->parameters())
      if (p.grad().defined()) grad_norm += p.grad().pow(2).sum().item<double>();
  if (!std::isfinite(grad_norm))
    throw Diverged("training diverged at step " + std::to_string(step + 1) + ": the gradient is not finite (loss " +
                   std::to_string(loss_value) + ")");
  optimizer->step(lr);
  return loss_value;
}

void Trainer::Impl::Run::add_pending(const torch::Tensor& loss, const torch::Tensor& bad) {
  // New tensors, never the step's own: a graph's outputs are overwritten by its next replay.
  auto l = loss.detach().to(torch::kDouble, /*non_blocking=*/false, /*copy=*/true).reshape({});
  pending_loss_sum = pending_loss_sum.defined() ? pending_loss_sum + l : l;
  pending_bad = pending_bad.defined() ? pending_bad.logical_or(bad) : bad.clone();
}

void Trainer::Impl::Run::record_graph(const std::vector<torch::Tensor>& example) {
  graph_wanted = false;  // one attempt: a recording that fails stays eager for the run
  optimizer->zero_grad();  // the recording's backward allocates the gradients it then rewrites
  optimizer->prepare_recorded_steps();
  const bool on_task = task.has_value();
  try {
    graph = std::make_unique<CudaGraphStep>(
        example, [&](const std::vector<torch::Tensor>& in, const torch::Tensor& lr_on_device) {
          torch::Tensor loss;
          {
            compat::AutocastGuard autocast(device, bf16);
            loss = on_task ? TaskData::loss(model, TaskBatch{in[0], in[1], in[2]})
                           : model->loss(in[0].narrow(1, 0, T), in[0].narrow(1, 1, T));
          }
          loss.backward();
          auto bad = optimizer->clip_and_step_recorded(lr_on_device, ts.grad_clip, loss);
          return std::make_pair(loss.detach(), bad);
        });
    graph_wanted = true;
    log("the training step runs as a CUDA graph from step " + std::to_string(step + 1) +
        " (HSM_CUDA_GRAPH=0 turns it off)");
  } catch (const std::exception& e) {
    graph.reset();
    optimizer->zero_grad();
    log(std::string("note: ") + e.what() + "; the steps stay eager");
  }
}

// The deferred steps' losses into loss_sum, and a Diverged for a non-finite one (one host sync).
void Trainer::Impl::Run::settle() {
  if (!pending_loss_sum.defined()) return;
  const auto both = torch::stack({pending_loss_sum, pending_bad.to(torch::kDouble)}).cpu();
  pending_loss_sum = pending_bad = torch::Tensor();
  const double sum = both[0].item<double>();
  if (both[1].item<double>() != 0 || !std::isfinite(sum))
    throw Diverged("training diverged at step " + std::to_string(step) + " or earlier (after step " +
                   std::to_string(settled_step) + "): the loss or the gradient is not finite (HSM_STEP_SYNC=every "
                   "finds the step)");
  loss_sum += sum;
  settled_step = step;
}

// A train point of the curve: the mean loss and tokens/s since the last one.
void Trainer::Impl::Run::log_training(double lr) {
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

// ---- the loop: steps, curve points, validations, checkpoints; pause and stop --------------------
void Trainer::Impl::Run::loop() {
  timer = Clock::now();
  step = settled_step = start_step;
  try {
    if (final_validation_missing()) {  // the validation a stop interrupted, then its checkpoint again
      log("step " + std::to_string(step) + " was trained but its validation was interrupted: validating it now");
      try {
        excluded_s += run_validation(step, step % steps_per_epoch == 0);
        checkpoint(step);
      } catch (const Cancelled&) {
        validation_stopped = true;
      }
    }
    while (step < total_steps) {
      if (trainer.pause_flag) {
        std::unique_lock<std::mutex> wait_lock(trainer.mu);
        trainer.cv.wait(wait_lock, [&] { return !trainer.pause_flag || trainer.stop_flag; });
        timer = Clock::now();
        tokens_since = 0;
        excluded_s = 0;
      }
      if (stop_now()) break;
      const double lr = learning_rate(ts, step, total_steps);
      loss_sum += train_step(lr);
      ++loss_count;
      tokens_since += batch * T;
      ++step;

      const bool log_now = step % ts.log_every == 0 || step == total_steps;
      const bool epoch_end = step % steps_per_epoch == 0;
      const bool eval_now = (ts.eval_every > 0 && step % ts.eval_every == 0) || epoch_end || step == total_steps;
      const bool checkpoint_now = (ts.checkpoint_every > 0 && step % ts.checkpoint_every == 0) || epoch_end ||
                                  step == total_steps || is_snapshot_step(ts, step);
      if (log_now || eval_now || checkpoint_now || trainer.stop_flag || trainer.pause_flag) settle();
      if (log_now) log_training(lr);
      if (eval_now) {
        try {
          excluded_s += run_validation(step, epoch_end);
        } catch (const Cancelled&) {
          // stop() during validation: the trained weights are checkpointed below, and the run
          // says it stopped (issue 46: at the last step this once skipped both).
          validation_stopped = true;
          break;
        }
      }
      if (checkpoint_now) {
        const auto t0 = Clock::now();
        checkpoint(step);
        excluded_s += seconds_since(t0);
      }
      trainer.progress("training", static_cast<double>(step) / static_cast<double>(total_steps));
      if (eval_now && step < total_steps) {
        const std::string why = early_stop(step);
        if (!why.empty()) {
          stopped_early = true;
          if (!checkpoint_now) checkpoint(step);
          log(why);
          break;
        }
      }
    }
    if (validation_stopped || (stop_now() && step < total_steps)) {
      settle();
      checkpoint(step);
      log("stopped at step " + std::to_string(step) +
          (validation_stopped ? " during its validation (the checkpoint has the step's weights; --resume validates it)"
                              : "") +
          "; continue with --resume");
    }
  } catch (const Diverged& e) {
    throw std::runtime_error(std::string(e.what()) + ". The run folder keeps the checkpoint of step " +
                             std::to_string(last_checkpoint) +
                             ", the last with finite weights; continue from it with a lower learning rate: "
                             "hsm train --resume --out " + spec.run_dir + " --lr " + num(ts.lr / 10) + " (it was " +
                             num(ts.lr) + ")" + (ts.grad_clip > 0 ? "" : ", and a gradient clip (--grad-clip 1)"));
  }
}

TrainSummary Trainer::Impl::Run::finish() {
  if (timed_steps > 0) {
    const double n = static_cast<double>(timed_steps);
    std::string line = "time per step: forward " + num(1000 * forward_s / n) + " ms, backward " +
                       num(1000 * backward_s / n) + " ms";
    if (dp)
      line += " (" + num(1000 * exposed_comm_s / n) + " ms of it waiting for the gradient all-reduce after the last "
              "gradient; the whole gradient's all-reduce alone takes " + num(1000 * dp->full_all_reduce_s()) + " ms)";
    log(line);
  }
  if (const size_t missing = paths.flush_metrics(); missing > 0) {
    const std::string lost = "metrics.jsonl lacks " + std::to_string(missing) +
                             " record(s) of this run: the disk was full (" + metrics_failure +
                             "); the weights and checkpoints were written";
    summary.warning = summary.warning.empty() ? lost : summary.warning + "; " + lost;
    log("warning: " + lost);
  }
  summary.steps = step;
  summary.total_steps = total_steps;
  summary.epochs = static_cast<double>(step) / steps_per_epoch;
  summary.val_loss = last_eval.val_loss;
  summary.val_accuracy = last_eval.val_accuracy;
  summary.answer_accuracy = last_eval.answer_accuracy;
  summary.sequence_accuracy = last_eval.sequence_accuracy;
  summary.train_loss = last_train_loss;
  summary.tokens_per_s = last_tokens_per_s;
  summary.wall_s = wall();
  summary.stopped = (step < total_steps && !stopped_early) || validation_stopped;
  summary.started = true;
  summary.run_dir = spec.run_dir;
  return summary;
}

}  // namespace hsm
