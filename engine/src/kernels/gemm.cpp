#include "kernels/gemm.h"

#include <atomic>
#include <cstdlib>
#include <stdexcept>

#ifdef HSM_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace hsm {

namespace {

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  // oneDNN's avx512_core kernels need F, BW, VL and DQ (Skylake-X and later, AMD Zen 4).
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

GemmBackend default_backend() { return onednn_available() && cpu_has_avx512() ? GemmBackend::kOneDnn : GemmBackend::kLibTorch; }

GemmBackend backend_from_env() {
  const char* env = std::getenv("HSM_GEMM");
  return env && *env ? parse_gemm_backend(env) : default_backend();
}

// -1 until first asked; then a GemmBackend.
std::atomic<int> current_backend{-1};

#ifdef HSM_HAVE_ONEDNN
// A 2-D fp32 matrix as a row-major BLAS operand: 'N' when its rows are contiguous, 'T' when
// its columns are (a transposed view), with the leading dimension; false for other layouts.
struct Operand {
  char trans = 'N';
  int64_t ld = 0;
  const float* data = nullptr;
};
bool as_operand(const torch::Tensor& t, Operand& op) {
  const int64_t rows = t.size(0), cols = t.size(1);
  if (t.stride(1) == 1 && (rows == 1 || t.stride(0) >= cols)) {
    op = {'N', std::max<int64_t>({1, cols, t.stride(0)}), t.data_ptr<float>()};
    return true;
  }
  if (t.stride(0) == 1 && (cols == 1 || t.stride(1) >= rows)) {
    op = {'T', std::max<int64_t>({1, rows, t.stride(1)}), t.data_ptr<float>()};
    return true;
  }
  return false;
}

// out = a · b + beta · out through dnnl_sgemm; false when the layouts do not suit it.
bool onednn_gemm(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, float beta) {
  Operand A, B;
  if (out.stride(1) != 1 || (out.size(0) > 1 && out.stride(0) < out.size(1)) || !as_operand(a, A) || !as_operand(b, B))
    return false;
  const int64_t M = out.size(0), N = out.size(1), K = a.size(1);
  const int64_t ldc = std::max<int64_t>({1, N, out.stride(0)});
  const dnnl_status_t status =
      dnnl_sgemm(A.trans, B.trans, M, N, K, 1.0f, A.data, A.ld, B.data, B.ld, beta, out.data_ptr<float>(), ldc);
  if (status != dnnl_success)
    throw std::runtime_error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(status)) + ") on [" +
                             std::to_string(M) + ", " + std::to_string(K) + "] x [" + std::to_string(K) + ", " +
                             std::to_string(N) + "]; HSM_GEMM=libtorch uses LibTorch's products instead");
  return true;
}
#endif

}  // namespace

std::string gemm_backend_name(GemmBackend backend) { return backend == GemmBackend::kOneDnn ? "onednn" : "libtorch"; }

bool onednn_available() {
#ifdef HSM_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

GemmBackend parse_gemm_backend(const std::string& name) {
  if (name == "libtorch" || name == "openblas") return GemmBackend::kLibTorch;
  if (name == "onednn") {
    if (!onednn_available())
      throw std::invalid_argument("HSM_GEMM=onednn: this build has no oneDNN (install libdnnl-dev and rebuild), "
                                  "use HSM_GEMM=libtorch");
    return GemmBackend::kOneDnn;
  }
  throw std::invalid_argument("HSM_GEMM='" + name + "' is not a matrix-product backend: use onednn or libtorch");
}

GemmBackend gemm_backend() {
  int b = current_backend.load(std::memory_order_relaxed);
  if (b < 0) {
    b = static_cast<int>(backend_from_env());
    current_backend.store(b, std::memory_order_relaxed);
  }
  return static_cast<GemmBackend>(b);
}

void set_gemm_backend(GemmBackend backend) {
  if (backend == GemmBackend::kOneDnn && !onednn_available()) parse_gemm_backend("onednn");  // throws
  current_backend.store(static_cast<int>(backend), std::memory_order_relaxed);
}

std::string gemm_backend_note() {
  const GemmBackend b = gemm_backend();
  std::string note = b == GemmBackend::kOneDnn ? "products on oneDNN's sgemm" : "products on LibTorch's mm";
  const char* env = std::getenv("HSM_GEMM");
  if (env && *env) return note + " (HSM_GEMM)";
  if (b == GemmBackend::kOneDnn) return note + " (AVX-512 CPU)";
  return note + (onednn_available() ? " (no AVX-512)" : " (built without oneDNN)");
}

void gemm(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b, float beta) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && out.dim() == 2 && a.size(1) == b.size(0) && out.size(0) == a.size(0) &&
                  out.size(1) == b.size(1),
              "gemm: shapes ", a.sizes(), " x ", b.sizes(), " -> ", out.sizes(), " do not match");
  if (out.numel() == 0) return;
#ifdef HSM_HAVE_ONEDNN
  const bool cpu_fp32 = out.is_cpu() && a.is_cpu() && b.is_cpu() && out.scalar_type() == torch::kFloat32 &&
                        a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32;
  if (cpu_fp32 && gemm_backend() == GemmBackend::kOneDnn && onednn_gemm(out, a, b, beta)) return;
#endif
  if (beta == 0.0f)
    torch::mm_out(out, a, b);
  else
    out.addmm_(a, b, beta, 1.0f);
}

}  // namespace hsm
