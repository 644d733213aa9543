#pragma once
// config.json and metrics.jsonl of a run folder as JSON (internal header; the public,
// JSON-free side is hsm/run_folder.h). No LibTorch: part of hsm_core.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "hsm/run_folder.h"
#include "hsm/tokenizer.h"
#include "hsm/what_if.h"

namespace hsm {

inline constexpr const char* kCheckpointFormat = "hsm-studio/1";

nlohmann::json settings_to_json(const TrainSettings& s);
TrainSettings settings_from_json(const nlohmann::json& j);
nlohmann::json metric_to_json(const MetricRecord& m);

// What a checkpoint's config.json records (hsm/run_folder.h's reader, parse_run_config below,
// reads it back): the model, the training settings, the data it was trained on, where it
// stands and the last points of its curve.
struct RunRecord {
  std::string model_json;  // to_json(ModelConfig)
  TrainSettings training;
  std::string data_path, tokenizer_hash;
  int64_t train_tokens = 0, val_tokens = 0, documents = 0, train_documents = 0, val_documents = 0,
          dropped_short = 0;
  double val_fraction = 0;
  uint64_t split_seed = 0;
  int64_t step = 0, total_steps = 0, steps_per_epoch = 1, batch_size = 0;
  double wall_s = 0;
  int64_t best_step = -1;  // keep-best: absent while negative
  double best_val_loss = 0;
  double train_loss = NAN, tokens_per_s = NAN;  // each absent when not finite
  MetricRecord last_eval;                       // absent while its val_loss is not finite
};
// config.json's text for a record (format kCheckpointFormat), beside the reader below.
std::string run_config_text(const RunRecord& r);

// Reads config.json of a run folder; throws naming the file when it is missing or broken.
nlohmann::json read_run_config(const std::string& run_dir);

// The run's tokenizer.model, checked against what config.json recorded when the model was
// trained (data.tokenizer_hash, and the model's vocab_size): another tokenizer would turn the
// same text into other ids and every result would be silently wrong. Throws std::runtime_error
// that says what differs and how to proceed.
Tokenizer load_run_tokenizer(const std::string& run_dir, const nlohmann::json& run_config);
// The same checks on a config.json's text (a checkpoint's own copy): the format, and every
// value the tools read of the right type; throws std::runtime_error naming `path` and the value.
nlohmann::json parse_run_config(const std::string& text, const std::string& path);

// config.json's "what_if" (Model::save_as, docs/checkpoint-format.md): the edits a folder's
// model was saved with and the folder it came from. The a/b edits are already in its weights;
// the knock-outs are applied when it is opened. what_if_knock_outs reads (and checks) those,
// throwing std::runtime_error naming `path` for a damaged entry.
nlohmann::json what_if_to_json(const WhatIf& w, const std::string& source_dir);
std::vector<KnockOut> what_if_knock_outs(const nlohmann::json& what_if, const std::string& path);

}  // namespace hsm
