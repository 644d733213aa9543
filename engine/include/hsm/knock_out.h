#pragma once
// Knock-outs: a layer's mixer, or one head of it, replaced by zero (importance by ablation,
// Michel et al. 2019, "Are sixteen heads really better than one?"). `hsm ablate` ranks every
// layer and head by what its knock-out costs in validation loss (Evaluator::ablate); `hsm eval
// --knock-out` and the studio's what-if edits evaluate a model with some knocked out. The
// model applies them in memory (GptImpl::set_knock_outs); nothing is written.
#include <cstdint>
#include <string>
#include <vector>

namespace hsm {

struct KnockOut {
  int64_t layer = 0;  // 0-based
  int64_t head = -1;  // -1: the layer's whole mixer output is zero (the residual stream and the FFN stay)
  bool operator==(const KnockOut& o) const { return layer == o.layer && head == o.head; }
};

// "3" (layer 3's mixer) or "3:1" (head 1 of layer 3), comma-separated: "3,2:1". Throws
// std::invalid_argument naming the bad item and the expected form.
std::vector<KnockOut> parse_knock_outs(const std::string& text);
// "layer 3" or "layer 3 head 1".
std::string knock_out_label(const KnockOut& k);

}  // namespace hsm
