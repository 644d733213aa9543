#include "inference/cuda_graph_decoder.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "inference/static_decoder.h"

#ifdef HSM_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#endif

namespace hsm {

#ifdef HSM_CUDA_GRAPHS

struct CudaGraphDecoder::Impl {
  explicit Impl(Gpt model) : dec(std::move(model), 1) {}
  StaticDecoder dec;
  torch::Tensor logits;  // static: the recorded step's output [1, V]
  int64_t pos = 0;       // the host's copy of dec.position()
  at::cuda::CUDAGraph graph;
};

bool CudaGraphDecoder::available(const torch::Device& device) {
  const char* env = std::getenv("HSM_CUDA_GRAPH");  // as the training graph (train/cuda_graph_step.cpp)
  return device.is_cuda() && !(env && std::string(env) == "0");
}

CudaGraphDecoder::CudaGraphDecoder(Gpt model) {
  const auto device = model->tok_emb->weight.device();
  if (!device.is_cuda()) throw std::runtime_error("CUDA graph decoding needs the model on a CUDA device");
  try {
    impl_ = std::make_unique<Impl>(std::move(model));
  } catch (const std::invalid_argument& e) {  // a model the static step does not serve
    throw std::runtime_error(e.what());
  }
  torch::NoGradGuard no_grad;
  // Recorded on a stream of its own with nothing pending, as the training graph. One eager step
  // first (on that stream) makes cuBLAS's handle and workspace and the allocator's blocks outside
  // the recording; its caches are zeroed again, and recording computes nothing.
  torch::cuda::synchronize(device.index());
  auto side = at::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
  std::string failure;
  {
    at::cuda::CUDAStreamGuard on_side(side);
    try {
      impl_->dec.step();
      impl_->dec.reset();
      side.synchronize();
      impl_->graph.capture_begin();
      try {
        impl_->logits = impl_->dec.step();
        impl_->graph.capture_end();
      } catch (const std::exception& e) {
        failure = e.what();
        try {  // the stream must leave capture mode whatever happened inside
          impl_->graph.capture_end();
        } catch (const std::exception&) {
        }
      }
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  torch::cuda::synchronize(device.index());
  if (!failure.empty()) {
    impl_.reset();
    throw std::runtime_error("the decoding step cannot be recorded as a CUDA graph: " +
                             failure.substr(0, failure.find('\n')));
  }
}

void CudaGraphDecoder::load(const DecodeState& state) {
  impl_->dec.load(state);
  impl_->pos = state.pos;
}

const torch::Tensor& CudaGraphDecoder::step(int64_t token) {
  if (impl_->pos >= impl_->dec.context()) throw std::logic_error("CUDA graph decoder: the context is full");
  torch::NoGradGuard no_grad;
  impl_->dec.tokens().fill_(token);
  impl_->graph.replay();
  ++impl_->pos;
  return impl_->logits;
}

const torch::Tensor& CudaGraphDecoder::step(const torch::Tensor& token) {
  if (impl_->pos >= impl_->dec.context()) throw std::logic_error("CUDA graph decoder: the context is full");
  torch::NoGradGuard no_grad;
  impl_->dec.tokens().copy_(token.reshape({1}), /*non_blocking=*/true);
  impl_->graph.replay();
  ++impl_->pos;
  return impl_->logits;
}

int64_t CudaGraphDecoder::position() const { return impl_->pos; }

#else  // no CUDA graphs in this LibTorch

struct CudaGraphDecoder::Impl {};

bool CudaGraphDecoder::available(const torch::Device&) { return false; }

CudaGraphDecoder::CudaGraphDecoder(Gpt) {
  throw std::runtime_error("this build's LibTorch has no CUDA graphs (CUDA, 2.2 or later): no CUDA graph decoding");
}

void CudaGraphDecoder::load(const DecodeState&) { throw std::logic_error("CudaGraphDecoder without CUDA"); }
const torch::Tensor& CudaGraphDecoder::step(int64_t) { throw std::logic_error("CudaGraphDecoder without CUDA"); }
const torch::Tensor& CudaGraphDecoder::step(const torch::Tensor&) {
  throw std::logic_error("CudaGraphDecoder without CUDA");
}
int64_t CudaGraphDecoder::position() const { return 0; }

#endif

CudaGraphDecoder::~CudaGraphDecoder() = default;

}  // namespace hsm
