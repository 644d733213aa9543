#include "hsm/receptive_field.h"

#include <limits>

#include "hsm/mixer_kind.h"

namespace hsm {
namespace {
int64_t sat_add(int64_t a, int64_t b) {
  const int64_t cap = std::numeric_limits<int64_t>::max() / 2;
  return (a > cap - b) ? cap : a + b;
}
}  // namespace

ReceptiveField receptive_field(const ModelConfig& config) {
  validate(config);
  const int64_t T = config.context;
  ReceptiveField rf;
  rf.context = T;
  // Before the first layer only the position itself (offset 0) is "reached".
  std::vector<int64_t> paths(T, 0);
  paths[0] = 1;
  for (size_t l = 0; l < config.layers.size(); ++l) {
    const LayerSpec& spec = config.layers[l];
    const MixerKind kind = mixer_info(spec.mixer).kind;
    std::vector<int64_t> next(T, 0);
    if (reads_all_earlier(kind)) {
      // Attention, the DA variants but mlp, and the extractors (every one of the last
      // l = context inputs, EX §5) let a position read any earlier one: every offset up to k composes.
      int64_t prefix = 0;
      for (int64_t k = 0; k < T; ++k) {
        prefix = sat_add(prefix, paths[k]);
        next[k] = prefix;
      }
    } else {
      // RF_l(t) = RF_{l-1}(t) ∪ RF_{l-1}(t - s) for every shift s of the layer (none for
      // DA's mlp: it reads only position t itself).
      next = paths;
      for (int64_t s : layer_shifts(kind, static_cast<int64_t>(l), spec.heads))
        for (int64_t k = s; k < T; ++k) next[k] = sat_add(next[k], paths[k - s]);
    }
    paths = next;
    std::vector<bool> reach(T);
    for (int64_t k = 0; k < T; ++k) reach[k] = paths[k] > 0;
    rf.reachable.push_back(reach);
    rf.paths.push_back(paths);
  }
  return rf;
}

int64_t model_reach(const ModelConfig& config) {
  const ReceptiveField rf = receptive_field(config);
  int64_t reach = 0;
  if (!rf.reachable.empty())
    for (int64_t k = 0; k < rf.context; ++k)
      if (rf.reachable.back()[static_cast<size_t>(k)]) reach = k;
  return reach;
}

std::vector<int64_t> ReceptiveField::offsets(size_t layer, int64_t t) const {
  std::vector<int64_t> out;
  const auto& r = reachable.at(layer);
  for (int64_t k = 0; k < context && k <= t; ++k)
    if (r[k]) out.push_back(k);
  return out;
}

int64_t ReceptiveField::coverage(size_t layer) const {
  int64_t n = 0;
  for (bool b : reachable.at(layer)) n += b;
  return n;
}

}  // namespace hsm
