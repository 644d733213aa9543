#pragma once
// Parameter counting without building a model, and FFN matching (HSM §6.1, §8).
#include <cstdint>
#include <vector>

#include "hsm/config.h"

namespace hsm {

struct LayerParams {
  int64_t mixer = 0;
  int64_t ffn = 0;
  int64_t norms = 0;  // the block's two LayerNorms
  int64_t total() const { return mixer + ffn + norms; }
};

struct ParamCount {
  int64_t token_embedding = 0;     // vocab × d (tied with the output layer)
  int64_t position_embedding = 0;  // context × d
  int64_t final_norm = 0;
  std::vector<LayerParams> layers;
  int64_t total() const;
};

// Exact count of trainable parameters of the model the config builds (tested against the
// LibTorch model). `context` is the model's context length l: the extractors (EX §5) hold
// weights for each of the last l positions; it is unused by the other mixers.
int64_t mixer_params(const std::string& mixer, int64_t d_model, int64_t heads, int64_t context = 0);

// Hidden width f of DA's gated-MLP mixer ("mlp", three Linear layers with biases:
// 3·d·f + 2·f + d parameters): the integer f whose count is nearest to standard attention's
// 4d² + 4d (DA §3.2 matches it; d = 256 gives f = 341, 342 parameters below attention).
int64_t gated_mlp_width(int64_t d_model);
ParamCount count_params(const ModelConfig& config);

struct FfnMatch {
  ModelConfig config;   // the input with the matched layers' FFN widths replaced
  int64_t ffn = 0;      // the chosen width (a multiple of `multiple`)
  int64_t params = 0;   // total parameters of `config`
  std::vector<size_t> matched_layers;
};

// Picks one FFN width (a multiple of `multiple`, at least `multiple`) for the HSM layers
// (all layers when the model has none) so the total comes closest to `target_params`.
FfnMatch match_ffn(const ModelConfig& config, int64_t target_params, int64_t multiple = 64);

}  // namespace hsm
