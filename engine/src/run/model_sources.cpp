// What names a model or its training settings where a run folder may be given (a preset, a
// config file or a run folder), and the bundled demo runs (hsm/run_folder.h): above arch/'s
// presets because they read run folders (docs/architecture.md, "Layers").
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "io/io_util.h"

namespace fs = std::filesystem;

namespace hsm {

TrainSettings preset_or_config_train_settings(const std::string& name_or_path) {
  if (!names_a_file(name_or_path)) return preset_train_settings(name_or_path);
  if (fs::is_directory(name_or_path)) return stored_settings(name_or_path);  // as --resume reads them
  return config_file_train_settings(name_or_path, "config");
}

ModelConfig load_preset_or_config(const std::string& name_or_path) {
  if (names_a_file(name_or_path)) {
    if (!fs::exists(name_or_path)) throw std::invalid_argument("config file '" + name_or_path + "' does not exist");
    if (fs::is_directory(name_or_path)) {
      if (fs::exists(RunFolder(name_or_path).config)) return read_run_info(name_or_path).model;  // a run's
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
  auto is_run = [](const fs::path& dir) { return RunFolder(dir.string()).has_model(); };
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

bool is_bundled_model(const std::string& dir) {
  std::error_code ec;
  fs::path root;
  try {
    root = fs::weakly_canonical(fs::path(resources_dir()) / "models", ec);
  } catch (const std::exception&) {
    return false;  // no resources (a bad $HSM_RESOURCES): nothing is bundled
  }
  const fs::path run = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec || root.empty()) return false;
  auto r = root.begin();
  auto d = run.begin();
  for (; r != root.end(); ++r, ++d)
    if (d == run.end() || *r != *d) return false;
  return d != run.end();  // below models/, not models/ itself
}

ScoringCorpus scoring_corpus(const std::string& run_dir) { return scoring_corpus(run_dir, stored_data_path(run_dir)); }

ScoringCorpus scoring_corpus(const std::string& run_dir, const std::string& recorded) {
  ScoringCorpus corpus{recorded, ""};
  std::error_code ec;
  if (recorded.empty() || fs::exists(recorded, ec) || !is_bundled_model(run_dir)) return corpus;
  const std::string starter = starter_corpus();
  if (starter.empty()) return corpus;  // not installed: the caller says the recorded one is missing
  corpus.instead_of = recorded;
  corpus.path = starter;
  return corpus;
}

}  // namespace hsm
