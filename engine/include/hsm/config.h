#pragma once
// Model configuration: what a model is built from, saved next to every checkpoint.
// Plain C++ types only (docs/architecture.md, "Layers"): the app and the CLI include this without LibTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace hsm {

// One block of the stack: its token mixer and its FFN width (hybrids mix both).
struct LayerSpec {
  std::string mixer = "attn";  // an id from all_mixers()
  int64_t ffn = 512;           // hidden width of Linear(d, ffn) -> GELU -> Linear(ffn, d)
  int64_t heads = 8;           // heads of the mixer (1 for single-head HSM mixers)
  bool operator==(const LayerSpec& o) const {
    return mixer == o.mixer && ffn == o.ffn && heads == o.heads;
  }
};

// GPT-2 style decoder, pre-LN, learned positions, tied embeddings (HSM §6.1).
struct ModelConfig {
  std::string name = "custom";
  std::string description;
  int64_t vocab_size = 5000;
  int64_t d_model = 256;
  int64_t context = 128;
  double dropout = 0.1;
  // Weight initialisation: "gpt2" (N(0, 0.02), residual projections scaled by 1/√(2N), the
  // HSM mixers' own starting values) or "ex" (EX §6: every weight N(0, 0.01), every bias 0;
  // LayerNorm gains stay 1). Written to config.json only when not "gpt2".
  std::string init = "gpt2";
  std::vector<LayerSpec> layers;

  bool operator==(const ModelConfig& o) const {
    return name == o.name && description == o.description && vocab_size == o.vocab_size && d_model == o.d_model &&
           context == o.context && dropout == o.dropout && init == o.init && layers == o.layers;
  }
  bool operator!=(const ModelConfig& o) const { return !(*this == o); }
};

// Thrown for a config that cannot be built; the message names the field and the fix.
struct ConfigError : std::exception {
  explicit ConfigError(std::string msg) : message(std::move(msg)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

// Checks every field; throws ConfigError naming the first problem found
// (e.g. "layers[3].heads: 3 does not divide d_model 256").
void validate(const ModelConfig& config);

// JSON text <-> config. Parsing validates; unknown keys are rejected so typos surface.
std::string to_json(const ModelConfig& config, int indent = 2);
ModelConfig config_from_json(const std::string& json_text, const std::string& origin = "config");

// File helpers; errors name the path.
ModelConfig load_config(const std::string& path);
void save_config(const ModelConfig& config, const std::string& path);

}  // namespace hsm
