#pragma once
// The CPU thread set-up of every command and of the studio (kernels/cpu_threads.cpp): the
// kernels' own header, so the lowest layer knows nothing of the trainer or the studio
// (docs/architecture.md, "Layers"). Plain C++.
#include <string>

namespace hsm {

// CPU threads for LibTorch (intra-op) and OpenBLAS. n > 0: LibTorch on n threads; n == 0:
// LibTorch on every core. OpenBLAS gets $HSM_BLAS_THREADS or 1 thread: the engine splits the
// matrix products over LibTorch's pool itself, and two pools on the same cores oversubscribe
// them (docs/performance.md). Returns LibTorch's thread count; std::invalid_argument for n
// outside 0..1024.
int set_cpu_threads(int n);

// What set_cpu_threads chose, in words, for logs ("LibTorch 2 thread(s), OpenBLAS 1, ...").
std::string cpu_threads_note();

}  // namespace hsm
