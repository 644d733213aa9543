// The CPU thread set-up of every command and of the studio (hsm/cpu_threads.h declares it):
// LibTorch's pool, OpenBLAS's threads, the allocator, and the checks of the kernel and
// matrix-product choices made through the environment.
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <torch/torch.h>

#include "hsm/cpu_threads.h"
#include "kernels/blas_threads.h"
#include "kernels/fast_kernels.h"
#include "kernels/gemm.h"
#include "kernels/parallel_gemm.h"

namespace hsm {

namespace {

int blas_threads_from_env() {
  const char* env = std::getenv("HSM_BLAS_THREADS");
  return env && std::atoi(env) > 0 ? std::atoi(env) : 0;
}

}  // namespace

// One pool for everything: LibTorch's (OpenMP) threads get the cores and OpenBLAS one thread;
// the engine splits the matrix products over LibTorch's pool itself (kernels/parallel_gemm.h).
// Two pools (OpenBLAS on the cores, LibTorch on one thread, the previous default) left a core
// spinning in OpenBLAS during every element-wise pass, and both on the cores fought; this
// trains 17-30 % faster than the previous default on the AMD EPYC (docs/performance.md).
int set_cpu_threads(int n) {
  if (n < 0 || n > 1024)
    throw std::invalid_argument("--threads: " + std::to_string(n) + " is out of range; use 0 (every core) to 1024");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int torch_threads = n > 0 ? n : cores;
  int blas = blas_threads_from_env();
  if (blas == 0) blas = 1;
  // Under an address-space limit too low for OpenBLAS's own buffers, LibTorch's pool can wait
  // forever for a thread it could not start (pthreadpool_create, measured at ulimit -v 600 MB):
  // refuse before building it; the full check for the products' threads follows below.
  check_blas_address_space(blas);
  torch::set_num_threads(torch_threads);
  // glibc hands blocks above its mmap threshold (dynamic, 128 kB to 32 MB) back to the kernel
  // when freed, so every training step page-faulted its activations in again (~10% of a step
  // in the kernel, measured with perf). Keep freed memory in the heap for reuse instead.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  set_blas_threads(blas);
  gemm_backend();  // an invalid HSM_GEMM or HSM_KERNELS is refused here, before any work starts
  fast::check_kernels_env();
  // An error now, not a hang in the first product: OpenBLAS's own threads, or LibTorch's when
  // the engine splits its products over them through LibTorch (whose products are OpenBLAS's).
  const bool products_in_openblas = gemm_backend() == GemmBackend::kLibTorch && split_gemms();
  check_blas_address_space(products_in_openblas ? std::max(torch_threads, blas) : blas);
  warm_blas_buffer();
  if (products_in_openblas) at::parallel_for(0, torch_threads, 1, [](int64_t, int64_t) { warm_blas_buffer(); });
  return torch_threads;
}

std::string cpu_threads_note() {
  const int blas = blas_threads();
  std::string note = "LibTorch " + std::to_string(torch::get_num_threads()) + " thread(s), ";
  note += blas > 0 ? "OpenBLAS " + std::to_string(blas) : std::string("no OpenBLAS found (slow reference BLAS?)");
  if (blas_threads_from_env() > 0) note += " (HSM_BLAS_THREADS)";
  if (split_gemms()) note += "; matrix products split over LibTorch's threads";
  note += "; " + gemm_backend_note() + "; " + fast::kernel_set() + " kernels";
  const char* kernels = std::getenv("HSM_KERNELS");
  return note + (kernels && *kernels ? " (HSM_KERNELS)" : "");
}

}  // namespace hsm
