#include "eval/evaluation.h"

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include "kernels/parallel_gemm.h"
#include "model/torch_compat.h"

namespace hsm {

int64_t window_count(size_t tokens, int64_t context) {
  return tokens < 2 ? 0 : static_cast<int64_t>((tokens - 1) / static_cast<size_t>(context));
}

WindowLayout window_layout(const std::string& name) {
  if (name == "packed") return WindowLayout::kPacked;
  if (name == "story_start") return WindowLayout::kStoryStart;
  throw std::invalid_argument("unknown window layout '" + name + "' (use packed or story_start)");
}

std::vector<int64_t> window_starts(const std::vector<uint16_t>& tokens, int64_t context, WindowLayout layout,
                                   uint16_t end_of_text) {
  std::vector<int64_t> starts;
  const auto n = static_cast<int64_t>(tokens.size());
  if (layout == WindowLayout::kPacked) {
    const int64_t count = window_count(tokens.size(), context);
    starts.reserve(static_cast<size_t>(count));
    for (int64_t w = 0; w < count; ++w) starts.push_back(w * context);
    return starts;
  }
  // Each document is [begin, eot] with tokens[eot] == end_of_text; a window's last token
  // (index start + context) must not pass the document's end-of-text.
  int64_t begin = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[static_cast<size_t>(i)] != end_of_text) continue;
    for (int64_t s = begin; s + context <= i; s += context) starts.push_back(s);
    begin = i + 1;
  }
  return starts;
}

torch::Tensor make_batch(const std::vector<uint16_t>& tokens, const std::vector<int64_t>& starts, int64_t context,
                         const torch::Device& device) {
  // For a GPU: page-locked memory (LibTorch's caching host allocator) and an asynchronous copy. A
  // copy from ordinary memory waits for the GPU to finish everything queued before it: a training
  // step would wait for the previous one (issue 49).
  const bool gpu = device.is_cuda();
  auto batch = torch::empty({static_cast<int64_t>(starts.size()), context + 1},
                            torch::TensorOptions().dtype(torch::kLong).pinned_memory(gpu));
  auto* out = batch.data_ptr<int64_t>();
  for (size_t b = 0; b < starts.size(); ++b)
    for (int64_t t = 0; t <= context; ++t) *out++ = tokens[starts[b] + t];
  return batch.to(device, torch::kLong, /*non_blocking=*/gpu);
}

namespace {

// Loss sum and top-1 hits of windows x, y [n, T] (one slice of a batch).
BatchEval evaluate_slice(Gpt& model, const torch::Tensor& x, const torch::Tensor& y, const RowScores& rows) {
  const LossSums sums = lm_head_loss_sums(model->hidden(x), model->tok_emb->weight, y, rows);
  BatchEval r;
  r.loss_sum = sums.loss_sum;
  r.correct = sums.correct;
  return r;
}

// Runs slice(0..count-1) on `workers` threads of its own (the calling one included) and returns
// when all are done; rethrows the first exception. The caller's grad and inference modes hold
// in every worker (they are thread-local).
void run_slices_on_threads(int64_t count, int workers, const std::function<void(int64_t)>& slice) {
  const bool grad = torch::GradMode::is_enabled();
  const bool inference = c10::InferenceMode::is_enabled();
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      c10::InferenceMode inference_mode(inference);
      torch::AutoGradMode grad_mode(grad);
      for (int64_t s = next++; s < count; s = next++) slice(s);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = count;
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

// The rows of the windows from `window` on, in a [windows, T] batch's order.
RowScores rows_from(const RowScores& rows, int64_t window, int64_t T) {
  RowScores r;
  if (rows.loss) r.loss = rows.loss + window * T;
  if (rows.rank) r.rank = rows.rank + window * T;
  return r;
}

}  // namespace

int eval_workers() {
  static const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  return cores;
}

int64_t eval_slice_windows(int64_t context) { return std::max<int64_t>(1, kEvalSliceTokens / std::max<int64_t>(1, context)); }

BatchEval evaluate_batch(Gpt& model, const torch::Tensor& x, const torch::Tensor& y, int threads,
                         const RowScores& rows) {
  if (!x.is_cpu()) return evaluate_slice(model, x, y, rows);
  // The same sums on any number of threads, by construction: slices of a fixed number of
  // windows (not one per core), each computed alone by one thread (SerialScope: the same
  // products over the same rows whichever thread takes it), added in slice order.
  const int64_t B = x.size(0), per = eval_slice_windows(x.size(1));
  const int64_t count = (B + per - 1) / per;
  std::vector<BatchEval> parts(static_cast<size_t>(count));
  auto slice = [&](int64_t s) {
    const SerialScope serial;
    const int64_t b0 = s * per, nb = std::min(per, B - b0);
    parts[static_cast<size_t>(s)] =
        evaluate_slice(model, x.narrow(0, b0, nb), y.narrow(0, b0, nb), rows_from(rows, b0, x.size(1)));
  };
  const OneBlasThread one_blas_thread;
  if (threads <= 0 && torch::get_num_threads() > 1) {
    // On LibTorch's pool (set_cpu_threads' default). Each worker takes the next slice nobody
    // has taken (not a fixed share), so a worker whose core another program holds does fewer
    // slices instead of holding the batch back (issue 37); the sums do not depend on who did what.
    const at::ThreadLocalState state;
    std::atomic<int64_t> next{0};
    const int64_t workers = std::min<int64_t>(count, torch::get_num_threads());
    at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
      const at::ThreadLocalStateGuard guard(state);
      for (int64_t s = next++; s < count; s = next++) slice(s);
    });
  } else {
    // threads > 0 (tests, benchmarks), or LibTorch on one thread: threads of our own.
    const int workers = threads > 0 ? threads : eval_workers();
    run_slices_on_threads(count, static_cast<int>(std::min<int64_t>(workers, count)), slice);
  }
  BatchEval r;
  for (const BatchEval& p : parts) {
    r.loss_sum += p.loss_sum;
    r.correct += p.correct;
  }
  return r;
}

