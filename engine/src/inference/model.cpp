// hsm::Model (hsm/model.h): loading a run folder once, what-if edits as values that share
// every tensor they do not change, and "Save as…".
#include "hsm/model.h"

#include <filesystem>

#include "hsm/task_run.h"

#include "eval/mixing_matrix.h"
#include "inference/model_impl.h"
#include "io/io_util.h"
#include "model/torch_compat.h"
#include "run/run_json.h"
#include "model/weights_io.h"
#include "eval/task_data.h"

namespace fs = std::filesystem;

namespace hsm {

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

Gpt share_weights(const Gpt& model, const ModelConfig& config, const torch::Device& device) {
  Gpt view(config);  // its own freshly initialised values are dropped below
  view->to(device);
  torch::NoGradGuard no_grad;
  const auto from_p = model->named_parameters(), to_p = view->named_parameters();
  for (const auto& p : from_p) to_p[p.key()].set_data(p.value());
  const auto from_b = model->named_buffers(), to_b = view->named_buffers();
  for (const auto& b : from_b) to_b[b.key()].set_data(b.value());
  view->eval();
  return view;
}

std::shared_ptr<const Model> Model::load(const std::string& run_dir, const std::string& device, int64_t step) {
  std::shared_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.run_dir = run_dir;
  const RunFolder paths(run_dir);
  const nlohmann::json run = read_run_config(run_dir);
  m.config = config_from_json(run["model"].dump(), paths.config);
  if (auto t = run.find("training"); t != run.end() && t->is_object())
    if (auto w = t->find("windows"); w != t->end() && w->is_string()) m.trained_windows = w->get<std::string>();
  // A task run reads no text: its task (RUN/task.json) names its tokens. A corpus run keeps
  // the tokenizer it was trained with, or is refused.
  if (const std::string task = run_task(run_dir); !task.empty()) {
    m.task = parse_task(task);
    check_run_fits_task(run_dir, m.config, *m.task);
  } else {
    m.tokenizer = load_run_tokenizer(run_dir, run);
  }
  m.device = compat::parse_device(device);
  // The weights of `step` (issue 67: a snapshot), or the newest.
  const std::string weights = step >= 0 ? paths.model_at(step).weights : paths.weights;
  check_weights_fit(m.config, weights, paths.config);  // before a model of the config's size is built
  m.gpt = Gpt(m.config);
  load_weights(m.gpt, weights);
  m.gpt->to(m.device);
  m.gpt->eval();
  // A folder written by save_as(): its a/b edits are in the weights; its knock-outs are not.
  if (auto w = run.find("what_if"); w != run.end()) {
    m.edits.knock_out = what_if_knock_outs(*w, paths.config);
    m.gpt->set_knock_outs(m.edits.knock_out);  // throws for a layer or head the model does not have
  }
  // The fast decoding path's copy of the weights is part of loading the model (as LibTorch's
  // own), not of the first generation.
  if (m.device.is_cpu() && FastDecoder::supports(m.config)) m.fast = FastDecoder::copy_weights(*m.gpt);
  return model;
}

std::shared_ptr<const Model> Model::edited(const WhatIf& edits) const {
  const Impl& src = *impl_;
  std::shared_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  m.run_dir = src.run_dir;
  m.config = src.config;
  m.trained_windows = src.trained_windows;
  m.tokenizer = src.tokenizer;
  m.task = src.task;
  m.device = src.device;
  m.gpt = share_weights(src.gpt, m.config, m.device);
  const auto layers = static_cast<int64_t>(m.gpt->blocks.size());
  for (const AbEdit& e : edits.ab) {
    if (e.layer < 0 || e.layer >= layers)
      throw std::invalid_argument("a/b edit of layer " + std::to_string(e.layer) + ": the model has layers 0.." +
                                  std::to_string(layers - 1));
    const auto l = static_cast<size_t>(e.layer);
    const std::string layer = "layer " + std::to_string(e.layer) + " (" + m.config.layers[l].mixer + ")";
    auto& mixer = *m.gpt->blocks[l]->mixer;
    {
      // set_ab writes in place: the edited layer's mixer gets values of its own first (a few
      // scalars or vectors), so the source model's stay as they are.
      torch::NoGradGuard no_grad;
      for (auto& p : mixer.parameters()) p.set_data(p.detach().clone());
    }
    try {
      if (!mixer.set_ab(e.a, e.b)) throw std::invalid_argument("has no a and b to set");
    } catch (const std::invalid_argument& err) {
      throw std::invalid_argument(layer + " " + err.what());
    }
  }
  // An edit of an edited model keeps the edits it was made from, then these.
  m.edits = src.edits;
  m.edits.knock_out.insert(m.edits.knock_out.end(), edits.knock_out.begin(), edits.knock_out.end());
  m.edits.ab.insert(m.edits.ab.end(), edits.ab.begin(), edits.ab.end());
  m.gpt->set_knock_outs(m.edits.knock_out);  // throws for a layer or head the model does not have
  // The fast path reads copied weights: the source's serve as long as no a or b changed.
  if (edits.ab.empty())
    m.fast = src.fast;
  else if (m.device.is_cpu() && FastDecoder::supports(m.config))
    m.fast = FastDecoder::copy_weights(*m.gpt);
  return model;
}

const WhatIf& Model::edits() const { return impl_->edits; }
const std::string& Model::trained_windows() const { return impl_->trained_windows; }

void Model::save_as(const std::string& run_dir) const {
  const Impl& m = *impl_;
  std::error_code ec;
  if (fs::exists(run_dir, ec) && !(fs::is_directory(run_dir, ec) && fs::is_empty(run_dir, ec)))
    throw std::invalid_argument("save as '" + run_dir + "': the folder exists and is not empty (choose a new one)");
  nlohmann::json config = read_run_config(m.run_dir);
  config["what_if"] = what_if_to_json(m.edits, fs::absolute(m.run_dir).lexically_normal().string());
  // The run folder's one recipe for a copy, as an export's (RunFolder::publish_copy): the edited
  // weights (knock-outs are no weights: what_if has them), its task or tokenizer, its metrics.
  try {
    RunFolder(m.run_dir).publish_copy(run_dir, config.dump(2) + "\n",
                                      [&](const std::string& weights) { save_weights(m.gpt, weights); });
  } catch (const std::exception& e) {
    throw std::runtime_error("save as '" + run_dir + "': " + e.what());
  }
}

std::vector<MixerWeights> Model::mixer_weights() const { return hsm::mixer_weights(impl_->gpt); }
const ModelConfig& Model::config() const { return impl_->config; }
const Tokenizer& Model::tokenizer() const { return impl_->text_tokenizer(); }
const Task* Model::task() const { return impl_->task.get(); }
std::string Model::token_label(int32_t id) const { return impl_->token_label(id); }

const Tokenizer& Model::Impl::text_tokenizer() const {
  if (!tokenizer)
    throw std::invalid_argument(run_dir + " was trained on the task " + (task ? task->name() : std::string("?")) +
                                ": it has no tokenizer and reads no text; its prompts are the task's examples "
                                "(the Diagnostics and Probe views show them)");
  return *tokenizer;
}

std::string Model::Impl::token_label(int32_t id) const { return task ? task->token_label(id) : tokenizer->piece(id); }
std::string Model::device() const { return impl_->device.str(); }
std::string Model::run_dir() const { return impl_->run_dir; }

std::map<std::string, const void*> Model::tensor_data() const {
  std::map<std::string, const void*> out;
  for (const auto& p : impl_->gpt->named_parameters()) out[p.key()] = p.value().data_ptr();
  for (const auto& b : impl_->gpt->named_buffers()) out[b.key()] = b.value().data_ptr();
  return out;
}

}  // namespace hsm
