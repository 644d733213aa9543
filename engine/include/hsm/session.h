#pragma once
// A loaded model and the calls on it, in one object: the older face of hsm::Model
// (hsm/model.h) and its call objects Generator, Evaluator and Prober, kept while the studio's
// workers hold sessions (docs/architecture.md). Each method is one call object's; an edited
// session is an edited Model. New code takes a Model and the call object it needs.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/knock_out.h"
#include "hsm/model.h"
#include "hsm/probe.h"
#include "hsm/progress.h"
#include "hsm/prober.h"
#include "hsm/sampling.h"
#include "hsm/what_if.h"

namespace hsm {

class Tokenizer;

class Session {
 public:
  // Model::load.
  static std::unique_ptr<Session> open(const std::string& run_dir, const std::string& device = "auto");
  // A session over a model loaded before (one model shared by several sessions and threads).
  static std::unique_ptr<Session> over(std::shared_ptr<const Model> model);
  ~Session();

  // Generator::run.
  GenerationResult generate(const std::string& prompt, const GenerateOptions& options,
                            const std::function<bool(const GeneratedToken&)>& on_token = {});
  // Evaluator (hsm/evaluator.h): eval_set is Evaluator::read.
  EvalResult evaluate(const std::string& data_path, const EvalOptions& options);
  EvalSet eval_set(const std::string& data_path, const EvalOptions& options) const;
  EvalResult evaluate(const EvalSet& set, const EvalOptions& options);
  AblationReport ablate(const std::string& data_path, const EvalOptions& options);
  AblationReport ablate(const EvalSet& set, const EvalOptions& options);
  // Prober (hsm/prober.h).
  std::vector<float> logits(const std::vector<int32_t>& tokens);
  Diagnosis diagnose(const std::string& prompt, int64_t max_tokens = 0);
  Probe probe(const std::string& prompt, int64_t top_k = 5, int64_t max_tokens = 0);
  Probe probe_tokens(std::vector<int32_t> token_ids, int64_t top_k = 5);
  // Model (hsm/model.h): edited() is a session over Model::edited, sharing every weight the
  // edits do not change.
  std::vector<MixerWeights> mixer_weights() const;
  std::unique_ptr<Session> edited(const WhatIf& edits) const;
  const WhatIf& edits() const;
  void save_as(const std::string& run_dir) const;
  const ModelConfig& config() const;
  const Tokenizer& tokenizer() const;
  std::string device() const;
  std::string run_dir() const;
  // The shared model this session calls on.
  std::shared_ptr<const Model> model() const { return model_; }

 private:
  explicit Session(std::shared_ptr<const Model> model) : model_(std::move(model)) {}
  std::shared_ptr<const Model> model_;
};

}  // namespace hsm
