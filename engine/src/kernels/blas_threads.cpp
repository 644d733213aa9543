#include "kernels/blas_threads.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hsm {

namespace {
// Looked up once: dlsym(RTLD_DEFAULT) walks every loaded library's symbol table, and
// evaluation sets the count twice per batch.
using Get = int (*)();
using Set = void (*)(int);
Get get_fn() {
  static const auto f = reinterpret_cast<Get>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return f;
}
Set set_fn() {
  static const auto f = reinterpret_cast<Set>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  return f;
}
}  // namespace

int blas_threads() { return get_fn() ? get_fn()() : 0; }

void set_blas_threads(int n) {
  if (set_fn()) set_fn()(n);
}

void warm_blas_buffer() {
  // sgemm_'s Fortran interface, looked up like the thread count (no BLAS header needed).
  using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
  static const auto sgemm = reinterpret_cast<Sgemm>(::dlsym(RTLD_DEFAULT, "sgemm_"));
  if (!get_fn() || !sgemm) return;
  // Large enough for OpenBLAS's blocked path (small products skip the buffer).
  constexpr int n = 256;
  static thread_local bool warmed = false;
  if (warmed) return;
  std::vector<float> a(static_cast<size_t>(n) * n, 0.0f), c(static_cast<size_t>(n) * n);
  const float one = 1.0f, zero = 0.0f;
  sgemm("N", "N", &n, &n, &n, &one, a.data(), &n, a.data(), &n, &zero, c.data(), &n);
  warmed = true;
}

void check_blas_address_space(int callers) {
  if (!get_fn()) return;
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  // OpenBLAS's BUFFER_SIZE on x86-64 (32 << 22 bytes), one per thread in a product at once,
  // and as much again for what LibTorch maps besides (a tiny model evaluates in that).
  constexpr size_t kBuffer = size_t{128} << 20;
  const size_t need = kBuffer * static_cast<size_t>(callers + 1);
  void* probe = ::mmap(nullptr, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (probe != MAP_FAILED) {
    ::munmap(probe, need);
    return;
  }
  const auto mib = [](uint64_t b) { return std::to_string(b >> 20) + " MiB"; };
  throw std::runtime_error("the address-space limit (ulimit -v) of " + mib(limit.rlim_cur) +
                           " leaves too little for the matrix products: OpenBLAS maps a 128 MiB buffer per thread (" +
                           std::to_string(callers) + " threads) and waits forever when it cannot; raise the limit by " +
                           mib(need) + " or more, or use fewer --threads");
}

}  // namespace hsm
