#pragma once
// The paper's configurations (HSM Table 1, Figure 7), shipped as JSON files in
// resources/presets/ and loaded by name.
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/train_settings.h"

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
// A config file's optional "training" object (keys and values as in config.json's "training")
// over the paper's defaults, read the same way; `what` names the file in errors ("config").
TrainSettings config_file_train_settings(const std::string& path, const char* what);
// Whether `name_or_path` names a file rather than a preset: a path when written as one (a '/',
// a .json name); a preset's name is the preset even where the working directory holds a file or
// folder of that name (`./gpt` names that one): otherwise a run folder called gpt beside the user
// would silently replace the preset.
bool names_a_file(const std::string& name_or_path);

// The starter corpus (<resources>/corpus/tinystories-starter.txt: 1,728 TinyStories stories,
// CDLA-Sharing-1.0, see the README beside it); empty when it is not installed.
std::string starter_corpus();

// Names of every bundled preset, in the order of HSM Table 1.
std::vector<std::string> preset_names();

// Loads a preset by name; throws std::invalid_argument listing the known names.
ModelConfig load_preset(const std::string& name);

// What also takes a run folder (load_preset_or_config, preset_or_config_train_settings) and
// the bundled demo runs (bundled_models) read run folders: hsm/run_folder.h.

}  // namespace hsm
