#include "train/cuda_graph_step.h"

#include <cstdlib>
#include <stdexcept>

#ifdef HSM_CUDA_GRAPHS
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#endif

namespace hsm {

#ifdef HSM_CUDA_GRAPHS

namespace {
bool turned_off_by_environment() {
  const char* env = std::getenv("HSM_CUDA_GRAPH");
  return env && std::string(env) == "0";
}
}  // namespace

struct CudaGraphStep::Impl {
  std::vector<torch::Tensor> inputs;  // static: the batch the graph reads
  torch::Tensor lr;                   // static: 0-dim fp32, the step's learning rate
  torch::Tensor loss, bad;            // static: the step's outputs
  at::cuda::CUDAGraph graph;
};

bool CudaGraphStep::available(const torch::Device& device) {
  return device.is_cuda() && !turned_off_by_environment();
}

CudaGraphStep::CudaGraphStep(const std::vector<torch::Tensor>& example, Body body) : impl_(std::make_unique<Impl>()) {
  if (example.empty() || !example.front().is_cuda())
    throw std::runtime_error("a CUDA graph step needs its inputs on a CUDA device");
  const auto device = example.front().device();
  for (const auto& t : example) impl_->inputs.push_back(t.clone());
  impl_->lr = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device));
  // Recording must not happen on the default stream, and nothing may be pending on it: the graph
  // is recorded on a stream of its own, after everything queued so far has finished.
  torch::cuda::synchronize(device.index());
  auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
  // Autocast's cache of cast weights would keep tensors of the recording alive past it; off while
  // recording (what PyTorch asks of graphed code), as it was after.
  const bool cache_was = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  std::string failure;
  {
    at::cuda::CUDAStreamGuard on_side(side);
    impl_->graph.capture_begin();
    try {
      auto [loss, bad] = body(impl_->inputs, impl_->lr);
      impl_->loss = loss;
      impl_->bad = bad;
      impl_->graph.capture_end();
    } catch (const std::exception& e) {
      failure = e.what();
      // The stream must leave capture mode whatever happened inside, or every later launch fails.
      try {
        impl_->graph.capture_end();
      } catch (const std::exception&) {
      }
    }
  }
  at::autocast::set_autocast_cache_enabled(cache_was);
  torch::cuda::synchronize(device.index());
  if (!failure.empty()) {
    impl_.reset();
    throw std::runtime_error("the training step cannot be recorded as a CUDA graph: " +
                             failure.substr(0, failure.find('\n')));
  }
}

bool CudaGraphStep::fits(const std::vector<torch::Tensor>& inputs) const {
  if (inputs.size() != impl_->inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto &a = inputs[i], &b = impl_->inputs[i];
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type() || a.device() != b.device()) return false;
  }
  return true;
}

std::pair<torch::Tensor, torch::Tensor> CudaGraphStep::replay(const std::vector<torch::Tensor>& inputs, double lr) {
  if (!fits(inputs)) throw std::logic_error("CudaGraphStep::replay: inputs shaped unlike the recorded ones");
  for (size_t i = 0; i < inputs.size(); ++i) impl_->inputs[i].copy_(inputs[i], /*non_blocking=*/true);
  impl_->lr.fill_(lr);
  impl_->graph.replay();
  return {impl_->loss, impl_->bad};
}

#else  // no CUDA in this LibTorch: nothing to record

struct CudaGraphStep::Impl {};

bool CudaGraphStep::available(const torch::Device&) { return false; }

CudaGraphStep::CudaGraphStep(const std::vector<torch::Tensor>&, Body) {
  throw std::runtime_error("this build's LibTorch has no CUDA: no CUDA graph step");
}

bool CudaGraphStep::fits(const std::vector<torch::Tensor>&) const { return false; }

std::pair<torch::Tensor, torch::Tensor> CudaGraphStep::replay(const std::vector<torch::Tensor>&, double) {
  throw std::logic_error("CudaGraphStep::replay without CUDA");
}

#endif

CudaGraphStep::~CudaGraphStep() = default;

}  // namespace hsm
