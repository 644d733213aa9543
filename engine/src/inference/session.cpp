// Session (hsm/session.h): each method one call object's on the session's shared Model.
#include "hsm/session.h"

namespace hsm {

Session::~Session() = default;

std::unique_ptr<Session> Session::open(const std::string& run_dir, const std::string& device) {
  return over(Model::load(run_dir, device));
}

std::unique_ptr<Session> Session::over(std::shared_ptr<const Model> model) {
  if (!model) throw std::invalid_argument("Session::over: no model");
  return std::unique_ptr<Session>(new Session(std::move(model)));
}

GenerationResult Session::generate(const std::string& prompt, const GenerateOptions& options,
                                   const std::function<bool(const GeneratedToken&)>& on_token) {
  return Generator(model_).run(prompt, options, on_token);
}

EvalResult Session::evaluate(const std::string& data_path, const EvalOptions& options) {
  return Evaluator(model_).evaluate(data_path, options);
}
EvalSet Session::eval_set(const std::string& data_path, const EvalOptions& options) const {
  return Evaluator(model_).read(data_path, options);
}
EvalResult Session::evaluate(const EvalSet& set, const EvalOptions& options) {
  return Evaluator(model_).evaluate(set, options);
}
AblationReport Session::ablate(const std::string& data_path, const EvalOptions& options) {
  return Evaluator(model_).ablate(data_path, options);
}
AblationReport Session::ablate(const EvalSet& set, const EvalOptions& options) {
  return Evaluator(model_).ablate(set, options);
}

std::vector<float> Session::logits(const std::vector<int32_t>& tokens) { return Prober(model_).logits(tokens); }
Diagnosis Session::diagnose(const std::string& prompt, int64_t max_tokens) {
  return Prober(model_).diagnose(prompt, max_tokens);
}
Probe Session::probe(const std::string& prompt, int64_t top_k, int64_t max_tokens) {
  return Prober(model_).probe(prompt, top_k, max_tokens);
}
Probe Session::probe_tokens(std::vector<int32_t> token_ids, int64_t top_k) {
  return Prober(model_).probe_tokens(std::move(token_ids), top_k);
}

std::vector<MixerWeights> Session::mixer_weights() const { return model_->mixer_weights(); }
std::unique_ptr<Session> Session::edited(const WhatIf& edits) const {
  return std::unique_ptr<Session>(new Session(model_->edited(edits)));
}
const WhatIf& Session::edits() const { return model_->edits(); }
void Session::save_as(const std::string& run_dir) const { model_->save_as(run_dir); }
const ModelConfig& Session::config() const { return model_->config(); }
const Tokenizer& Session::tokenizer() const { return model_->tokenizer(); }
std::string Session::device() const { return model_->device(); }
std::string Session::run_dir() const { return model_->run_dir(); }

}  // namespace hsm
