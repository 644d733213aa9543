#pragma once
// The paper's configurations (HSM Table 1, Figure 7), shipped as JSON files in
// resources/presets/ and loaded by name.
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/run_folder.h"

namespace hsm {

// The folder holding presets and other bundled data. Looked up in order: $HSM_RESOURCES,
// <executable>/../share/hsm-studio (installed: the layout set in the top-level
// CMakeLists.txt), <executable>/resources, the source tree's resources/.
std::string resources_dir();

// The preset that "Train a small model now" trains: small enough for about two minutes on a
// 2-core CPU, with its training settings in its file (preset_train_settings).
inline constexpr const char* kStarterPreset = "starter";

// The training settings a preset carries in its optional "training" object (keys and values
// as in config.json's "train"), over the paper's defaults; the defaults for a preset without
// one. Each value is read by its setting's declaration (hsm/settings.h); throws
// std::invalid_argument naming the preset file and the setting for a bad one.
TrainSettings preset_train_settings(const std::string& name);
// The same for what load_preset_or_config accepts: a preset's, a config file's own "training"
// object, or a run folder's config.json's (the settings it was trained with); the paper's
// defaults where there is none. What `hsm train --preset/--config` start from.
TrainSettings preset_or_config_train_settings(const std::string& name_or_path);

// The starter corpus (<resources>/corpus/tinystories-starter.txt: 1,728 TinyStories stories,
// CDLA-Sharing-1.0, see the README beside it); empty when it is not installed.
std::string starter_corpus();

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
