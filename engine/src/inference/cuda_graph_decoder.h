#pragma once
// Batch-1 decoding on CUDA as one CUDA graph per token (issue 49).
//
// LibTorch's cached step (GptImpl::step) launches ~15 operators per layer and reads the position
// on the host, so on a GPU a token costs more in launches than in arithmetic: cached decoding was
// no faster than recomputing the whole window. The static-shape step (inference/static_decoder.h:
// shift registers, a fixed KV buffer, the position as a device tensor) reads nothing on the host,
// so it is recorded once with at::cuda::CUDAGraph on a side stream (after an eager warm-up step,
// its caches zeroed again) and replayed for every token: one launch per token.
//
// A prompt goes through LibTorch's batched prefill (one pass), whose caches load() copies into the
// graph's buffers; then step() per token. Sampling stays on the host: step() returns the static
// logits on the device (the caller copies them out once per token, or feeds argmax on the device).
//
// Built where LibTorch has CUDA and is >= 2.2 (HSM_CUDA_GRAPHS, as the training graph,
// train/cuda_graph_step.h); elsewhere available() is false and the constructor throws.
// HSM_CUDA_GRAPH=0 in the environment turns it off (the caller stays on LibTorch's cached step).
#include <torch/torch.h>

#include <memory>

#include "model/model.h"

namespace hsm {

class CudaGraphDecoder {
 public:
  // Whether this build can record the decoding step on `device` (a CUDA device, LibTorch with
  // CUDA >= 2.2) and HSM_CUDA_GRAPH is not 0. Says nothing about the model (the constructor does).
  static bool available(const torch::Device& device);

  // Records the one-token step of `model` (on a CUDA device, eval mode) for batch 1. Throws
  // std::runtime_error naming why it cannot (a model StaticDecoder does not serve, a LibTorch
  // without graphs, a recording that failed); the caller then decodes with GptImpl::step.
  explicit CudaGraphDecoder(Gpt model);
  ~CudaGraphDecoder();
  CudaGraphDecoder(const CudaGraphDecoder&) = delete;
  CudaGraphDecoder& operator=(const CudaGraphDecoder&) = delete;

  // A new sequence from the state GptImpl::prefill (or step) left: the next step decodes at
  // state.pos.
  void load(const DecodeState& state);
  // One token at the current position -> the next-token logits [1, V] on the device: the graph's
  // static output, overwritten by the next step (copy it or use it before then). Nothing waits
  // for the GPU. std::logic_error when the context is full (the caller slides and loads again).
  const torch::Tensor& step(int64_t token);
  // The same with the token id already on the device ([1] int64, e.g. argmax of the last logits):
  // copied into the graph's input on the device, no host sync.
  const torch::Tensor& step(const torch::Tensor& token);
  // The position the next step decodes at.
  int64_t position() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hsm
