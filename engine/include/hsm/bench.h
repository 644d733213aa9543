#pragma once
// `hsm bench`: throughput of models built from configs, all measured in one run so their
// ratios mean something on a noisy machine (SPEC §7: no timing assertions in tests).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hsm/config.h"

namespace hsm {

struct BenchOptions {
  int64_t batch_size = 16;       // sequences per training step
  int64_t train_steps = 4;       // timed training steps (after one warm-up step)
  int64_t decode_tokens = 100;   // tokens generated per decoding measurement (within the context)
  std::string device = "auto";
  std::function<void(const std::string&)> on_progress;  // one line per measurement
};

struct BenchResult {
  std::string name;
  int64_t params = 0;
  double train_tokens_per_s = 0;     // forward + backward + AdamW, batch × context tokens per step
  double forward_tokens_per_s = 0;   // inference forward of a full batch
  double decode_cached_tokens_per_s = 0;    // incremental: KV cache / shift ring
  double decode_uncached_tokens_per_s = 0;  // recomputing the window for every token
};

// Random weights and tokens: speed does not depend on training. Throws on a bad config.
std::vector<BenchResult> run_bench(const std::vector<ModelConfig>& models, const BenchOptions& options);

}  // namespace hsm
