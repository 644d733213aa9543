#include "train/evaluation.h"

#include "inference/fast_kernels.h"
#include "model/torch_compat.h"

namespace hsm {

namespace {
constexpr int64_t kEvalChunkRows = 1024;
}  // namespace

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
  auto batch = torch::empty({static_cast<int64_t>(starts.size()), context + 1}, torch::kLong);
  auto* out = batch.data_ptr<int64_t>();
  for (size_t b = 0; b < starts.size(); ++b)
    for (int64_t t = 0; t <= context; ++t) *out++ = tokens[starts[b] + t];
  return batch.to(device);
}

BatchEval evaluate_batch(Gpt& model, const torch::Tensor& x, const torch::Tensor& y) {
  BatchEval r;
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t slice = x.is_cpu() ? std::max<int64_t>(1, kEvalSliceTokens / std::max<int64_t>(1, T)) : B;
  for (int64_t b0 = 0; b0 < B; b0 += slice) {
    const int64_t nb = std::min(slice, B - b0);
    // The output layer in row chunks: [B·T, V] logits of a 64 × 128 batch would be 164 MB.
    auto h = model->hidden(x.narrow(0, b0, nb));
    auto flat = h.view({-1, h.size(-1)});
    auto targets = y.narrow(0, b0, nb).reshape({-1});
    for (int64_t r0 = 0; r0 < flat.size(0); r0 += kEvalChunkRows) {
      const int64_t n = std::min(kEvalChunkRows, flat.size(0) - r0);
      auto logits = torch::mm(flat.narrow(0, r0, n), model->tok_emb->weight.t()).to(torch::kFloat32);  // [n, V]
      auto t = targets.narrow(0, r0, n);
      if (logits.is_cpu()) {  // loss and accuracy in one pass over each row (fast_kernels.h)
        auto lc = logits.contiguous();
        auto tc = t.contiguous();
        fast::cross_entropy_rows(lc.data_ptr<float>(), tc.data_ptr<int64_t>(), n, lc.size(1), &r.loss_sum, &r.correct);
        continue;
      }
      r.loss_sum += torch::nn::functional::cross_entropy(
                        logits, t, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                        .item<double>();
      r.correct += logits.argmax(-1).eq(t).sum().item<int64_t>();
    }
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
                            const ProgressFn& progress, const CancelFlag* cancel) {
  const int64_t T = model->config.context;
  const auto windows = static_cast<int64_t>(all_starts.size());
  int64_t batches = (windows + batch_size - 1) / batch_size;
  if (max_batches > 0) batches = std::min(batches, max_batches);
  const bool was_training = model->is_training();
  model->eval();
  c10::InferenceMode inference;  // thread-local (SPEC §7): set here, on the thread that evaluates
  compat::AutocastGuard autocast(device, bf16);
  double loss_sum = 0;
  int64_t correct = 0, count = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (cancel && cancel->load()) throw Cancelled();
    std::vector<int64_t> starts;
    for (int64_t w = b * batch_size; w < std::min(windows, (b + 1) * batch_size); ++w)
      starts.push_back(all_starts[static_cast<size_t>(w)]);
    auto batch = make_batch(tokens, starts, T, device);
    auto x = batch.narrow(1, 0, T), y = batch.narrow(1, 1, T);
    const BatchEval e = evaluate_batch(model, x, y);
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
