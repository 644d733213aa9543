#include "train/checkpoint.h"

#include "hsm/safetensors.h"
#include "model/weights_io.h"
#include "run/run_json.h"

namespace hsm {

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

}  // namespace hsm
