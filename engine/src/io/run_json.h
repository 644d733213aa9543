#pragma once
// config.json and metrics.jsonl of a run folder as JSON (internal header; the public,
// JSON-free side is hsm/run_folder.h). No LibTorch: part of hsm_core.
#include <nlohmann/json.hpp>
#include <string>

#include "hsm/run_folder.h"

namespace hsm {

inline constexpr const char* kCheckpointFormat = "hsm-studio/1";

nlohmann::json settings_to_json(const TrainSettings& s);
TrainSettings settings_from_json(const nlohmann::json& j);
nlohmann::json metric_to_json(const MetricRecord& m);

// Reads config.json of a run folder; throws naming the file when it is missing or broken.
nlohmann::json read_run_config(const std::string& run_dir);
// The same checks on a config.json's text (a checkpoint's own copy): the format, and every
// value the tools read of the right type; throws std::runtime_error naming `path` and the value.
nlohmann::json parse_run_config(const std::string& text, const std::string& path);

}  // namespace hsm
