// The dispatch of the fast kernels: which set runs on this CPU (kernel_set.h), HSM_KERNELS,
// and the cap tests set to check each set's results on one machine.
#include "kernels/kernel_set.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/fast_kernels.h"

#ifdef HSM_FAST_X86
#include <cpuid.h>
#endif

namespace hsm::fast {
namespace {

// A kernel set's level by name (see level()); -1 for an unknown name.
int cap_of(const std::string& name) {
  return name == "avx512" ? 2 : name == "avx2" ? 1 : name == "generic" ? 0 : -1;
}

#ifdef HSM_FAST_X86
// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c",
// and the fuzz build (fuzz/README.md) compiles this file with clang.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// Which kernels run: 2 = AVX-512, 1 = AVX2, 0 = plain loops; the CPU's best unless
// HSM_KERNELS or a test (limit_kernel_set) capped it.
int detected_level() {
  static const int level =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") ? 2
      : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()                           ? 1
                                                                                                                    : 0;
  return level;
}
// The cap HSM_KERNELS sets for the whole process (2 when unset or not a set's name; the
// name is checked by check_kernels_env).
int env_cap() {
  static const int cap = [] {
    const char* env = std::getenv("HSM_KERNELS");
    const int c = env && *env ? cap_of(env) : 2;
    return c < 0 ? 2 : c;
  }();
  return cap;
}
std::atomic<int> level_cap{2};
#endif

}  // namespace

#ifdef HSM_FAST_X86
int detail::level() {
  return std::min({detected_level(), env_cap(), level_cap.load(std::memory_order_relaxed)});
}
#else
int detail::level() { return 0; }
#endif

const char* kernel_set() {
  static const char* const names[] = {"generic", "avx2", "avx512"};
  return names[detail::level()];
}

void check_kernels_env() {
  const char* env = std::getenv("HSM_KERNELS");
  if (env && *env && cap_of(env) < 0)
    throw std::invalid_argument("HSM_KERNELS='" + std::string(env) +
                                "' is not a kernel set: use avx512, avx2 or generic (or unset it for the CPU's best)");
}

const char* limit_kernel_set(const std::string& name) {
#ifdef HSM_FAST_X86
  const int cap = cap_of(name);
  if (cap < 0) throw std::invalid_argument("unknown kernel set '" + name + "' (use avx512, avx2 or generic)");
  level_cap.store(cap, std::memory_order_relaxed);
#else
  (void)name;
#endif
  return kernel_set();
}

}  // namespace hsm::fast
