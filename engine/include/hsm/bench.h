#pragma once
// `hsm bench`: throughput of models built from configs, all measured in one run so their
// ratios mean something on a noisy machine (no timing assertions in tests).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hsm/config.h"

namespace hsm {

struct BenchOptions {
  int64_t batch_size = 16;        // sequences per training step at the model's own context
  std::vector<int64_t> contexts;  // contexts to measure (empty: each model's own)
  // Above the first context, the batch shrinks so a step holds the same number of tokens
  // (batch × first context), at least one sequence.
  int64_t train_steps = 4;      // timed training steps (after one warm-up step)
  int64_t eval_batch = 64;      // sequences per evaluation forward (as `hsm eval`)
  int64_t decode_tokens = 100;  // tokens generated per decoding measurement (within the context)
  bool evaluate = true;         // measure evaluation (forward + loss without gradients)
  bool decode = true;           // measure decoding (cached and uncached)
  bool measure_peak = true;     // measure this CPU's sgemm peak for MFU
  std::string device = "auto";
  // Non-empty: one extra training step per model and context is recorded with LibTorch's
  // profiler into "<profile_prefix><model>_<context>.trace.json" (chrome://tracing format).
  std::string profile_prefix;
  std::function<void(const std::string&)> on_progress;  // one line per measurement
};

struct BenchResult {
  std::string name;
  int64_t params = 0;
  int64_t context = 0;
  int64_t batch = 0;                        // sequences per training step at this context
  double train_tokens_per_s = 0;            // forward + loss + backward + AdamW, batch × context tokens per step
  // CUDA: the step as `hsm train` takes it, recorded once as a CUDA graph and replayed
  // (train/cuda_graph_step.h); then train_tokens_per_s is the graph's, and this the same step
  // launched operator by operator, timed in the same run. 0 where no graph was recorded.
  double train_eager_tokens_per_s = 0;
  bool train_cuda_graph = false;
  double eval_tokens_per_s = 0;             // forward + loss without gradients (InferenceMode), eval_batch sequences
  double forward_tokens_per_s = 0;          // = eval_tokens_per_s (kept for older readers)
  double decode_cached_tokens_per_s = 0;    // incremental: KV cache / shift ring
  double decode_uncached_tokens_per_s = 0;  // recomputing the window for every token
  // CUDA: the cached step recorded once as a CUDA graph and replayed per token
  // (inference/cuda_graph_decoder.h), the same tokens; 0 where no graph was recorded.
  double decode_graph_tokens_per_s = 0;
  double decode_fast_tokens_per_s = 0;      // the hand-written fp32 path (CPU; 0 where it does not apply)
  double train_peak_mb = 0;                 // peak resident memory of the process during training steps (CPU)
  double train_flops_per_token = 0;         // 6 × model_macs_per_token (hsm/cost.h, `hsm inspect`)
  double mfu = 0;                           // train FLOP/s / measured peak (report's peak_kind; 0 when not measured)
  // Training FLOP/s against the first model's at the same context: the ratio of their MFUs,
  // defined without a measured peak too. A mixer far below the others has a cliff (issue 26).
  double train_rate_vs_baseline = 0;
};

struct BenchReport {
  std::vector<BenchResult> results;  // model-major, then context
  // The MFU's peak: on a CPU, the best fp32 sgemm over the model's matmul shapes on these threads;
  // on CUDA, where training runs in bf16 autocast, the best bf16 matrix product of large squares.
  double sgemm_peak_gflops = 0;
  std::string peak_kind = "fp32 sgemm";  // which of the two ("bf16 matmul" on CUDA)
  // On CUDA: whether the training step ran on the fused kernels (model/cuda_fused.h), in words.
  std::string cuda_kernels;
  // On CUDA, after the timings: what each family's check at first use found (passed, or disagreed
  // and so LibTorch's operations timed instead); empty where none ran.
  std::string cuda_kernel_checks;
  // The same per CPU matrix-product backend ("onednn", "libtorch"; kernels/gemm.h), all measured
  // in this run, so which one is faster on a CPU can be read off; the peak above is the best.
  std::map<std::string, double> sgemm_peak_by_backend;
};

// FLOPs per trained token of a config at context T: 6 × the MACs `hsm inspect` prints.
double train_flops_per_token(const ModelConfig& config, int64_t context);

// Random weights and tokens: speed does not depend on training or on the text. Throws on a
// bad config.
BenchReport run_bench(const std::vector<ModelConfig>& models, const BenchOptions& options);

}  // namespace hsm
