#pragma once
// Weights of a model as safetensors (docs/checkpoint-format.md): writing, reading and checking
// them against a config. Used by training (checkpoints), export, and hsm::Model (loading and
// "save as"), so it lives with the model, below both (docs/architecture.md, "Layers").
#include <torch/torch.h>

#include <string>
#include <vector>

#include "hsm/safetensors.h"
#include "model/model.h"

namespace hsm {

// One tensor as a safetensors blob: floating tensors as F32, integer buffers (fixed_seq_qk's
// token ids) as I64.
TensorBlob to_blob(const std::string& name, const torch::Tensor& t);
// A stored dtype's LibTorch type (F32, F16, BF16, I64); throws for any other.
torch::ScalarType scalar_type(const std::string& dtype);
// A blob as a tensor: floating ones as F32 (exported runs may store F16 or BF16).
torch::Tensor from_blob(const TensorBlob& b);
std::string shape_text(const std::vector<int64_t>& s);

// Compares a config with a weights file's header before anything is allocated (issue 34): a
// config.json claiming a model far larger than model.safetensors holds (or with other
// embedding shapes, or another number of layers) throws std::runtime_error naming both files,
// instead of building a model of the config's size first.
void check_weights_fit(const ModelConfig& config, const std::string& weights_path, const std::string& config_path);

// The name of the first parameter or buffer holding a NaN or an infinity, or "" when every
// value is finite.
std::string first_non_finite(Gpt& model);

// Weights: writes every parameter and buffer as F32 (bf16/half training copies converted).
void save_weights(Gpt& model, const std::string& path);
// Reads and checks the file against the model: every tensor present, no extra ones, shapes
// and dtype (F32) equal, every value finite (the weights of a diverged run are refused, not
// evaluated into "loss": null). Throws std::runtime_error naming the file and the first mismatch.
void load_weights(Gpt& model, const std::string& path);

}  // namespace hsm
