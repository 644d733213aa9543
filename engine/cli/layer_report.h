#pragma once
// What `hsm presets` and `hsm inspect` say about a model: per layer mixer, FFN, heads,
// shifts, parameters and receptive-field coverage, as text or JSON.
#include <nlohmann/json.hpp>
#include <string>

#include "hsm/config.h"

namespace hsm::cli {

nlohmann::json layers_json(const ModelConfig& config);
std::string layers_table(const ModelConfig& config);
std::string format_count(int64_t n);  // 5003008 -> "5,003,008"

}  // namespace hsm::cli
