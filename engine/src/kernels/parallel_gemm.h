#pragma once
// Matrix products split over LibTorch's threads, with OpenBLAS on one thread (issue 9).
//
// With OpenBLAS on every core and LibTorch on one, each element-wise pass between two GEMMs
// runs on one core while OpenBLAS's worker spins on the other, and the two pools fight when
// both are busy. In "split" mode (set_cpu_threads) LibTorch's pool has every core and OpenBLAS
// one thread: the matrix products of the linear layers and the output layer are cut into one
// block of rows per thread here, so GEMMs and element-wise work share one pool.
#include <torch/torch.h>

#include <functional>

namespace hsm {

// True when the products below split over LibTorch's threads: more than one LibTorch thread
// and OpenBLAS (when present) on one.
bool split_gemms();

// Calls f(begin, end) on consecutive row ranges covering [0, rows), one per LibTorch thread
// in split mode (boundaries at multiples of 16 rows), else once with [0, rows). The ranges do
// not depend on anything but rows and the thread count; inside a SerialScope, one range.
void for_row_blocks(int64_t rows, const std::function<void(int64_t, int64_t)>& f);

// While one lives, the calling thread computes everything by itself, the same way whichever
// thread it is and however many threads the process has: for_row_blocks runs one block,
// linear() takes the gemm() path (the one split mode takes) in one block, and the OpenMP
// regions this thread opens (ATen's intra-op loops, oneDNN's sgemm) get one thread. A matrix
// product over a different number of rows, or split differently inside a BLAS, may round
// differently (measured on AMD Zen 3 and Zen 5), so a result that must not depend on the
// threads (evaluation) is computed in pieces of fixed size, each inside one of these.
// OpenBLAS's thread count is the process's, not the thread's: hold it at one with
// OneBlasThread around the whole computation.
class SerialScope {
 public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  bool was_serial_;
  int omp_threads_;
};
// True inside a SerialScope on this thread.
bool in_serial_scope();
// ATen's once-per-thread setting of this thread's OpenMP count (LibTorch's pool size), done now,
// so that a count set after it holds: any code that sets the count for a scope calls this first.
void init_aten_threads_here();

// OpenBLAS on one thread for this object's life (nothing without OpenBLAS); the count before
// is restored after.
class OneBlasThread {
 public:
  OneBlasThread();
  ~OneBlasThread();
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int before_;
};

// out = a · b: a [M, K], b [K, N], out [M, N], split over M.
void mm_rows(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b);

// y = x · weightᵀ + bias for x [..., in], weight [out, in], bias [out] (may be undefined):
// torch::nn::functional::linear, with the forward and backward GEMMs split in split mode on
// the CPU in fp32 (the rows of x for y and dx, the rows of weight for its gradient). Inside a
// SerialScope the same gemm() path, unsplit.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
// The same through a Linear module's weight and bias: what module->forward(x) computes.
torch::Tensor linear(const torch::nn::Linear& module, const torch::Tensor& x);

}  // namespace hsm
