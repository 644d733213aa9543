#pragma once
// The one entry point for the engine's fp32 CPU matrix products (issue 9).
//
// Two backends compute the same products (to rounding: they sum in different orders):
// - LibTorch's mm (OpenBLAS with Debian's LibTorch);
// - oneDNN's sgemm (Debian's libdnnl, the library LibTorch itself links for its mkldnn ops).
// On an AVX-512 Xeon oneDNN's JIT kernels ran 0.99-1.22x OpenBLAS's speed on every product of
// a training step and 1.09-1.12x on evaluation's (docs/performance.md, "Fifth round"); with
// AVX2 only they were 0.89-1.07x, slower on the weight gradients. So the default is oneDNN
// where the CPU has AVX-512 and the build found oneDNN, LibTorch's mm everywhere else;
// HSM_GEMM=onednn|libtorch overrides it, and the training log names the choice.
#include <torch/torch.h>

#include <string>

namespace hsm {

enum class GemmBackend { kLibTorch, kOneDnn };

// "libtorch" / "onednn".
std::string gemm_backend_name(GemmBackend backend);
// Parses a name as above; throws std::invalid_argument naming the accepted values, or saying
// that this build has no oneDNN when "onednn" is asked of such a build.
GemmBackend parse_gemm_backend(const std::string& name);
// True when this build links oneDNN.
bool onednn_available();

// The backend in use: HSM_GEMM when set (an invalid value throws, see parse_gemm_backend),
// else the default above. Chosen once per process, unless set_gemm_backend changes it.
GemmBackend gemm_backend();
// For benchmarks and tests that compare the backends in one process.
void set_gemm_backend(GemmBackend backend);
// Why the current backend was chosen, in words, for logs.
std::string gemm_backend_note();

// out = a · b + beta · out, for 2-D tensors: a [M, K], b [K, N], out [M, N]. With beta = 0
// out is only written (whatever it held, NaN included, does not leak into the result).
// fp32 CPU tensors whose rows or columns have unit stride (any narrow or transpose of a
// contiguous matrix) go to the backend above; anything else (CUDA, bf16, odd strides) to
// LibTorch. Runs on the calling thread's OpenMP pool (serially inside a parallel region).
void gemm(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, float beta = 0.0f);

}  // namespace hsm
