#pragma once
// Hand-written fp32 decoding of one sequence (batch 1) on the CPU, llama2.c style: the
// weights of a loaded Gpt copied once into plain arrays, preallocated buffers, a ring per HSM
// layer and a KV cache per attention layer, matrix-vector products by fast_kernels.h. A
// LibTorch step costs ~100 operator calls per token whose overhead is as large as the
// arithmetic at d = 256; this path has none. It computes what GptImpl::step computes (eval
// mode), equal to rounding (tests/engine/test_fast_decoder.cpp).
//
// No LibTorch in this header: the model and its decode state are only named.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hsm/config.h"

namespace hsm {

struct GptImpl;
struct DecodeState;
// The weights a FastDecoder reads: copied once from a model, shared read-only by every
// decoder made from them (each generation has its own decoder: its own rings and caches).
struct FastWeights;

class FastDecoder {
 public:
  // The one place that decides whether a model can be decoded here: every layer's mixer must
  // be one this file implements (unknown or new mixer kinds fall back to LibTorch).
  static bool supports(const ModelConfig& config);
  // Empty when supported, else why not (for logs).
  static std::string unsupported_reason(const ModelConfig& config);

  // Copies the weights of `model` (any dtype, on the CPU or not) as fp32 (or exact halves).
  // Throws std::invalid_argument for a model supports() refuses.
  static std::shared_ptr<const FastWeights> copy_weights(const GptImpl& model);
  // A decoder (position 0) over weights copied before: what one generation owns.
  explicit FastDecoder(std::shared_ptr<const FastWeights> weights);
  // The same with a copy of its own of model's weights.
  explicit FastDecoder(const GptImpl& model);
  ~FastDecoder();
  FastDecoder(const FastDecoder&) = delete;
  FastDecoder& operator=(const FastDecoder&) = delete;

  // Forgets the sequence: the next step is position 0.
  void reset();
  // Feeds one token at position pos() and returns the next-token logits [vocab_size()], valid
  // until the next call. Throws std::logic_error when the context is full (as GptImpl::step).
  const float* step(int32_t token);
  // Takes over a LibTorch decode state of batch 1 (after GptImpl::prefill or steps): rings
  // and KV caches are copied, decoding continues at state.pos.
  void load_state(const DecodeState& state);

  // How the weight matrices are kept: "fp16" (all exactly representable as halves, as in F16
  // exports: half the bytes to stream per token), "fp32", or "mixed".
  std::string weight_storage() const;
  // Threads the latest step used: 1, or more when the model is large enough and the machine
  // has cores free (hsm/cpu_threads.h, choose_decode_threads); 0 before the first step.
  int threads() const;
  int64_t pos() const;
  int64_t vocab_size() const;
  int64_t context() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hsm
