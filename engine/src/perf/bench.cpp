#include "kernels/parallel_gemm.h"
#include "hsm/bench.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <fstream>
#include <sstream>

#include "hsm/cost.h"
#include "hsm/params.h"
#include "inference/cuda_graph_decoder.h"
#include "inference/fast_decoder.h"
#include "model/cuda_fused.h"
#include "model/model.h"
#include "model/torch_compat.h"
#include "train/adamw.h"
#include "train/cuda_graph_step.h"
#include "kernels/gemm.h"
#include "eval/evaluation.h"

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

namespace hsm {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for queued GPU work so wall-clock time covers it.
void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One training step under LibTorch's Kineto profiler with the GPU's kernels (LibTorch 2.x, CUDA):
// the Chrome trace at `path` and, at `path` with ".kernels.txt" for ".trace.json", the kernels'
// device time summed by name, largest first, so one look says where a step's time goes. False
// where this LibTorch has no such profiler (then the caller falls back to the operator trace).
bool profile_cuda_kernels(const std::string& path, const std::function<void()>& step,
                          const std::function<void(const std::string&)>& say) {
#if TORCH_VERSION_MAJOR >= 2
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  step();
  torch::cuda::synchronize();
  auto result = prof::disableProfiler();
  std::map<std::string, std::pair<double, int64_t>> by_name;  // kernel -> (µs, launches)
  double total_us = 0;
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;
    auto& [us, n] = by_name[e.name()];
    us += static_cast<double>(e.durationNs()) / 1e3;
    ++n;
    total_us += static_cast<double>(e.durationNs()) / 1e3;
  }
  result->save(path);
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::ostringstream text;
  text << "device time of one step: " << total_us / 1e3 << " ms in " << rows.size() << " kernel names\n";
  text << "   ms       %  launches  kernel\n";
  for (const auto& [name, v] : rows) {
    char line[96];
    std::snprintf(line, sizeof line, "%7.3f  %5.1f  %8lld  ", v.first / 1e3, 100.0 * v.first / std::max(total_us, 1e-9),
                  static_cast<long long>(v.second));
    text << line << name.substr(0, 160) << "\n";
  }
  std::string summary_path = path;
  const auto dot = summary_path.rfind(".trace.json");
  summary_path = (dot == std::string::npos ? summary_path : summary_path.substr(0, dot)) + ".kernels.txt";
  std::ofstream(summary_path) << text.str();
  say("kernel summary in " + summary_path + " (" + std::to_string(total_us / 1e3) + " ms of device time)");
  return true;
#else
  (void)path, (void)step, (void)say;
  return false;
#endif
}

// Peak resident memory since the last reset, in MB (Linux: VmHWM, reset through clear_refs).
void reset_peak_memory() {
  ::malloc_trim(0);  // set_cpu_threads keeps freed memory in the heap; give it back first
  std::ofstream("/proc/self/clear_refs") << "5";
}
double peak_memory_mb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

// Best sgemm rate over the matrix shapes a training step of `config` multiplies: [B·T, d] by
// the qkv, FFN and output weights (GFLOP/s).
double sgemm_peak_gflops(const ModelConfig& config, const torch::Device& device) {
  const int64_t rows = 4096, d = config.d_model;
  std::vector<std::pair<int64_t, int64_t>> shapes = {{d, 3 * d}, {d, config.vocab_size}};
  for (const auto& l : config.layers) shapes.push_back({d, l.ffn});
  double best = 0;
  torch::NoGradGuard no_grad;
  for (const auto& [k, n] : shapes) {
    auto a = torch::randn({rows, k}, torch::TensorOptions().device(device));
    auto b = torch::randn({k, n}, torch::TensorOptions().device(device));
    auto c = torch::mm(a, b);
    for (int rep = 0; rep < 3; ++rep) {
      sync(device);
      const auto t0 = Clock::now();
      for (int i = 0; i < 3; ++i) mm_rows(c, a, b);  // over every core, as the model's products
      sync(device);
      best = std::max(best, 3 * 2.0 * rows * k * n / seconds_since(t0) / 1e9);
    }
  }
  return best;
}

