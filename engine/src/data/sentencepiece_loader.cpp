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

// The sanitizers' runtimes refuse RTLD_DEEPBIND and end the process (google/sanitizers#611).
// The sanitized build is the fuzz build (fuzz/README.md), which has no LibTorch and so no
// second protobuf for sentencepiece to bind to: RTLD_LOCAL alone is enough there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HSM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define HSM_SANITIZED 1
#endif
#endif
#ifdef HSM_SANITIZED
constexpr int kOpenFlags = RTLD_NOW | RTLD_LOCAL;
#else
constexpr int kOpenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif

std::vector<fs::path> candidates() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("HSM_PLUGIN_DIR"); env && *env) dirs.emplace_back(env);
  if (const std::string exe = executable_dir(); !exe.empty()) {
    const fs::path exe_dir(exe);
    dirs.push_back(exe_dir);
#ifdef HSM_INSTALL_PLUGIN_DIR
    dirs.push_back(exe_dir / ".." / HSM_INSTALL_PLUGIN_DIR);  // installed: <prefix>/bin/../lib/hsm-studio
#endif
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
    // its own copy first (kOpenFlags).
    void* handle = ::dlopen(file.c_str(), kOpenFlags);
    if (!handle) {
      const std::string why = ::dlerror();
      // The plugin is there but cannot be mapped: memory ran out (an address-space limit, ulimit
      // -v), and another HSM_PLUGIN_DIR would not help (issue 46: the hint said it would).
      if (why.find("map segment") != std::string::npos || why.find("allocate memory") != std::string::npos)
        throw std::runtime_error("out of memory loading the tokenizer plugin " + file.string() + " (" + why +
                                 "): raise the memory limit (ulimit -v) or free memory");
      tried += "\n  " + file.string() + " (" + why + ")";
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
