#pragma once
// A recorder's look at the model being trained (diagnostics.jsonl, traces.jsonl): eval mode (no
// dropout: the model `hsm diagnose` and `hsm trace` load) for the scope, then the mode it was in.
#include "model/model.h"

namespace hsm {

class EvalModeScope {
 public:
  explicit EvalModeScope(Gpt& model) : model_(model), was_training_(model->is_training()) { model_->eval(); }
  ~EvalModeScope() {
    if (was_training_) model_->train();
  }
  EvalModeScope(const EvalModeScope&) = delete;
  EvalModeScope& operator=(const EvalModeScope&) = delete;

 private:
  Gpt& model_;
  bool was_training_;
};

}  // namespace hsm
