#pragma once
// The paper's configurations (HSM Table 1, Figure 7), shipped as JSON files in
// resources/presets/ and loaded by name.
#include <string>
#include <vector>

#include "hsm/config.h"

namespace hsm {

// The folder holding presets and other bundled data. Looked up in order: $HSM_RESOURCES,
// <executable>/../share/hsm/resources (installed), the source tree's resources/.
std::string resources_dir();

// Names of every bundled preset, in the order of HSM Table 1.
std::vector<std::string> preset_names();

// Loads a preset by name; throws std::invalid_argument listing the known names.
ModelConfig load_preset(const std::string& name);

// The run folders bundled in <resources>/models/ (the demo models), in the order of
// models/index.json when present, else by name; empty when none are installed.
std::vector<std::string> bundled_models();

// A preset name, a path to a config JSON file, or a run folder (its model): what the CLI and
// the app accept.
ModelConfig load_preset_or_config(const std::string& name_or_path);

}  // namespace hsm
