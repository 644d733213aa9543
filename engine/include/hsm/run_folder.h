#pragma once
// A run folder as the tools read it (docs/checkpoint-format.md): config.json (model,
// training settings, data, state) and metrics.jsonl (one MetricRecord per line). Plain
// C++ and no LibTorch, so the studio can list, compare and follow runs (also runs that
// another process is still writing) without loading a model.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/jsonl_tail.h"
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
  // How the training split is cut into windows: "packed" (every `context` tokens across
  // documents) or "story_start" (windows start at document starts; none mixes stories).
  std::string windows = "packed";
  bool keep_best = false;      // also keep best.safetensors: the weights of the lowest validation loss
  // Diagnosed at every validation into RUN/diagnostics.jsonl (hsm/diagnostics_log.h); empty:
  // no record. The default is the first prompt of HSM Table 3 (resources/prompts/hsm_table3.json).
  std::string probe_text = "Alice was so tired when she got home so she went";
};

// One line of metrics.jsonl and one callback to the studio.
struct MetricRecord {
  std::string kind;            // "train" (running loss) or "eval" (validation)
  int64_t step = 0;
  int64_t total_steps = 0;     // steps the run is set to reach (for progress and ETA)
  double epoch = 0;            // fractional: step / steps per epoch
  double train_loss = NAN;     // mean over the steps since the last record
  double val_loss = NAN;
  double val_accuracy = NAN;   // top-1 next-token accuracy (a task run: on its answers)
  // Task runs (hsm/tasks.h), at eval points: answer tokens exactly right, and examples whose
  // every answer is right.
  double answer_accuracy = NAN, sequence_accuracy = NAN;
  double tokens_per_s = NAN;
  double lr = NAN;
  double wall_s = 0;           // seconds of training so far (across resumes)
};

// What config.json says about a run. Throws std::runtime_error naming the file when the
// folder is not a run folder or config.json is broken.
struct RunInfo {
  std::string dir;
  ModelConfig model;
  TrainSettings training;
  std::string data_path;       // the corpus it was trained on ("" when not recorded)
  int64_t step = 0;            // optimizer steps of the last checkpoint
  int64_t total_steps = 0;     // steps the run was set to reach (0 when unknown)
  double wall_s = 0;           // training seconds up to the last checkpoint
  double val_loss = NAN, val_accuracy = NAN;  // the last validation before the checkpoint
};
RunInfo read_run_info(const std::string& run_dir);
// Whether dir holds a config.json of this format (cheap; reads the file).
bool is_run_folder(const std::string& dir);

// The training settings stored in a run folder's config.json (for --resume).
TrainSettings stored_settings(const std::string& run_dir);
// The corpus a run was trained on (config.json's data.path).
std::string stored_data_path(const std::string& run_dir);

// One line of metrics.jsonl <-> a record. Missing values read as NaN. parse throws
// std::invalid_argument, saying what is wrong, for a line that is not a metric record (not a
// JSON object, no "kind" text, a "step" that is not a whole number, a value that is not a number).
std::string metric_to_json_line(const MetricRecord& m);
MetricRecord metric_from_json_line(const std::string& line);

// Reads metrics.jsonl incrementally: each poll() returns the records appended since the
// last one. A half-written last line (a writer mid-flush) is left for the next poll; a file
// that shrank (a resumed run rewrote it) is read again from the start, with reset() true.
// Defensive, as the file may be damaged: a line that is no record, or longer than any record
// can be (kMaxLineBytes, finished or not), is skipped and named in problems(); every poll
// moves on, so a damaged file never makes a reader spin.
class MetricsReader {
 public:
  static constexpr uint64_t kMaxLineBytes = 64 * 1024;
  explicit MetricsReader(std::string run_dir);
  // Reads about max_bytes (whole lines; at least kMaxLineBytes) so a GUI can take a long
  // history in slices between event-loop turns; more() says whether some is left.
  std::vector<MetricRecord> poll(uint64_t max_bytes = UINT64_MAX);
  bool reset() const { return tail_.reset(); }  // the last poll() started over
  bool more() const { return tail_.more(); }  // the last poll() stopped before the end of the file
  // The lines the last poll() skipped, each "<path> line N: what is wrong (skipped)" (at most
  // 20; skipped() counts them all, since the start).
  const std::vector<std::string>& problems() const { return tail_.problems(); }
  int64_t skipped() const { return tail_.skipped(); }
  const std::string& path() const { return tail_.path(); }

 private:
  JsonlTail tail_;
};

// Every record of a run folder's metrics.jsonl (empty when there is none yet).
std::vector<MetricRecord> read_metrics(const std::string& run_dir);

}  // namespace hsm
