#pragma once
// Receptive fields of a layer stack (HSM §3): which input offsets reach an output
// position after each layer. Offsets are t - j for input position j.
#include <cstdint>
#include <vector>

#include "hsm/config.h"

namespace hsm {

struct ReceptiveField {
  int64_t context = 0;
  // reachable[l][k]: offset k (0..context-1) reaches an output position after layer l,
  // provided the position is at least k (an offset never reaches before the sequence
  // start: the set for position t is {k in reachable[l] : k <= t}).
  std::vector<std::vector<bool>> reachable;
  // paths[l][k]: number of distinct routes through the shifted branches that realise
  // offset k after layer l (0 when unreachable; attention counts as one route per offset).
  std::vector<std::vector<int64_t>> paths;

  // Offsets reaching output position t after layer l, ascending.
  std::vector<int64_t> offsets(size_t layer, int64_t t) const;
  // How many of the `context` offsets reach the last position after layer l.
  int64_t coverage(size_t layer) const;
};

ReceptiveField receptive_field(const ModelConfig& config);

// The model's reach: the farthest offset k (0..context-1) that reaches an output position
// after its last layer (HSM §3: a 4-layer hsm_ab shifting by 1, 2, 4, 8 reaches 15; attention
// context - 1). An answer whose token sits further back than this cannot be read, whatever the
// training: the line the lab report draws on accuracy against key-query distance.
int64_t model_reach(const ModelConfig& config);

}  // namespace hsm