WindowEval evaluate_windows(Gpt& model, const std::vector<uint16_t>& tokens, int64_t batch_size, int64_t max_batches,
                            const torch::Device& device, bool bf16, const ProgressFn& progress,
                            const CancelFlag* cancel) {
  return evaluate_windows(model, tokens, window_starts(tokens, model->config.context, WindowLayout::kPacked, 0),
                          batch_size, max_batches, device, bf16, progress, cancel);
}

WindowEval evaluate_windows(Gpt& model, const std::vector<uint16_t>& tokens, const std::vector<int64_t>& all_starts,
                            int64_t batch_size, int64_t max_batches, const torch::Device& device, bool bf16,
                            const ProgressFn& progress, const CancelFlag* cancel, TokenLosses* per_token) {
  const int64_t T = model->config.context;
  const auto windows = static_cast<int64_t>(all_starts.size());
  int64_t batches = windows / batch_size + (windows % batch_size != 0);  // no overflow for a huge batch
  if (max_batches > 0) batches = std::min(batches, max_batches);
  if (per_token) {
    const auto rows = static_cast<size_t>(std::min(windows, batches * batch_size) * T);
    per_token->loss.assign(rows, 0.0);
    per_token->rank.assign(rows, 0);
  }
  // A model already in eval mode (a shared hsm::Model) is only read: threads may share it.
  const bool was_training = model->is_training();
  if (was_training) model->eval();
  // Thread-local (docs/architecture.md, "Threads"): set here, on the thread that evaluates.
  c10::InferenceMode inference;
  compat::AutocastGuard autocast(device, bf16);
  double loss_sum = 0;
  int64_t correct = 0, count = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (cancel && cancel->load()) throw Cancelled();
    std::vector<int64_t> starts;
    for (int64_t w = b * batch_size; w < windows && w - b * batch_size < batch_size; ++w)
      starts.push_back(all_starts[static_cast<size_t>(w)]);
    auto batch = make_batch(tokens, starts, T, device);
    auto x = batch.narrow(1, 0, T), y = batch.narrow(1, 1, T);
    RowScores rows;
    if (per_token) {
      const auto first = static_cast<size_t>(b * batch_size * T);
      rows.loss = per_token->loss.data() + first;
      rows.rank = per_token->rank.data() + first;
    }
    const BatchEval e = evaluate_batch(model, x, y, 0, rows);
    loss_sum += e.loss_sum;
    correct += e.correct;
    count += y.numel();
    if (progress) progress("evaluating", static_cast<double>(b + 1) / static_cast<double>(batches));
  }
  if (was_training) model->train();
  WindowEval r;
  r.tokens = count;
  if (count > 0) {
    r.loss = loss_sum / static_cast<double>(count);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(count);
  }
  return r;
}

}  // namespace hsm