// The bf16 matrix-product peak of a CUDA GPU (GFLOP/s), where training runs in bf16 autocast:
// the best of large square products, each timed over several launches.
double bf16_matmul_peak_gflops(const torch::Device& device) {
  double best = 0;
  torch::NoGradGuard no_grad;
  for (const int64_t n : {4096, 8192}) {
    auto o = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
    auto a = torch::randn({n, n}, o), b = torch::randn({n, n}, o);
    auto c = torch::mm(a, b);
    for (int rep = 0; rep < 3; ++rep) {
      sync(device);
      const auto t0 = Clock::now();
      constexpr int kLaunches = 10;
      for (int i = 0; i < kLaunches; ++i) torch::mm_out(c, a, b);
      sync(device);
      best = std::max(best, kLaunches * 2.0 * n * n * n / seconds_since(t0) / 1e9);
    }
  }
  return best;
}

}  // namespace

double train_flops_per_token(const ModelConfig& c, int64_t T) {
  // 6 × the MACs per token `hsm inspect` prints (one definition, hsm/cost.h): 2 for the
  // forward product, 4 for the two gradient products. Costs that depend on the context
  // (attention's scores, an Extractor's lags) are counted at the last position, so a causal
  // step that skips what lies before the sequence does less than this.
  return 6.0 * static_cast<double>(model_macs_per_token(c, T));
}

