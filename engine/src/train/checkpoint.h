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
#include "model/weights_io.h"
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

void save_optimizer(const AdamW& optimizer, const std::string& path);
void load_optimizer(AdamW& optimizer, const std::string& path, int64_t expected_step);

}  // namespace hsm
