#pragma once
// Checkpoints (docs/checkpoint-format.md): a run folder with
//   model.safetensors      weights, F32, named by module path (tok_emb.weight, blocks.0.mixer.a, ...)
//   config.json            {"format", "model", "training", "data", "state", "metrics"}
//   tokenizer.model        sentencepiece model
//   metrics.jsonl          one MetricRecord per line
//   checkpoints/step-N/    the last two checkpoints, each whole: model.safetensors,
//                          optimizer.safetensors (AdamW moments, step in metadata), config.json
// A checkpoint is one unit (issue 19): its folder is written completely under a temporary
// name, flushed to the disk, and published by one rename, so it holds all its files or does
// not exist; resume takes the newest one. Then model.safetensors and config.json at the top
// (what eval, generate and the studio read) are replaced from it, each by one rename.
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <functional>
#include <optional>
#include <string>

#include "hsm/export.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"
#include "io/run_json.h"
#include "io/run_paths.h"
#include "model/model.h"
#include "train/adamw.h"

namespace hsm {

// Checkpoints kept: the newest and the one before it.
inline constexpr int kKeptCheckpoints = 2;

struct Checkpoint {
  int64_t step = 0;
  std::string dir, weights, optimizer, config;
};
// The newest whole and valid checkpoint of a run (a folder checkpoints/step-N with its three
// files, each readable and of step N), if it has one. A folder named step-<digits> whose
// number is out of range throws std::runtime_error naming it.
std::optional<Checkpoint> latest_checkpoint(const std::string& run_dir);
// What resume starts from (issue 34): latest_checkpoint(), and each newer checkpoint it passed
// over is set aside as checkpoints/damaged-step-N (never pruned, never overwritten; the run's
// top-level weights and config of that step are kept in it when its own are missing), with
// a line to `log` saying which, why, and where it went.
std::optional<Checkpoint> resume_checkpoint(const std::string& run_dir,
                                            const std::function<void(const std::string&)>& log);

// Compares a config with a weights file's header before anything is allocated (issue 34): a
// config.json claiming a model far larger than model.safetensors holds (or with other
// embedding shapes, or another number of layers) throws std::runtime_error naming both files,
// instead of building a model of the config's size first.
void check_weights_fit(const ModelConfig& config, const std::string& weights_path, const std::string& config_path);
// Writes the checkpoint of `step` as one unit (see above), then the run's top-level
// model.safetensors and config.json (config_text), and keeps the newest kKeptCheckpoints.
// A failure (a full disk) throws std::runtime_error naming the file and leaves the previous
// checkpoint whole.
void write_checkpoint(const RunPaths& paths, int64_t step, Gpt& model, const AdamW& optimizer,
                      const std::string& config_text);
// Makes the run's top-level model.safetensors and config.json those of `checkpoint` (after a
// kill between a checkpoint's publication and their update they are a step behind).
void refresh_run_view(const RunPaths& paths, const Checkpoint& checkpoint);
// Removes what a writer killed mid-write left in the run folder: temporary files and
// unpublished checkpoint folders. Call it holding the run's lock (io/run_lock.h).
void remove_stale_temporaries(const std::string& run_dir);

// The name of the first parameter or buffer holding a NaN or an infinity, or "" when every
// value is finite.
std::string first_non_finite(Gpt& model);

// The run's tokenizer.model, checked against what config.json recorded when the model was
// trained (data.tokenizer_hash, and the model's vocab_size): another tokenizer would turn the
// same text into other ids and every result would be silently wrong. Throws std::runtime_error
// that says what differs and how to proceed.
Tokenizer load_run_tokenizer(const std::string& run_dir, const nlohmann::json& run_config);

// Weights: writes every parameter and buffer as F32 (bf16/half training copies converted).
void save_weights(Gpt& model, const std::string& path);
// Reads and checks the file against the model: every tensor present, no extra ones, shapes
// and dtype (F32) equal, every value finite (the weights of a diverged run are refused, not
// evaluated into "loss": null). Throws std::runtime_error naming the file and the first mismatch.
void load_weights(Gpt& model, const std::string& path);

void save_optimizer(const AdamW& optimizer, const std::string& path);
void load_optimizer(AdamW& optimizer, const std::string& path, int64_t expected_step);

}  // namespace hsm
