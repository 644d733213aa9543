#pragma once
// Information flow routes (issue 51; docs/diagnostics.md §10, after Ferrando & Voita 2024,
// "Information Flow Routes"): which earlier (layer, position) nodes carry a token's prediction.
// Node (b, p) is the residual stream at position p before block b (b = 0: the embeddings,
// b = L: the model's last residual). Block l makes node (l+1, i) as the sum of terms
//   h_i (residual)  +  Σ_j y_{i<-j} (the mixer's term from each position j)  +  f_i (the FFN)
// and each term gets the share  ||term|| / Σ ||terms||  of node (l+1, i): the weights into a
// node sum to 1. Every term is an edge into (l+1, i): the residual and the FFN from (l, i), a
// mixer term from (l, j). Plain C++ (no LibTorch).
#include <cstdint>
#include <string>
#include <vector>

namespace hsm {

enum class RouteKind { kResidual = 0, kMixer = 1, kFfn = 2 };
const char* route_kind_name(RouteKind kind);  // "residual", "mixer", "ffn"

struct RouteEdge {
  int64_t layer = 0;       // the block l: from node (l, from) to node (l+1, to)
  int64_t from = 0, to = 0;
  double weight = 0;       // the term's share of node (l+1, to), in [0, 1]
  RouteKind kind = RouteKind::kResidual;
};

struct Routes {
  std::vector<int32_t> tokens;
  std::vector<std::string> labels;  // Model::token_label of each token
  int64_t layers = 0, positions = 0;
  int64_t answer_position = 0;      // the output node is (layers, answer_position)
  // Per layer: what the mixer's terms were made from ("attention: values", "linear: gains", ...;
  // docs/diagnostics.md §10), "knocked out" or "skipped".
  std::vector<std::string> mixer_terms;
  // Every edge into every node at or before the answer position, unpruned, layer by layer (a
  // term that is structurally absent — a shift mixer's position outside its reach — is no edge).
  std::vector<RouteEdge> edges;
  double seconds = 0;
};

// The routes of `routes` that carry the answer: from the output node backward, the edges into a
// node already reached whose weight is >= threshold (their sources are then reached). Threshold
// 0 keeps every edge into a node reachable from the output; above 1, none. Order: as in `edges`.
std::vector<RouteEdge> prune_routes(const Routes& routes, double threshold);

}  // namespace hsm
