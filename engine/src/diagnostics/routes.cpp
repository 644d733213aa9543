// prune_routes (hsm/routes.h): the graph's part reached from the output node, no LibTorch.
#include "hsm/routes.h"

#include <algorithm>

namespace hsm {

const char* route_kind_name(RouteKind kind) {
  switch (kind) {
    case RouteKind::kMixer: return "mixer";
    case RouteKind::kFfn: return "ffn";
    case RouteKind::kResidual: break;
  }
  return "residual";
}

std::vector<RouteEdge> prune_routes(const Routes& routes, double threshold) {
  const int64_t L = routes.layers, T = routes.positions;
  if (L <= 0 || T <= 0 || routes.answer_position < 0 || routes.answer_position >= T) return {};
  // reached[b * T + p]: node (b, p) lies on a kept route to the output.
  std::vector<char> reached(static_cast<size_t>((L + 1) * T), 0);
  reached[static_cast<size_t>(L * T + routes.answer_position)] = 1;
  std::vector<char> keep(routes.edges.size(), 0);
  // Top layer first: a layer's kept edges reach nodes of the layer below.
  std::vector<size_t> order(routes.edges.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return routes.edges[a].layer > routes.edges[b].layer; });
  for (size_t e : order) {
    const RouteEdge& edge = routes.edges[e];
    if (edge.layer < 0 || edge.layer >= L || edge.to < 0 || edge.to >= T || edge.from < 0 || edge.from >= T) continue;
    if (!reached[static_cast<size_t>((edge.layer + 1) * T + edge.to)] || !(edge.weight >= threshold)) continue;
    keep[e] = 1;
    reached[static_cast<size_t>(edge.layer * T + edge.from)] = 1;
  }
  std::vector<RouteEdge> out;
  for (size_t e = 0; e < keep.size(); ++e)
    if (keep[e]) out.push_back(routes.edges[e]);
  return out;
}

}  // namespace hsm
