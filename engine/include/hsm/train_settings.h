#pragma once
// A run's training settings (config.json's "training"), a value type of its own so that the
// layers that declare settings (hsm/settings.h, hsm/presets.h) need nothing of the run
// folder (docs/architecture.md, "Layers"). Plain C++.
#include <cstdint>
#include <string>

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
  // A task run stops early, done, at the first validation whose answer accuracy is at least this
  // (Zoology stops at 0.99); 0 = off. A corpus run has no answers: refused there.
  double stop_accuracy = 0;
  // A run also stops early, done, when it has stopped learning: when its best validation loss fell
  // by less than stop_stall_gain (a fraction of it) over the last stop_stall_steps steps, checked
  // at validations from warmup_steps + stop_stall_steps on (docs/lab.md, "The default lab":
  // attention's plateau on MQAR falls 8-22 % per 500 steps before it leaves it, a run that cannot
  // learn a task 0.6-2 %); 0 steps = off.
  int64_t stop_stall_steps = 0;
  double stop_stall_gain = 0.03;
  // Diagnosed at every validation into RUN/diagnostics.jsonl (hsm/diagnostics_log.h); empty:
  // no record. The default is the first prompt of HSM Table 3 (resources/prompts/hsm_table3.json).
  std::string probe_text = "Alice was so tired when she got home so she went";
  // Traced at validations into RUN/traces.jsonl (hsm/formation.h, issue 67): the exact patching
  // maps and the routes of one fixed example, at every validation (trace_every 0) or at the first
  // validation at least trace_every steps after the last record. A task run traces its test
  // example trace_example with its key replaced (-1: no traces); a corpus run the clean text
  // trace_text against trace_corrupt (the same token count; an empty trace_text: no traces).
  int64_t trace_every = 0;
  int64_t trace_example = 0;
  std::string trace_text = "Alice was so tired when she got home so she went";
  std::string trace_corrupt = "Alice was so hungry when she got home so she went";
  // Snapshots (RunFolder::keep_snapshot, issue 67): the model kept at every snapshot_every-th step
  // (0: none) and, with snapshot_log, at the log-spaced steps 1, 2, 5, 10, 20, 50, 100, ...;
  // at most RunFolder::kMaxSnapshots a run.
  int64_t snapshot_every = 0;
  bool snapshot_log = false;
};

// Whether `step` is one the settings keep a snapshot of.
inline bool is_snapshot_step(const TrainSettings& s, int64_t step) {
  if (step <= 0) return false;
  if (s.snapshot_every > 0 && step % s.snapshot_every == 0) return true;
  if (!s.snapshot_log) return false;
  int64_t decade = 1;
  while (decade <= step / 10) decade *= 10;  // the largest power of ten <= step
  return step == decade || step == 2 * decade || step == 5 * decade;
}

}  // namespace hsm
