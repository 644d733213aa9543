#include "hsm/bench.h"

#include <chrono>

#include "train/adamw.h"
#include "hsm/params.h"
#include "model/model.h"
#include "model/torch_compat.h"

namespace hsm {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for queued GPU work so wall-clock time covers it.
void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::vector<BenchResult> run_bench(const std::vector<ModelConfig>& models, const BenchOptions& o) {
  const torch::Device device = compat::parse_device(o.device);
  auto say = [&](const std::string& s) {
    if (o.on_progress) o.on_progress(s);
  };
  std::vector<BenchResult> results;
  for (const ModelConfig& config : models) {
    validate(config);
    BenchResult r;
    r.name = config.name;
    r.params = count_params(config).total();
    torch::manual_seed(0);
    Gpt model(config);
    model->to(device);
    const int64_t T = config.context, B = o.batch_size;
    auto tokens = torch::randint(0, config.vocab_size, {B, T + 1}, torch::TensorOptions().dtype(torch::kLong).device(device));
    auto x = tokens.narrow(1, 0, T), y = tokens.narrow(1, 1, T);

    // Training steps: forward, loss, backward, optimizer (one untimed warm-up step first).
    say(r.name + ": training steps");
    model->train();
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
    AdamW optimizer(named, {});
    Clock::time_point t0;
    for (int64_t s = 0; s <= o.train_steps; ++s) {
      if (s == 1) {
        sync(device);
        t0 = Clock::now();
      }
      auto logits = model->forward(x);
      auto loss = torch::nn::functional::cross_entropy(logits.view({-1, logits.size(-1)}), y.reshape({-1}));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step(1e-4);
    }
    sync(device);
    r.train_tokens_per_s = static_cast<double>(o.train_steps * B * T) / seconds_since(t0);

    model->eval();
    torch::NoGradGuard no_grad;
    say(r.name + ": inference forward");
    model->forward(x);
    sync(device);
    t0 = Clock::now();
    model->forward(x);
    sync(device);
    r.forward_tokens_per_s = static_cast<double>(B * T) / seconds_since(t0);

    // Greedy decoding of one sequence from a 4-token prompt, within the context.
    const int64_t n = std::min(o.decode_tokens, T - 4);
    auto prompt = tokens.narrow(0, 0, 1).narrow(1, 0, 4);
    say(r.name + ": decoding with caches");
    t0 = Clock::now();
    {
      DecodeState state;
      auto logits = model->prefill(prompt, state);
      for (int64_t i = 0; i < n; ++i) logits = model->step(logits.argmax(-1), state);
      sync(device);
    }
    r.decode_cached_tokens_per_s = static_cast<double>(n) / seconds_since(t0);
    say(r.name + ": decoding without caches");
    t0 = Clock::now();
    {
      auto seq = prompt;
      for (int64_t i = 0; i < n; ++i) {
        auto next = model->forward(seq).select(1, -1).argmax(-1).view({1, 1});
        seq = torch::cat({seq, next}, 1);
      }
      sync(device);
    }
    r.decode_uncached_tokens_per_s = static_cast<double>(n) / seconds_since(t0);
    results.push_back(r);
  }
  return results;
}

}  // namespace hsm
