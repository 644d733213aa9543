#include "hsm/params.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "hsm/mixer_kind.h"

namespace hsm {
namespace {
int64_t linear(int64_t in, int64_t out, bool bias = true) { return in * out + (bias ? out : 0); }
}  // namespace

int64_t mixer_params(const std::string& mixer, int64_t d, int64_t heads, int64_t context) {
  const MixerInfo& info = mixer_info(mixer);
  if (info.family == MixerFamily::kExtractor && context <= 0)
    throw std::invalid_argument("mixer_params: extractor " + mixer + " needs the context length, got " +
                                std::to_string(context));
  return info.params(d, heads, context);
}

int64_t gated_mlp_width(int64_t d) {
  const int64_t target = linear(d, 3 * d) + linear(d, d);  // attention's 4d² + 4d
  auto count = [d](int64_t f) { return 3 * d * f + 2 * f + d; };
  const int64_t lo = std::max<int64_t>(1, (target - d) / (3 * d + 2));
  return std::llabs(count(lo) - target) <= std::llabs(count(lo + 1) - target) ? lo : lo + 1;
}

int64_t ParamCount::total() const {
  int64_t t = token_embedding + position_embedding + final_norm;
  for (const auto& l : layers) t += l.total();
  return t;
}

ParamCount count_params(const ModelConfig& c) {
  validate(c);
  ParamCount p;
  p.token_embedding = c.vocab_size * c.d_model;
  p.position_embedding = c.context * c.d_model;
  p.final_norm = 2 * c.d_model;
  for (const auto& l : c.layers) {
    LayerParams lp;
    lp.mixer = mixer_params(l.mixer, c.d_model, l.heads, c.context);
    lp.ffn = linear(c.d_model, l.ffn) + linear(l.ffn, c.d_model);
    lp.norms = 4 * c.d_model;
    p.layers.push_back(lp);
  }
  return p;
}

FfnMatch match_ffn(const ModelConfig& config, int64_t target, int64_t multiple) {
  validate(config);
  if (target <= 0) throw std::invalid_argument("target parameter count must be positive, got " + std::to_string(target));
  if (multiple <= 0) throw std::invalid_argument("FFN multiple must be positive");
  FfnMatch m;
  for (size_t l = 0; l < config.layers.size(); ++l)
    if (is_shift_mixer(mixer_info(config.layers[l].mixer).kind)) m.matched_layers.push_back(l);
  if (m.matched_layers.empty())
    for (size_t l = 0; l < config.layers.size(); ++l) m.matched_layers.push_back(l);

  // The total is affine in the shared width f: total(f) = fixed + n·(2d + 1)·f.
  ModelConfig probe = config;
  for (size_t l : m.matched_layers) probe.layers[l].ffn = multiple;
  const int64_t at_min = count_params(probe).total();
  const int64_t per_unit = static_cast<int64_t>(m.matched_layers.size()) * (2 * config.d_model + 1);
  const double ideal = static_cast<double>(multiple) + static_cast<double>(target - at_min) / per_unit;
  int64_t best_f = multiple;
  int64_t best_err = std::numeric_limits<int64_t>::max();
  const int64_t around = static_cast<int64_t>(ideal / multiple);
  for (int64_t k = around - 1; k <= around + 2; ++k) {
    const int64_t f = std::max<int64_t>(multiple, k * multiple);
    const int64_t total = at_min + (f - multiple) * per_unit;
    const int64_t err = std::llabs(total - target);
    if (err < best_err) best_err = err, best_f = f;
  }
  m.config = config;
  for (size_t l : m.matched_layers) m.config.layers[l].ffn = best_f;
  m.ffn = best_f;
  m.params = count_params(m.config).total();
  return m;
}

}  // namespace hsm
