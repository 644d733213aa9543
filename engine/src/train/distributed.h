#pragma once
// One rank's side of data-parallel training over PyTorch's c10d (docs/distributed.md): the TCPStore
// rendezvous, the process group (Gloo for CPU tensors, NCCL for CUDA tensors where LibTorch has it),
// the DDP Reducer that all-reduces gradients in buckets while the backward pass runs, and the
// words for a rank that died or hangs.
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hsm/distributed.h"

namespace hsm {

// A collective failed or timed out; the message names the rank that is missing or behind.
struct DistributedFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class DataParallel {
 public:
  // Rendezvous and process group for training on `device` (cpu, cuda, cuda:N or auto, as
  // --device takes it); throws std::invalid_argument for bad launcher settings (a port in use, a
  // rank that cannot reach rank 0), a backend that cannot carry the device's tensors (before any
  // rendezvous), and DistributedFailure for a missing rank.
  DataParallel(const DistributedOptions& options, const std::string& device);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  std::string backend() const { return backend_; }
  // The device this rank trains on: on CUDA without an index, its own GPU (cuda:LOCAL_RANK).
  torch::Device device() const { return device_; }
  // What the log says of the backend beyond its name ("" or why NCCL was not taken).
  std::string backend_note() const { return backend_note_; }

  // The collectives' backend, "gloo" or "nccl", for --backend `requested` (auto, gloo, nccl) and
  // tensors on CUDA or not, where this build has NCCL or not: auto is NCCL for CUDA tensors where
  // the build has it, else Gloo. Throws std::invalid_argument, in words, for NCCL on the CPU and
  // for NCCL asked for where the build has none (`nccl_absent`: why not).
  static std::string choose_backend(const std::string& requested, bool cuda, bool nccl, const std::string& nccl_absent);
  // Whether this build's data-parallel code has c10d's ProcessGroupNCCL; if not, why not.
  static bool nccl_built();
  static std::string nccl_absent_reason();

  // Rank 0 tells the others that the run folder and the data caches are ready ("" = ready,
  // else the error that stopped it); the others wait for it (as long as rank 0 lives: its
  // death closes the store and ends the wait).
  void publish_ready(const std::string& error);
  void await_ready();

  // Rank 0's parameters to every rank (a resumed or freshly initialised model starts equal
  // everywhere), then the Reducer over them: gradients are averaged over the ranks in buckets
  // of options.bucket_mb, each all-reduced as soon as its gradients are ready in backward.
  void attach(const std::vector<torch::Tensor>& parameters);
  // Before loss.backward(): arms the Reducer for this step.
  void prepare_backward(const torch::Tensor& loss);
  // Seconds from prepare_backward to the last parameter's gradient (the backward computation;
  // what backward takes beyond it is all-reduce the computation did not hide).
  double last_gradient_ready_s() const { return last_gradient_s_; }
  // Seconds one all-reduce of the whole gradient takes alone (measured once in attach()).
  double full_all_reduce_s() const { return full_all_reduce_s_; }
  // Element-wise sum over the ranks, in place (a CPU tensor, or one on the process group's device).
  void all_reduce_sum(torch::Tensor& t);
  // The step this rank is at, for the heartbeat (a failure message says who is behind).
  void at_step(int64_t step) { step_ = step; }

  // Runs `what` (a collective); on any exception from c10d, throws DistributedFailure whose
  // message says which rank is missing, behind or gone, and leaves the process group alone
  // (its destructor could wait for work a dead rank will never do).
  template <class F>
  auto guarded(const char* what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const DistributedFailure&) {
      throw;
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
  }
  [[noreturn]] void fail(const std::string& what, const std::string& error);

 private:
  std::string diagnose();  // which rank is gone or behind, read from the heartbeats
  void heartbeat_loop();
  void abandon();

  DistributedOptions options_;
  torch::Device device_;
  std::string backend_, backend_note_;
  struct C10d;  // the store, the process group and the Reducer (c10d's headers stay in the .cpp)
  std::unique_ptr<C10d> c10d_;
  std::atomic<int64_t> step_{0};
  std::chrono::steady_clock::time_point backward_start_;
  double last_gradient_s_ = 0, full_all_reduce_s_ = 0;
  std::atomic<bool> stop_beat_{false};
  std::thread beat_;
};

}  // namespace hsm
