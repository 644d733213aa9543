#include "hsm/presets.h"

#include "hsm/run_folder.h"

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


}  // namespace

std::string resources_dir() {
  if (const char* env = std::getenv("HSM_RESOURCES"); env && *env) {
    if (!has_presets(env))
      throw std::runtime_error(std::string("HSM_RESOURCES='") + env + "' holds no presets/index.json");
    return env;
  }
  const fs::path exe = executable_dir();  // io_util.h
  for (const fs::path& candidate : {exe / ".." / "share" / "hsm" / "resources", exe / "resources"}) {
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

ModelConfig load_preset_or_config(const std::string& name_or_path) {
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
  if (looks_like_path || fs::exists(name_or_path)) {
    if (!fs::exists(name_or_path)) throw std::invalid_argument("config file '" + name_or_path + "' does not exist");
    if (fs::is_directory(name_or_path)) {
      if (fs::exists(fs::path(name_or_path) / "config.json")) return read_run_info(name_or_path).model;  // a run's
      throw std::invalid_argument("'" + name_or_path + "' is a folder but not a run folder: give a preset, a config JSON "
                                  "file or a run folder");
    }
    return load_config(name_or_path);
  }
  return load_preset(name_or_path);
}

std::vector<std::string> bundled_models() {
  const fs::path root = fs::path(resources_dir()) / "models";
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  auto is_run = [](const fs::path& dir) { return fs::exists(dir / "config.json") && fs::exists(dir / "model.safetensors"); };
  const fs::path index = root / "index.json";
  if (fs::exists(index)) {
    const auto j = nlohmann::json::parse(read_text_file(index.string(), "bundled model index"), nullptr, false);
    if (j.is_array())
      for (const auto& name : j)
        if (name.is_string() && is_run(root / name.get<std::string>())) out.push_back((root / name.get<std::string>()).string());
    return out;
  }
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.is_directory() && is_run(entry.path())) out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hsm
