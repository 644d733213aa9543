#pragma once
// What-if edits (issue 23): a trained model changed in memory to see what a weight or a layer
// does: a layer's learned a and b set to other values, layers or heads knocked out
// (hsm/knock_out.h). Model::edited (hsm/model.h) makes an edited copy of a model; its run
// folder is never written (Model::save_as writes a new one). Plain C++ (hsm_core).
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/knock_out.h"

namespace hsm {

// New values for the a and b of one layer whose mixer has them (MixerWeights::has_weights).
// One value each sets every entry (all heads, all channels); otherwise a and b have as many
// values as the layer's MixerWeights::a and ::b (one per head, or one per channel).
struct AbEdit {
  int64_t layer = 0;
  std::vector<float> a, b;
  bool operator==(const AbEdit& o) const { return layer == o.layer && a == o.a && b == o.b; }
};

struct WhatIf {
  std::vector<KnockOut> knock_out;
  std::vector<AbEdit> ab;  // applied in order; a later edit of the same layer wins
  bool empty() const { return knock_out.empty() && ab.empty(); }
  bool operator==(const WhatIf& o) const { return knock_out == o.knock_out && ab == o.ab; }
};

// `hsm eval --set-ab`: "L:A:B" items, comma-separated ("3:0.5:1.2,4:0:1"), each setting every
// a and b of layer L. Throws std::invalid_argument naming the bad item and the expected form.
std::vector<AbEdit> parse_ab_edits(const std::string& text);
// "layer 3 a=0.5 b=1.2" (per-head or per-channel values: "layer 3 a,b edited").
std::string ab_edit_label(const AbEdit& e);
// The edits in words for logs, titles and config.json ("layer 3 knocked out; layer 2 a=0.5 b=1").
std::string what_if_label(const WhatIf& w);

}  // namespace hsm
