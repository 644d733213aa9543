// hsm/system_info.h: versions and devices, for the studio's status bar and About box.
#include "hsm/system_info.h"

#include <thread>

#include "hsm/version.h"
#include "model/torch_compat.h"

namespace hsm {

SystemInfo system_info() {
  SystemInfo s;
  s.engine_version = HSM_VERSION;
  s.torch_version = compat::torch_version();
  s.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  s.torch_threads = torch::get_num_threads();
  s.cuda_devices = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  return s;
}

std::string describe_device(const std::string& device, int cpu_threads) {
  const torch::Device d = compat::parse_device(device);  // throws for unknown names
  if (d.is_cuda()) {
    const int index = d.has_index() ? d.index() : 0;
    return "CUDA (cuda:" + std::to_string(index) + " of " + std::to_string(torch::cuda::device_count()) + ")";
  }
  return "CPU · " + std::to_string(cpu_threads) + (cpu_threads == 1 ? " thread" : " threads");
}

}  // namespace hsm
