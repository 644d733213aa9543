#pragma once
// Checkpoints (SPEC §5, docs/checkpoint-format.md): a run folder with
//   model.safetensors      weights, F32, named by module path (tok_emb.weight, blocks.0.mixer.a, ...)
//   optimizer.safetensors  AdamW moments (exp_avg.<name>, exp_avg_sq.<name>) + step in metadata
//   config.json            {"format", "model", "training", "data", "state", "metrics"}
//   tokenizer.model        sentencepiece model
//   metrics.jsonl          one MetricRecord per line
// Every file is written atomically (temp + rename); config.json last, so its "state" never
// points at weights that were not completely written.
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hsm/export.h"
#include "hsm/trainer.h"
#include "io/run_json.h"
#include "model/model.h"
#include "train/adamw.h"

namespace hsm {

struct RunPaths {
  explicit RunPaths(std::string dir);
  std::string dir, weights, optimizer, config, tokenizer, metrics;
};

// Weights: writes every parameter and buffer as F32 (bf16/half training copies converted).
void save_weights(Gpt& model, const std::string& path);
// Reads and checks the file against the model: every tensor present, no extra ones, shapes
// and dtype (F32) equal. Throws std::runtime_error naming the file and the first mismatch.
void load_weights(Gpt& model, const std::string& path);

void save_optimizer(const AdamW& optimizer, const std::string& path);
void load_optimizer(AdamW& optimizer, const std::string& path, int64_t expected_step);

}  // namespace hsm
