#include "io/checkpoint.h"

#include <filesystem>
#include <set>

#include "hsm/safetensors.h"
#include "io/io_util.h"

namespace fs = std::filesystem;

namespace hsm {
namespace {

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

}  // namespace

RunPaths::RunPaths(std::string d)
    : dir(std::move(d)),
      weights((fs::path(dir) / "model.safetensors").string()),
      optimizer((fs::path(dir) / "optimizer.safetensors").string()),
      config((fs::path(dir) / "config.json").string()),
      tokenizer((fs::path(dir) / "tokenizer.model").string()),
      metrics((fs::path(dir) / "metrics.jsonl").string()) {}

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
}

void save_optimizer(const AdamW& optimizer, const std::string& path) {
  std::vector<TensorBlob> blobs;
  for (const auto& [name, t] : optimizer.state()) blobs.push_back(to_blob(name, t));
  write_safetensors(path, blobs, {{"format", kCheckpointFormat}, {"step", std::to_string(optimizer.steps())}});
}

void load_optimizer(AdamW& optimizer, const std::string& path, int64_t expected_step) {
  const SafetensorsFile file = read_safetensors(path);
  auto it = file.metadata.find("step");
  if (it == file.metadata.end()) throw std::runtime_error(path + ": no optimizer step in the metadata");
  const int64_t step = std::stoll(it->second);
  if (step != expected_step)
    throw std::runtime_error(path + ": optimizer is at step " + std::to_string(step) + " but config.json says " +
                             std::to_string(expected_step) + " (an interrupted checkpoint write?)");
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& b : file.tensors) state.emplace_back(b.name, from_blob(b));
  optimizer.load_state(state, step);
}

void export_run(const std::string& run_dir, const std::string& out_dir, const ExportOptions& options) {
  const torch::ScalarType target = scalar_type(options.dtype);
  const RunPaths from(run_dir), to(out_dir);
  const std::string weights = options.best && fs::exists(fs::path(run_dir) / "best.safetensors")
                                  ? (fs::path(run_dir) / "best.safetensors").string()
                                  : from.weights;
  nlohmann::json config = read_run_config(run_dir);  // checks it is a run folder
  if (fs::exists(out_dir) && fs::equivalent(run_dir, out_dir))
    throw std::invalid_argument("export into the run folder itself: choose another --out");
  fs::create_directories(out_dir);
  SafetensorsFile file = read_safetensors(weights);
  std::vector<TensorBlob> blobs;
  for (const TensorBlob& b : file.tensors) {
    if (b.dtype == "I64") {  // token ids stay integers
      blobs.push_back(b);
      continue;
    }
    auto t = from_blob(b).to(target).contiguous();
    TensorBlob out;
    out.name = b.name;
    out.dtype = options.dtype;
    out.shape = b.shape;
    out.data.assign(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
    blobs.push_back(std::move(out));
  }
  file.metadata["exported_from"] = fs::path(weights).filename().string();
  write_safetensors(to.weights, blobs, file.metadata);
  fs::copy_file(from.tokenizer, to.tokenizer, fs::copy_options::overwrite_existing);
  if (fs::exists(from.metrics)) fs::copy_file(from.metrics, to.metrics, fs::copy_options::overwrite_existing);
  config["export"] = {{"dtype", options.dtype}, {"weights", fs::path(weights).filename().string()}};
  write_file_atomic(to.config, config.dump(2) + "\n");
}

}  // namespace hsm
