#include "hsm/cost.h"

#include <stdexcept>

#include "hsm/mixer_kind.h"
#include "hsm/params.h"

namespace hsm {

namespace {
void check_sizes(int64_t d, int64_t heads, int64_t T) {
  if (d <= 0 || heads <= 0 || T <= 0)
    throw std::invalid_argument("mixer cost: d_model, heads and context must be positive (got d " +
                                std::to_string(d) + ", heads " + std::to_string(heads) + ", context " +
                                std::to_string(T) + ")");
}
}  // namespace

int64_t mixer_macs_per_token(const std::string& mixer, int64_t d, int64_t heads, int64_t T) {
  check_sizes(d, heads, T);
  return mixer_info(mixer).macs_per_token(d, heads, T);
}

int64_t mixer_cache_floats(const std::string& mixer, int64_t d, int64_t heads, int64_t layer, int64_t T, int64_t B) {
  check_sizes(d, heads, T);
  return mixer_info(mixer).cache_floats(d, heads, layer, T, B);
}

int64_t ffn_macs_per_token(int64_t d, int64_t ffn) { return 2 * d * ffn; }

int64_t model_macs_per_token(const ModelConfig& c, int64_t T) {
  validate(c);
  int64_t total = c.d_model * c.vocab_size;
  for (const LayerSpec& l : c.layers)
    total += mixer_macs_per_token(l.mixer, c.d_model, l.heads, T) + ffn_macs_per_token(c.d_model, l.ffn);
  return total;
}

}  // namespace hsm
