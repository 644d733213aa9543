#pragma once
// A trained model loaded from a run folder: config, tokenizer and weights. Immutable once
// loaded and shared by threads as std::shared_ptr<const Model>. What one use of it needs lives
// in a short-lived call object that borrows it, as llama.cpp keeps llama_model apart from
// llama_context: Generator (hsm/generator.h), Evaluator (hsm/evaluator.h), Prober
// (hsm/prober.h). docs/architecture.md follows one call through them. Plain C++.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "hsm/what_if.h"

namespace hsm {

class Task;
class Tokenizer;

class Model {
 public:
  // Loads config.json, model.safetensors and tokenizer.model from a run folder; every file is
  // checked and a mismatch is refused with a message naming the file. A task run (one with
  // task.json, hsm/task_run.h) has no tokenizer: its task names its tokens instead. A folder written by
  // save_as() comes back with its knock-outs (its a/b edits are in its weights).
  // step >= 0: the model as it was at that step (a snapshot or a kept checkpoint,
  // RunFolder::model_at; std::invalid_argument naming the kept steps when the folder has none).
  static std::shared_ptr<const Model> load(const std::string& run_dir, const std::string& device = "auto",
                                           int64_t step = -1);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // What-if (hsm/what_if.h) as a value: this model with `edits` applied, in memory only. The
  // edited model shares every tensor it does not change with this one (a layer's a and b are
  // the only weights an edit writes; knock-outs write none), so an edit costs the few values
  // it changes, and this model and its run folder stay as they are. An edited model's
  // edits() are this one's followed by `edits`. An empty WhatIf gives an equal model.
  // Throws std::invalid_argument for a layer outside the model, a layer whose mixer has no a
  // and b, a head it cannot knock out, or a and b of the wrong size.
  std::shared_ptr<const Model> edited(const WhatIf& edits) const;
  // Empty for a model loaded from a folder, except the knock-outs of a folder save_as() wrote.
  const WhatIf& edits() const;
  // "Save as…": writes this (edited) model as a new run folder: config.json (with "what_if"
  // recording the edits and the folder it came from), model.safetensors, tokenizer.model and
  // the source's metrics.jsonl; load() of it gives the same model, knock-outs included.
  // Refuses a folder that exists and is not empty (so never the source run folder).
  void save_as(const std::string& run_dir) const;

  // The learned mixer weights of every layer (the Weights view).
  std::vector<MixerWeights> mixer_weights() const;
  const ModelConfig& config() const;
  // The windows its run was trained on (config.json's training.windows: "packed" or
  // "story_start"; "packed" for a run that records none, as runs were trained before the
  // setting existed): what an evaluation scores unless told otherwise (EvalOptions::windows).
  const std::string& trained_windows() const;
  // Throws std::invalid_argument for a task run, which has no tokenizer and reads no text.
  const Tokenizer& tokenizer() const;
  // A task run's task (its prompts are the task's examples: Prober::task_prompt); null for a
  // run trained on a corpus.
  const Task* task() const;
  // What token `id` is called wherever tokens are shown: the tokenizer's piece, or for a task
  // run the task's label ("k12", "v7", ...: Task::token_label).
  std::string token_label(int32_t id) const;
  std::string device() const;
  std::string run_dir() const;
  // The address of every parameter's and buffer's values, by name: what tells an edited
  // model's shared tensors from its own (tests, memory accounting).
  std::map<std::string, const void*> tensor_data() const;

  // The engine's side (inference/model_impl.h); opaque to the CLI and the app.
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  Model();
  std::unique_ptr<Impl> impl_;
};

}  // namespace hsm
