#pragma once
// Batches of token windows and validation (loss and top-1 accuracy) over a token split.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hsm/progress.h"
#include "model/lm_head.h"
#include "model/model.h"

namespace hsm {

// The validation split is fixed for a corpus (same fraction, same seed) so training, `hsm eval`
// and the studio all measure on the same held-out documents.
inline constexpr double kValFraction = 0.1;
inline constexpr uint64_t kSplitSeed = 1234;

// Windows of context + 1 tokens starting at multiples of the context: the number of them.
int64_t window_count(size_t tokens, int64_t context);

// Where windows of context + 1 tokens start in a split (documents joined by <|endoftext|>):
// "packed" cuts every `context` tokens regardless of documents (GPT-2 style); "story_start"
// starts a window at every document start, and then every `context` tokens while the
// window stays inside the document and its end-of-text token, so no window mixes stories
// and every story is seen from its first token.
enum class WindowLayout { kPacked, kStoryStart };
WindowLayout window_layout(const std::string& name);  // "packed" | "story_start"; throws std::invalid_argument
std::vector<int64_t> window_starts(const std::vector<uint16_t>& tokens, int64_t context, WindowLayout layout,
                                   uint16_t end_of_text);

// Window starts (token offsets) -> [B, context + 1] int64 on `device`.
torch::Tensor make_batch(const std::vector<uint16_t>& tokens, const std::vector<int64_t>& starts, int64_t context,
                         const torch::Device& device);

struct WindowEval {
  double loss = 0;      // mean cross-entropy per predicted token (nats)
  double accuracy = 0;  // top-1
  int64_t tokens = 0;
};

// Sum of the next-token cross-entropies and count of top-1 hits of one batch: x, y [B, T]
// (eval mode, no gradients). On the CPU the forward runs in slices of eval_slice_windows(T)
// windows: a [B·T, 1024] FFN activation of a 64 × 128 batch is 32 MiB, glibc's largest mmap
// threshold, so each one would be mapped and page-faulted in afresh (issue 9); and one forward
// at a time would leave cores idle during every LayerNorm, GELU and loss. The slices run one
// per thread, each computed alone on its thread (kernels/parallel_gemm.h: SerialScope) with
// OpenBLAS on one thread, and their sums are added in slice order: the result is the same on
// any number of threads, by construction (issue 18). threads 0 (the default): on LibTorch's
// pool when it has several threads, else on eval_workers() threads; threads > 0: on that many
// threads of their own (tests).
constexpr int64_t kEvalSliceTokens = 2048;
struct BatchEval {
  double loss_sum = 0;
  int64_t correct = 0;
};
// rows (optional): each predicted token's loss and rank, [B·T] in x's order, written by the pass
// that makes the sums (a slice writes only its own rows: the same values on any threads).
BatchEval evaluate_batch(Gpt& model, const torch::Tensor& x, const torch::Tensor& y, int threads = 0,
                         const RowScores& rows = {});
// Windows per slice at this context: kEvalSliceTokens / context, at least 1. Depends on
// nothing else (not on the cores).
int64_t eval_slice_windows(int64_t context);
// Threads evaluate_batch uses on the CPU when LibTorch has one: the machine's cores.
int eval_workers();

// Per-token scoring (issue 40): every predicted token's loss and the true token's rank,
// window-major ([windows × T], the windows evaluated), out of the evaluation itself: the
// WindowEval's loss is their sum (in the evaluation's order) over their count.
struct TokenLosses {
  std::vector<double> loss;
  std::vector<int32_t> rank;
};

// Evaluates the windows at `starts` in order; max_batches 0 = all. Runs in eval mode without
// gradients and restores the model's training flag. per_token (optional): filled as above.
WindowEval evaluate_windows(Gpt& model, const std::vector<uint16_t>& tokens, const std::vector<int64_t>& starts,
                            int64_t batch_size, int64_t max_batches, const torch::Device& device, bool bf16,
                            const ProgressFn& progress = {}, const CancelFlag* cancel = nullptr,
                            TokenLosses* per_token = nullptr);
// The same over packed windows.
WindowEval evaluate_windows(Gpt& model, const std::vector<uint16_t>& tokens, int64_t batch_size, int64_t max_batches,
                            const torch::Device& device, bool bf16, const ProgressFn& progress = {},
                            const CancelFlag* cancel = nullptr);

}  // namespace hsm
