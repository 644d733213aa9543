#pragma once
// What the engine runs on, for the studio's status bar and About box and `hsm --version`.
#include <string>

namespace hsm {

struct SystemInfo {
  std::string engine_version;  // this project's version
  std::string torch_version;   // the LibTorch it was built against
  int cpu_cores = 0;           // hardware threads of this machine
  int torch_threads = 0;       // LibTorch intra-op threads now
  int cuda_devices = 0;        // 0 when LibTorch has no CUDA or no GPU is visible
};

// Cheap (no allocation on a device); call it on the engine's worker thread.
SystemInfo system_info();

// A short human name for a device setting: "CPU · 2 threads", "CUDA (cuda:0 of 1)".
// Throws std::invalid_argument for a device string the engine does not know.
std::string describe_device(const std::string& device, int cpu_threads);

}  // namespace hsm
