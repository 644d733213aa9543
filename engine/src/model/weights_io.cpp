// Weights of a model as safetensors (docs/checkpoint-format.md): what training, export and
// loading a model for inference share, so that neither inference nor training depends on the
// other for them (docs/architecture.md, "Layers").
#include "model/weights_io.h"

#include <cstdint>
#include <cstring>
#include <set>

#include "hsm/params.h"
#include "run/run_json.h"

namespace hsm {

// Floating tensors as F32; integer buffers (fixed_seq_qk's token ids) as I64.
TensorBlob to_blob(const std::string& name, const torch::Tensor& t) {
  const bool integer = !torch::isFloatingType(t.scalar_type());
  auto cpu = t.detach().to(torch::kCPU, integer ? torch::kLong : torch::kFloat32).contiguous();
  TensorBlob b;
  b.name = name;
  b.dtype = integer ? "I64" : "F32";
  b.shape = cpu.sizes().vec();
  b.data.assign(static_cast<const char*>(cpu.data_ptr()), cpu.numel() * cpu.element_size());
  return b;
}

// Weights are stored as F32 by training and may be F16 or BF16 in exported (bundled)
// runs; they are always computed in F32 (docs/checkpoint-format.md).
torch::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "F32") return torch::kFloat32;
  if (dtype == "F16") return torch::kFloat16;
  if (dtype == "BF16") return torch::kBFloat16;
  if (dtype == "I64") return torch::kLong;
  throw std::invalid_argument("weights of dtype " + dtype + " are not supported (F32, F16 or BF16)");
}

torch::Tensor from_blob(const TensorBlob& b) {
  auto t = torch::empty(b.shape, scalar_type(b.dtype));
  std::memcpy(t.data_ptr(), b.data.data(), b.data.size());
  return b.dtype == "I64" ? t : t.to(torch::kFloat32);
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}


void save_weights(Gpt& model, const std::string& path) {
  std::vector<TensorBlob> blobs;
  for (const auto& p : model->named_parameters()) blobs.push_back(to_blob(p.key(), p.value()));
  for (const auto& b : model->named_buffers()) blobs.push_back(to_blob(b.key(), b.value()));
  write_safetensors(path, blobs, {{"format", kCheckpointFormat}, {"config", to_json(model->config, -1)}});
}

void load_weights(Gpt& model, const std::string& path) {
  const SafetensorsFile file = read_safetensors(path);
  std::set<std::string> expected;
  torch::NoGradGuard no_grad;
  auto load_into = [&](const std::string& name, torch::Tensor& dst) {
    expected.insert(name);
    const TensorBlob* b = file.find(name);
    if (!b) throw std::runtime_error(path + ": missing tensor '" + name + "' (the file belongs to another model?)");
    const bool integer = !torch::isFloatingType(dst.scalar_type());
    if (integer ? b->dtype != "I64" : (b->dtype != "F32" && b->dtype != "F16" && b->dtype != "BF16"))
      throw std::runtime_error(path + ": tensor '" + name + "' is " + b->dtype + ", expected " +
                               (integer ? "I64" : "F32, F16 or BF16"));
    if (b->shape != dst.sizes().vec())
      throw std::runtime_error(path + ": tensor '" + name + "' has shape " + shape_text(b->shape) + ", the config needs " +
                               shape_text(dst.sizes().vec()));
    dst.copy_(from_blob(*b).to(dst.device(), dst.scalar_type()));
  };
  for (auto& p : model->named_parameters()) load_into(p.key(), p.value());
  for (auto& b : model->named_buffers()) load_into(b.key(), b.value());
  for (const auto& t : file.tensors)
    if (!expected.count(t.name))
      throw std::runtime_error(path + ": unexpected tensor '" + t.name + "' (not part of the configured model)");
  const std::string bad = first_non_finite(model);
  if (!bad.empty())
    throw std::runtime_error(path + ": tensor '" + bad +
                             "' holds NaN or infinite values (the run diverged): resume the run from an earlier "
                             "checkpoint with a lower learning rate, or train it again");
}

std::string first_non_finite(Gpt& model) {
  torch::NoGradGuard no_grad;
  for (const auto& p : model->named_parameters())
    if (!torch::isfinite(p.value()).all().item<bool>()) return p.key();
  for (const auto& b : model->named_buffers())
    if (torch::isFloatingType(b.value().scalar_type()) && !torch::isfinite(b.value()).all().item<bool>())
      return b.key();
  return {};
}

void check_weights_fit(const ModelConfig& config, const std::string& weights_path, const std::string& config_path) {
  const SafetensorsFile file = read_safetensors_header(weights_path);
  const auto mismatch = [&](const std::string& what) {
    return std::runtime_error(config_path + " and " + weights_path + " belong to different models: " + what +
                              " (put back the run's own config.json, or the weights it describes)");
  };
  int64_t stored = 0;
  std::set<int64_t> blocks;
  for (const TensorBlob& b : file.tensors) {
    if (b.dtype != "I64") {
      int64_t n = 1;
      for (int64_t d : b.shape) n = d > 0 && n <= INT64_MAX / d ? n * d : (d == 0 ? 0 : INT64_MAX);
      stored = stored <= INT64_MAX - n ? stored + n : INT64_MAX;
    }
    if (b.name.rfind("blocks.", 0) == 0) blocks.insert(std::atoll(b.name.c_str() + 7));
  }
  const std::pair<const char*, std::vector<int64_t>> shapes[] = {{"tok_emb.weight", {config.vocab_size, config.d_model}},
                                                                 {"pos_emb.weight", {config.context, config.d_model}}};
  for (const auto& [name, shape] : shapes)
    if (const TensorBlob* b = file.find(name); b && b->shape != shape)
      throw mismatch("tensor '" + std::string(name) + "' has shape " + shape_text(b->shape) + ", the config needs " +
                     shape_text(shape));
  if (static_cast<int64_t>(blocks.size()) != static_cast<int64_t>(config.layers.size()))
    throw mismatch("the config has " + std::to_string(config.layers.size()) + " layers, the weights file " +
                   std::to_string(blocks.size()));
  const int64_t needed = count_params(config).total();
  if (needed > stored)
    throw mismatch("the config's model has " + std::to_string(needed) + " parameters, the weights file holds " +
                   std::to_string(stored) + " values");
}

}  // namespace hsm
