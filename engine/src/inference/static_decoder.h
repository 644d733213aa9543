#pragma once
// Batch-1 (or batch-B) decoding with static shapes (issue 49): the one-token step written so that
// it reads nothing on the host and every tensor it touches has one fixed shape and address, which
// is what a CUDA graph needs to record it once and replay it for every token
// (inference/cuda_graph_decoder.h). Device-independent: on the CPU it runs eagerly and gives the
// logits of GptImpl::step (the tests check that at every position of a full context).
//
// What is static, per layer:
//   - shift mixers (every ShiftMixerImpl): a shift register [B, R, d] of the last R inputs, slot
//     i holding the input of position pos − R + i (zeros before the sequence's start), R = the
//     largest shift (at most the context). A step reads x[pos − s] at slot R − s (a fixed view),
//     then shifts the register by one, the new input entering at slot R − 1. Where
//     GptImpl::step's ring indexes slot pos % R (a host integer), nothing here depends on pos.
//   - attention: keys and values in fixed [B, H, context, hd] buffers; the new key and value are
//     written at the position tensor, and the query attends to every slot with those after the
//     position masked to −inf (exactly zero weight), so the products have one shape for all
//     positions.
//   - the position: a 1-element int64 tensor on the device, read by the position embedding, the
//     KV writes and the masks, and advanced on the device at the end of each step.
// Models with a mixer outside these two families, DA *_qk layers or skipped layers are not
// served (unsupported() says why); their decoding stays on GptImpl::step.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "model/model.h"

namespace hsm {

class StaticDecoder {
 public:
  // Why `model` cannot decode with static shapes; empty when it can.
  static std::string unsupported(const GptImpl& model);

  // Buffers for `batch` sequences on the device and in the dtype of the model's weights (the
  // model in eval mode). Use it all inside c10::InferenceMode or all outside (its buffers are
  // made by the constructor and updated in place). std::invalid_argument (unsupported()'s reason) for a model it cannot
  // serve. The model's knock-outs (hsm/knock_out.h) are read here, once.
  explicit StaticDecoder(Gpt model, int64_t batch = 1);
  ~StaticDecoder();
  StaticDecoder(const StaticDecoder&) = delete;
  StaticDecoder& operator=(const StaticDecoder&) = delete;

  // The static input: the token ids fed at the next step, [B] int64 on the device.
  torch::Tensor& tokens();
  // The position the next step decodes at, [1] int64 on the device.
  const torch::Tensor& position() const;
  int64_t context() const;

  // One position: tokens() at position() -> next-token logits [B, V] (a new tensor), the caches
  // updated in place and position() advanced by one, all on the device. The caller keeps the
  // position below the context (nothing here checks it: checking would read the device).
  torch::Tensor step();
  // A new sequence: every cache zeroed, position 0.
  void reset();
  // Continues where GptImpl::prefill or GptImpl::step left `state` (batch B, same model): the
  // caches take its content, the position its pos.
  void load(const DecodeState& state);

  // One layer's static cache and step (static_decoder.cpp: the shift register, the fixed KV cache).
  struct Layer;

 private:
  Gpt model_;
  torch::Tensor tokens_, pos_;
  std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace hsm
