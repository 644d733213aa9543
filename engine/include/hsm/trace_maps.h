#pragma once
// What a causal trace asks and gives (issue 51; docs/diagnostics.md, "Causal tracing"): plain
// values that the tracer (hsm/trace.h), the recorder during training and the trace log
// (hsm/formation.h) share. Two runs of the same length, a clean prompt and a corrupted one (a
// token replaced); then, one site at a time, the clean run's activation put back into the
// corrupted run, and how much of the clean answer's log-probability returns:
//
//   effect(site, layer, position) = (lp_patched - lp_corrupt) / (lp_clean - lp_corrupt)
//
// 1 = restoring that one activation restores the answer; 0 = it does nothing. Sites: the residual
// stream at the block's input ("residual"), the mixer's output ("mixer") and the FFN's output
// ("ffn"). Exact patching reruns the corrupted run from the patched layer on (every position of
// one layer and site in one batch); attribution patching is its first-order estimate from one
// backward pass of the corrupted run: (clean - corrupt) . d lp / d activation. Plain C++.
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/routes.h"

namespace hsm {

struct TraceRequest {
  std::vector<int32_t> clean, corrupt;  // token ids, the same length (1 to context)
  int64_t answer_position = -1;         // whose next-token prediction is traced; -1: the last
  int32_t answer_token = -1;            // the answer; -1: the clean run's most likely token there
  bool exact = true;                    // activation patching (every layer x position x site)
  bool attribution = true;              // attribution patching (one backward pass)
  bool routes = false;                  // and the clean prompt's information flow routes (hsm/routes.h)
  // A corruption that leaves log p(answer) as it was gives a trace without maps (no_effect)
  // instead of an error: what the recorder during training wants (a shift stack whose reach
  // ends before the corrupted key, or a model at its first step).
  bool allow_no_effect = false;
};

// One site's map over layers x positions: effect[layer * positions + position]. NaN where the
// site does not exist (a skipped layer's mixer and FFN); exactly 0 after the answer position
// (the model is causal).
struct TraceMap {
  std::string site;  // "residual", "mixer", "ffn"
  std::vector<double> effect;
  double at(int64_t layer, int64_t position, int64_t positions) const {
    return effect[static_cast<size_t>(layer * positions + position)];
  }
};

// The sites a trace maps, in the order of its maps: "residual" (the stream entering a block),
// "mixer" and "ffn" (their outputs). A view names and finds its maps by these.
const std::vector<std::string>& trace_sites();
// The map of `site` among `maps` (Trace::exact or Trace::attribution); nullptr when not made.
const TraceMap* trace_map(const std::vector<TraceMap>& maps, const std::string& site);
// Pearson's r between two maps over the cells finite in both (NaN with fewer than two such cells
// or a constant map): Trace::agreement for one site.
double trace_agreement(const TraceMap& exact, const TraceMap& estimate);

struct Trace {
  std::vector<int32_t> clean, corrupt;
  std::vector<std::string> clean_labels, corrupt_labels;  // Model::token_label of each token
  std::vector<int64_t> corrupted_positions;               // where clean and corrupt differ
  int64_t layers = 0, positions = 0;
  int64_t answer_position = 0;
  int32_t answer_token = 0;
  std::string answer_label;
  double clean_logprob = 0, corrupt_logprob = 0;  // log p(answer) in each run (nats)
  std::vector<TraceMap> exact, attribution;       // residual, mixer, ffn (each when asked for)
  // The corruption left log p(answer) as it was (TraceRequest::allow_no_effect): no maps.
  bool no_effect = false;
  // How well the estimate follows the exact map where both were made: Pearson's r over every
  // cell of every site that exists (NaN when either was not made).
  double agreement = 0;
  double exact_seconds = 0, attribution_seconds = 0;
  // When asked for: Tracer::routes(clean, answer_position), unpruned (empty edges otherwise).
  Routes routes;
};

}  // namespace hsm
