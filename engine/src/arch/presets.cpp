#include "hsm/presets.h"

#include "hsm/settings.h"

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "io/io_util.h"

namespace fs = std::filesystem;

namespace hsm {
namespace {

bool has_presets(const fs::path& dir) { return fs::exists(dir / "presets" / "index.json"); }

// A JSON value as the text a setting's declaration parses ("16", "0.003", "true", "packed").
std::string setting_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string resources_dir() {
  if (const char* env = std::getenv("HSM_RESOURCES"); env && *env) {
    if (!has_presets(env))
      throw std::runtime_error(std::string("HSM_RESOURCES='") + env + "' holds no presets/index.json");
    return env;
  }
  const fs::path exe = executable_dir();  // io_util.h
  for (const fs::path& candidate : {exe / ".." / HSM_INSTALL_DATA_DIR, exe / "resources"}) {
    if (!exe.empty() && has_presets(candidate)) return fs::weakly_canonical(candidate).string();
  }
#ifdef HSM_SOURCE_RESOURCES_DIR
  if (has_presets(HSM_SOURCE_RESOURCES_DIR)) return HSM_SOURCE_RESOURCES_DIR;
#endif
  throw std::runtime_error(
      "cannot find the resources folder (presets/index.json); set HSM_RESOURCES to the resources/ folder");
}

std::vector<std::string> preset_names() {
  const fs::path index = fs::path(resources_dir()) / "presets" / "index.json";
  const auto j = nlohmann::json::parse(read_text_file(index.string(), "preset index"), nullptr, false);
  if (j.is_discarded() || !j.is_array()) throw std::runtime_error(index.string() + ": expected a JSON array of preset names");
  return j.get<std::vector<std::string>>();
}

ModelConfig load_preset(const std::string& name) {
  const auto names = preset_names();
  bool known = false;
  for (const auto& n : names) known = known || n == name;
  if (!known) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown preset '" + name + "' (known: " + list + ")");
  }
  return load_config((fs::path(resources_dir()) / "presets" / (name + ".json")).string());
}

TrainSettings config_file_train_settings(const std::string& path, const char* what) {
  const fs::path file(path);
  const auto j = nlohmann::json::parse(read_text_file(file.string(), what), nullptr, false);
  TrainSettings settings;
  if (j.is_discarded() || !j.contains("training")) return settings;
  const nlohmann::json& training = j["training"];
  if (!training.is_object())
    throw std::invalid_argument(file.string() + ": \"training\" must be an object of training settings");
  for (const auto& [key, value] : training.items()) {
    try {
      if (!value.is_primitive() || value.is_null()) throw std::invalid_argument("expected a number, true/false or text");
      train_setting(key).set(settings, setting_text(value));
    } catch (const std::invalid_argument& e) {  // an unknown key, or SettingError with the range to use
      throw std::invalid_argument(file.string() + ": training." + key + ": " + e.what());
    }
  }
  try {
    validate_train_settings(settings);
  } catch (const SettingError& e) {
    throw std::invalid_argument(file.string() + ": training: " + e.what());
  }
  return settings;
}

bool names_a_file(const std::string& name_or_path) {
  if (name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json"))
    return true;
  const std::vector<std::string> presets = preset_names();
  if (std::find(presets.begin(), presets.end(), name_or_path) != presets.end()) return false;
  return fs::exists(name_or_path);
}

TrainSettings preset_train_settings(const std::string& name) {
  load_preset(name);  // a known preset, or the list of known ones
  return config_file_train_settings((fs::path(resources_dir()) / "presets" / (name + ".json")).string(), "preset");
}

std::string starter_corpus() {
  const fs::path file = fs::path(resources_dir()) / "corpus" / "tinystories-starter.txt";
  std::error_code ec;
  return fs::is_regular_file(file, ec) ? file.string() : std::string();
}

}  // namespace hsm
