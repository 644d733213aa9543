#pragma once
// One training step recorded once as a CUDA graph and replayed (issue 49).
//
// A step of a small model on a GPU is bound by launching operators, not by arithmetic: gpt at
// batch 256 launches ~3,900 of them per step (forward, backward, clip, AdamW). Recorded as one
// CUDA graph (static shapes, static input and output tensors), a step is one launch. The body is
// the caller's (the trainer's or `hsm bench`'s step, written as for eager mode); it must not read
// anything on the host, which AdamW::clip_and_step_recorded guarantees for the update.
//
// What the body reads must live in the graph's static tensors: the batch (inputs(), copied in by
// replay()) and the learning rate (a 0-dim fp32 on the device, filled by replay()). The model's
// parameters and AdamW's moments are updated in place, so checkpoints, validation and resumes
// see them as in eager mode. Dropout draws from the CUDA generator, which a graph replay advances
// (torch::manual_seed before a replay gives that step its own masks, as in eager mode).
//
// Built where LibTorch has CUDA (HSM_CUDA_GRAPHS, engine/CMakeLists.txt); elsewhere available()
// is false and record() throws. HSM_CUDA_GRAPH=0 in the environment turns it off (docs/performance.md).
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hsm {

class CudaGraphStep {
 public:
  // The step on the static inputs and learning rate: returns {loss (0-dim), not-finite flag (0-dim)}.
  using Body = std::function<std::pair<torch::Tensor, torch::Tensor>(const std::vector<torch::Tensor>& inputs,
                                                                       const torch::Tensor& lr)>;

  // Whether this build can record a step on `device` (a CUDA device, LibTorch 2.x with CUDA) and
  // HSM_CUDA_GRAPH is not 0.
  static bool available(const torch::Device& device);

  // Records `body` once for inputs shaped and typed as `example` (on the device). Nothing is
  // computed: the first replay() is the first step. Throws std::runtime_error naming why when it
  // cannot be recorded (an operator that syncs with the host, a LibTorch without graphs); the
  // caller then keeps the eager step, and the model, the optimizer and the gradients are as before.
  CudaGraphStep(const std::vector<torch::Tensor>& example, Body body);
  ~CudaGraphStep();
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;

  // Whether `inputs` can be replayed (the same count, shapes, types and device as recorded).
  bool fits(const std::vector<torch::Tensor>& inputs) const;
  // One step: `inputs` into the static inputs, `lr` into the static learning rate, the graph
  // replayed on the current stream. Returns the static outputs {loss, not finite}: read them (or
  // enqueue work on them) before the next replay, which overwrites them. Nothing waits for the GPU.
  std::pair<torch::Tensor, torch::Tensor> replay(const std::vector<torch::Tensor>& inputs, double lr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hsm
