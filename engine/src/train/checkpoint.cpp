#include "train/checkpoint.h"

#include <algorithm>
#include <cstdio>
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
      metrics((fs::path(dir) / "metrics.jsonl").string()),
      diagnostics((fs::path(dir) / "diagnostics.jsonl").string()),
      checkpoints((fs::path(dir) / "checkpoints").string()) {}

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

namespace {

constexpr const char* kStepPrefix = "step-";

std::string step_dir_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%012lld", kStepPrefix, static_cast<long long>(step));
  return buf;
}

// The step of a published checkpoint folder's name, or -1 (a temporary, or another entry).
int64_t step_of(const std::string& name) {
  if (name.rfind(kStepPrefix, 0) != 0 || name.size() == 5 || name.size() > 25) return -1;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return -1;
  return std::stoll(name.substr(5));
}

Checkpoint checkpoint_at(const std::string& dir, int64_t step) {
  Checkpoint c;
  c.step = step;
  c.dir = dir;
  c.weights = (fs::path(dir) / "model.safetensors").string();
  c.optimizer = (fs::path(dir) / "optimizer.safetensors").string();
  c.config = (fs::path(dir) / "config.json").string();
  return c;
}

// Published checkpoints, newest first.
std::vector<Checkpoint> published_checkpoints(const std::string& checkpoints_dir) {
  std::vector<Checkpoint> all;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints_dir, ec)) {
    const int64_t step = step_of(entry.path().filename().string());
    if (step >= 0 && entry.is_directory()) all.push_back(checkpoint_at(entry.path().string(), step));
  }
  std::sort(all.begin(), all.end(), [](const Checkpoint& a, const Checkpoint& b) { return a.step > b.step; });
  return all;
}

// Replaces `to` by a hard link to `from` (a copy where the file system has no hard links),
// through a temporary name and one rename.
void replace_with_link(const std::string& from, const std::string& to) {
  const std::string tmp = to + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(from, tmp, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec) throw std::runtime_error("cannot write '" + tmp + "': " + ec.message());
  }
  fs::rename(tmp, to, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + to + "': " + ec.message());
  }
}

}  // namespace

std::optional<Checkpoint> latest_checkpoint(const std::string& run_dir) {
  for (const Checkpoint& c : published_checkpoints(RunPaths(run_dir).checkpoints))
    if (fs::exists(c.weights) && fs::exists(c.optimizer) && fs::exists(c.config)) return c;
  return std::nullopt;
}

void write_checkpoint(const RunPaths& paths, int64_t step, Gpt& model, const AdamW& optimizer,
                      const std::string& config_text) {
  fs::create_directories(paths.checkpoints);
  const std::string final_dir = (fs::path(paths.checkpoints) / step_dir_name(step)).string();
  const std::string tmp_dir = final_dir + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp_dir, ec);
  if (fs::exists(final_dir)) {
    // This step is published already (a stop right after a periodic checkpoint): it holds
    // the same weights and moments; only the top-level view is refreshed.
  } else {
    try {
      fs::create_directories(tmp_dir);
      const Checkpoint c = checkpoint_at(tmp_dir, step);
      save_weights(model, c.weights);
      save_optimizer(optimizer, c.optimizer);
      write_file_atomic(c.config, config_text);
      sync_dir(tmp_dir);
      fs::rename(tmp_dir, final_dir);  // the commit point: before it the checkpoint does not exist
      sync_dir(paths.checkpoints);
    } catch (...) {
      std::error_code ignored;
      fs::remove_all(tmp_dir, ignored);
      throw;
    }
  }
  refresh_run_view(paths, checkpoint_at(final_dir, step));
  const std::vector<Checkpoint> all = published_checkpoints(paths.checkpoints);
  for (size_t i = kKeptCheckpoints; i < all.size(); ++i) fs::remove_all(all[i].dir, ec);
  // A run written before step folders kept its optimizer at the top: it is stale now.
  fs::remove(paths.optimizer, ec);
}

void refresh_run_view(const RunPaths& paths, const Checkpoint& checkpoint) {
  replace_with_link(checkpoint.weights, paths.weights);
  write_file_atomic(paths.config, read_text_file(checkpoint.config, "checkpoint config"));
  sync_dir(paths.dir);
}

void remove_stale_temporaries(const std::string& run_dir) {
  const RunPaths paths(run_dir);
  std::error_code ec;
  for (const std::string& dir : {paths.dir, paths.checkpoints})
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) fs::remove_all(entry.path(), ec);
    }
}

Tokenizer load_run_tokenizer(const std::string& run_dir, const nlohmann::json& run_config) {
  const RunPaths paths(run_dir);
  if (!fs::exists(paths.tokenizer))
    throw std::runtime_error(paths.tokenizer + " is missing: a run folder keeps the tokenizer it was trained with");
  Tokenizer tokenizer = Tokenizer::load(paths.tokenizer);
  const nlohmann::json data = run_config.value("data", nlohmann::json::object());
  const auto recorded = data.find("tokenizer_hash");
  if (recorded != data.end() && recorded->is_string() && recorded->get<std::string>() != tokenizer.hash())
    throw std::runtime_error(paths.tokenizer + " is not the tokenizer this model was trained with (its hash is " +
                             tokenizer.hash() + ", config.json records " + recorded->get<std::string>() +
                             "): the same text would become other token ids. Put the run's own tokenizer.model "
                             "back, or train a new run with this tokenizer (hsm train --tokenizer)");
  const int64_t vocab = run_config.value("model", nlohmann::json::object()).value("vocab_size", int64_t{0});
  if (vocab > 0 && tokenizer.vocab_size() != vocab)
    throw std::runtime_error(paths.tokenizer + " has " + std::to_string(tokenizer.vocab_size()) +
                             " tokens, but config.json's model has vocab_size " + std::to_string(vocab));
  return tokenizer;
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
  load_run_tokenizer(run_dir, config);  // the export carries the model's own tokenizer, or none
  fs::create_directories(out_dir);
  SafetensorsFile file = read_safetensors(weights);
  std::vector<TensorBlob> blobs;
  for (const TensorBlob& b : file.tensors) {
    if (b.dtype == "I64") {  // token ids stay integers
      blobs.push_back(b);
      continue;
    }
    const auto weights32 = from_blob(b);
    if (!torch::isfinite(weights32).all().item<bool>())
      throw std::runtime_error(weights + ": tensor '" + b.name +
                               "' holds NaN or infinite values (the run diverged): nothing to export");
    auto t = weights32.to(target).contiguous();
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
