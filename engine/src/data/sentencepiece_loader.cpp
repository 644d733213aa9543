// Finds and opens libhsm_sentencepiece.so (see sentencepiece_plugin.h for why it is a plugin).
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "io/io_util.h"
#include "data/sentencepiece_plugin.h"

namespace fs = std::filesystem;

namespace hsm::spm {
namespace {

constexpr const char* kPluginName = "libhsm_sentencepiece.so";

std::vector<fs::path> candidates() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("HSM_PLUGIN_DIR"); env && *env) dirs.emplace_back(env);
  if (const std::string exe = executable_dir(); !exe.empty()) {
    const fs::path exe_dir(exe);
    dirs.push_back(exe_dir);
    dirs.push_back(exe_dir / ".." / "lib" / "hsm-studio");
  }
#ifdef HSM_PLUGIN_BUILD_DIR
  dirs.emplace_back(HSM_PLUGIN_BUILD_DIR);
#endif
  return dirs;
}

const Library* open_library() {
  std::string tried;
  for (const fs::path& dir : candidates()) {
    const fs::path file = dir / kPluginName;
    std::error_code ec;
    if (!fs::exists(file, ec)) {
      tried += "\n  " + file.string() + " (missing)";
      continue;
    }
    // RTLD_LOCAL keeps sentencepiece's protobuf symbols out of the global scope, where
    // LibTorch's libprotobuf would bind to them; RTLD_DEEPBIND makes sentencepiece bind to
    // its own copy first.
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!handle) {
      tried += "\n  " + file.string() + " (" + ::dlerror() + ")";
      continue;
    }
    using Entry = const Library* (*)();
    if (auto entry = reinterpret_cast<Entry>(::dlsym(handle, "hsm_sentencepiece_library"))) return entry();
    tried += "\n  " + file.string() + " (no hsm_sentencepiece_library symbol)";
  }
  throw std::runtime_error(std::string("cannot load the tokenizer plugin ") + kPluginName +
                           "; set HSM_PLUGIN_DIR to the folder holding it. Looked at:" + tried);
}

}  // namespace

const Library& library() {
  static std::once_flag once;
  static const Library* lib = nullptr;
  static std::string error;
  std::call_once(once, [] {
    try {
      lib = open_library();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!lib) throw std::runtime_error(error);
  return *lib;
}

}  // namespace hsm::spm
