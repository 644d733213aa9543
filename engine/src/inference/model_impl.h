#pragma once
// The engine's side of hsm::Model (hsm/model.h): what the call objects (generator.cpp,
// evaluator.cpp, prober.cpp) read. Nothing here changes after Model::load or Model::edited
// returns; that is what lets threads share a Model.
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>

#include "hsm/model.h"
#include "hsm/tasks.h"
#include "hsm/tokenizer.h"
#include "inference/fast_decoder.h"
#include "model/model.h"

namespace hsm {

struct Model::Impl {
  std::string run_dir;
  ModelConfig config;
  std::string trained_windows = "packed";  // Model::trained_windows()
  std::optional<Tokenizer> tokenizer;  // none for a task run
  std::shared_ptr<const Task> task;    // a task run's task (RUN/task.json); null for a corpus run
  torch::Device device{torch::kCPU};
  // Eval mode; its knock-outs are edits.knock_out, set once when the model is made. mutable:
  // LibTorch's forward is not a const method, but in eval mode without gradients it changes
  // nothing in the module.
  mutable Gpt gpt{nullptr};
  // The fast decoding path's copy of the weights, shared by every Generator (null when the
  // fast path does not apply: a GPU, a mixer it lacks). The knock-outs are not in it.
  std::shared_ptr<const FastWeights> fast;
  WhatIf edits;

  // The tokenizer, or for a task run (which reads no text) an exception saying so.
  const Tokenizer& text_tokenizer() const;
  // Model::token_label.
  std::string token_label(int32_t id) const;
};

// A new module graph over `model`'s weights: every parameter and buffer of the result shares
// its values with `model`'s (same data), in eval mode, with no knock-outs or skipped layers of
// its own. What an Evaluator sets its knock-outs on and what Model::edited edits, so the
// shared model is never changed.
Gpt share_weights(const Gpt& model, const ModelConfig& config, const torch::Device& device);

}  // namespace hsm