namespace {

using Say = std::function<void(const std::string&)>;

// The peak the MFU is measured against: bf16 matmuls on CUDA, else sgemm on the first model's
// shapes (on each CPU backend, the one in use restored).
void measure_peak(BenchReport& report, const ModelConfig& first, const torch::Device& device, const Say& say) {
  say(device.is_cuda() ? "bf16 matmul peak" : "sgemm peak");
  if (device.is_cuda()) {
    report.sgemm_peak_gflops = bf16_matmul_peak_gflops(device);
    report.peak_kind = "bf16 matmul";
  } else if (device.is_cpu() && onednn_available()) {  // each backend on the same shapes, the one in use restored
    const GemmBackend in_use = gemm_backend();
    for (const GemmBackend b : {GemmBackend::kOneDnn, GemmBackend::kLibTorch}) {
      set_gemm_backend(b);
      report.sgemm_peak_by_backend[gemm_backend_name(b)] = sgemm_peak_gflops(first, device);
    }
    set_gemm_backend(in_use);
    for (const auto& [name, peak] : report.sgemm_peak_by_backend)
      report.sgemm_peak_gflops = std::max(report.sgemm_peak_gflops, peak);
  } else {
    report.sgemm_peak_gflops = sgemm_peak_gflops(first, device);
  }
}

// One model at one context: what each measurement shares (its random tokens, seeded model, tag).
struct BenchCase {
  const ModelConfig& config;
  const torch::Device& device;
  int64_t B, T;
  Gpt model;
  torch::Tensor tokens, x, y;
  std::string tag;  // "NAME @T: " before each progress line
};

using StepTimer = std::function<double(const std::function<void()>&)>;  // tokens/s of o.train_steps steps

// The step `hsm train` takes on CUDA: the training step recorded as one CUDA graph, replayed.
void bench_cuda_graph_step(BenchCase& c, AdamW& optimizer, const StepTimer& time_steps, const Say& say,
                           BenchResult& r) {
  Gpt& model = c.model;
  const int64_t T = c.T;
  try {
    optimizer.zero_grad();
    optimizer.prepare_recorded_steps();
    CudaGraphStep graph({c.tokens}, [&](const std::vector<torch::Tensor>& in, const torch::Tensor& lr) {
      torch::Tensor loss;
      {
        compat::AutocastGuard autocast(c.device, true);
        loss = model->loss(in[0].narrow(1, 0, T), in[0].narrow(1, 1, T));
      }
      loss.backward();
      auto bad = optimizer.clip_and_step_recorded(lr, 1.0, loss);
      return std::make_pair(loss.detach(), bad);
    });
    auto replay = [&] {
      graph.replay({c.tokens}, 1e-4);
      optimizer.count_recorded_step();
    };
    replay();  // the first replay uploads the graph
    r.train_eager_tokens_per_s = r.train_tokens_per_s;
    r.train_tokens_per_s = time_steps(replay);
    r.train_cuda_graph = true;
  } catch (const std::exception& e) {
    say(c.tag + "no CUDA graph (" + e.what() + "): the eager step's speed");
  }
}

// Training steps: forward, loss, backward, optimizer (untimed warm-up steps first); on CUDA
// also the step as one CUDA graph; a profile of one step when asked.
void bench_training(BenchCase& c, const BenchOptions& o, const Say& say, BenchResult& r) {
  Gpt& model = c.model;
  const torch::Device& device = c.device;
  const int64_t B = c.B, T = c.T;
  say(c.tag + "training steps (batch " + std::to_string(B) + ")");
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
  AdamW optimizer(named, {});
  // A step as `hsm train` takes it. On CUDA: bf16 autocast, the gradient clipped to norm 1 and
  // the update fused, without a host sync (AdamW::clip_and_step); three untimed warm-up steps
  // (cuBLAS handles, autocast's weight casts). On the CPU: the unclipped step timed since issue 9.
  const bool cuda = device.is_cuda();
  auto train_once = [&] {
    torch::Tensor loss;
    {
      compat::AutocastGuard autocast(device, cuda);
      loss = model->loss(c.x, c.y);
    }
    optimizer.zero_grad();
    loss.backward();
    if (cuda)
      optimizer.clip_and_step(1e-4, 1.0, loss);
    else
      optimizer.step(1e-4);
  };
  const int64_t warm_up = cuda ? 3 : 1;
  reset_peak_memory();
  const StepTimer time_steps = [&](const std::function<void()>& one_step) {
    sync(device);
    const auto start = Clock::now();
    for (int64_t s = 0; s < o.train_steps; ++s) one_step();
    sync(device);
    return static_cast<double>(o.train_steps * B * T) / seconds_since(start);
  };
  for (int64_t s = 0; s < warm_up; ++s) train_once();
  r.train_tokens_per_s = time_steps(train_once);
  if (CudaGraphStep::available(device)) bench_cuda_graph_step(c, optimizer, time_steps, say, r);
  if (!o.profile_prefix.empty()) {
    const std::string path = o.profile_prefix + r.name + "_" + std::to_string(T) + ".trace.json";
    say(c.tag + "profiling one step into " + path);
    if (!device.is_cuda() || !profile_cuda_kernels(path, train_once, [&](const std::string& m) { say(c.tag + m); })) {
      torch::autograd::profiler::RecordProfile profile(path);
      train_once();
    }
  }
  r.train_peak_mb = device.is_cpu() ? peak_memory_mb() : 0;
}

// As `hsm eval`: full batches, loss and accuracy, no autograd bookkeeping.
void bench_evaluation(BenchCase& c, const BenchOptions& o, const Say& say, BenchResult& r) {
  c10::InferenceMode inference;
  const int64_t T = c.T;
  const int64_t EB = std::max<int64_t>(1, o.eval_batch * 128 / std::max<int64_t>(128, T));
  auto eval_tokens = torch::randint(0, c.config.vocab_size, {EB, T + 1}, c.tokens.options());
  auto ex = eval_tokens.narrow(1, 0, T), ey = eval_tokens.narrow(1, 1, T);
  say(c.tag + "evaluation forward (batch " + std::to_string(EB) + ")");
  evaluate_batch(c.model, ex, ey);
  sync(c.device);
  // Two timed batches, as bench/compare.py times the Python reference.
  constexpr int kTimedBatches = 2;
  const auto t0 = Clock::now();
  for (int i = 0; i < kTimedBatches; ++i) evaluate_batch(c.model, ex, ey);
  sync(c.device);
  r.eval_tokens_per_s = r.forward_tokens_per_s = static_cast<double>(kTimedBatches * EB * T) / seconds_since(t0);
}

// Greedy decoding of one sequence from a 4-token prompt, within the context: with caches, as a
// CUDA graph, on the fast path, and without caches.
void bench_decoding(BenchCase& c, const BenchOptions& o, const Say& say, BenchResult& r) {
  c10::InferenceMode inference;
  Gpt& model = c.model;
  const torch::Device& device = c.device;
  const int64_t T = c.T;
  const int64_t n = std::max<int64_t>(1, std::min(o.decode_tokens, T - 4));
  auto prompt = c.tokens.narrow(0, 0, 1).narrow(1, 0, std::min<int64_t>(4, T - 1));
  say(c.tag + "decoding with caches");
  auto t0 = Clock::now();
  {
    DecodeState state;
    auto logits = model->prefill(prompt, state);
    for (int64_t i = 0; i < n; ++i) logits = model->step(logits.argmax(-1), state);
    sync(device);
  }
  r.decode_cached_tokens_per_s = static_cast<double>(n) / seconds_since(t0);
  if (CudaGraphDecoder::available(device)) {
    // The same greedy tokens through the graphed step (inference/cuda_graph_decoder.h):
    // prefill, then one replay per token, argmax fed back on the device as above.
    say(c.tag + "decoding with caches as a CUDA graph");
    try {
      CudaGraphDecoder graph(model);  // recorded before the clock starts, as Model::load would not
      t0 = Clock::now();
      DecodeState state;
      auto logits = model->prefill(prompt, state);
      graph.load(state);
      for (int64_t i = 0; i < n; ++i) logits = graph.step(logits.argmax(-1));
      sync(device);
      r.decode_graph_tokens_per_s = static_cast<double>(n) / seconds_since(t0);
    } catch (const std::exception& e) {
      say(c.tag + "no CUDA graph decoding (" + e.what() + ")");
    }
  }
  if (device.is_cpu() && FastDecoder::supports(c.config)) {
    say(c.tag + "decoding on the fast path");
    FastDecoder fast(*model);  // as Model::load, which builds it when it loads the model
    t0 = Clock::now();
    const float* logits = nullptr;
    for (int64_t i = 0; i < prompt.size(1); ++i)
      logits = fast.step(static_cast<int32_t>(prompt[0][i].item<int64_t>()));
    for (int64_t i = 0; i < n; ++i)
      logits = fast.step(static_cast<int32_t>(std::max_element(logits, logits + c.config.vocab_size) - logits));
    r.decode_fast_tokens_per_s = static_cast<double>(n) / seconds_since(t0);
  }
  say(c.tag + "decoding without caches");
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
}

// One model at one context: its size and FLOPs, then each measurement asked for.
BenchResult bench_case(const ModelConfig& config, int64_t batch, const BenchOptions& o, const BenchReport& report,
                       const torch::Device& device, const Say& say) {
  const int64_t T = config.context;
  BenchResult r;
  r.name = config.name;
  r.context = T;
  r.params = count_params(config).total();
  r.batch = batch;
  r.train_flops_per_token = train_flops_per_token(config, T);
  torch::manual_seed(0);
  BenchCase c{config, device, r.batch, T, Gpt(config), {}, {}, {}, r.name + " @" + std::to_string(T) + ": "};
  c.model->to(device);
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  c.tokens = torch::randint(0, config.vocab_size, {c.B, T + 1}, opts);
  c.x = c.tokens.narrow(1, 0, T);
  c.y = c.tokens.narrow(1, 1, T);

  bench_training(c, o, say, r);
  if (report.sgemm_peak_gflops > 0)
    r.mfu = r.train_tokens_per_s * r.train_flops_per_token / (report.sgemm_peak_gflops * 1e9);
  c.model->eval();
  if (o.evaluate) bench_evaluation(c, o, say, r);
  if (o.decode) bench_decoding(c, o, say, r);
  return r;
}

// Each result's training FLOP rate against the first model's at the same context.
void compare_to_baseline(std::vector<BenchResult>& results) {
  for (auto& r : results)
    for (const auto& b : results)
      if (b.name == results.front().name && b.context == r.context) {
        const double base = b.train_tokens_per_s * b.train_flops_per_token;
        r.train_rate_vs_baseline = base > 0 ? r.train_tokens_per_s * r.train_flops_per_token / base : 0.0;
        break;
      }
}

}  // namespace

BenchReport run_bench(const std::vector<ModelConfig>& models, const BenchOptions& o) {
  const torch::Device device = compat::parse_device(o.device);
  const Say say = [&](const std::string& s) {
    if (o.on_progress) o.on_progress(s);
  };
  BenchReport report;
  if (device.is_cuda()) report.cuda_kernels = cuda_fused::describe();
  if (o.measure_peak && !models.empty()) measure_peak(report, models.front(), device, say);
  for (const ModelConfig& base_config : models) {
    validate(base_config);
    const std::vector<int64_t> contexts = o.contexts.empty() ? std::vector<int64_t>{base_config.context} : o.contexts;
    for (const int64_t T : contexts) {
      ModelConfig config = base_config;
      config.context = T;
      const int64_t batch = std::max<int64_t>(1, o.batch_size * contexts.front() / T);
      report.results.push_back(bench_case(config, batch, o, report, device, say));
    }
  }
  compare_to_baseline(report.results);
  if (device.is_cuda()) report.cuda_kernel_checks = cuda_fused::check_results();
  return report;
}

}  // namespace hsm
