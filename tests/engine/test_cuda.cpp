// The engine on CUDA against the CPU (issue 49), and the training step that does not wait for
// the GPU (AdamW::clip_and_step), which the CPU can check too.
//
// Cuda.*: skipped, saying so, where this LibTorch or machine has no CUDA GPU (ctest label cuda;
// bench/gpu_check.sh runs them on a GPU). DeviceStep.*: everywhere.
//
// Tolerances. fp32 on the GPU against fp32 on the CPU: the same operations in another summation
// order (cuBLAS, our CPU kernels), so a few ulps per sum; 1e-4 of the largest magnitude covers
// it with room and is 1000x below what a wrong kernel (a missing term, a wrong shift, a wrong
// bias correction) does. bf16 autocast: bf16 keeps 8 significant bits (unit roundoff 2^-9, about
// 0.2%); a mixer's output goes through two or three rounded matrix products whose d-term sums
// (d = 32 here) add error of about sqrt(d) x 0.2% of their terms' size, about 1%; we allow 5% of
// the largest magnitude, still far below the O(100%) of a wrong result.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "hsm/mixer_kind.h"
#include "inference/cuda_graph_decoder.h"
#include "model/cuda_fused.h"
#include "model/dropout.h"
#include "model/mixers/mixer.h"
#include "model/model.h"
#include "model/torch_compat.h"
#include "train/adamw.h"
#include "train/cuda_graph_step.h"

using namespace hsm;

namespace {

constexpr int64_t kD = 32, kT = 24, kB = 2;

#define HSM_REQUIRE_CUDA()                                                                      \
  do {                                                                                          \
    if (!torch::cuda::is_available())                                                           \
      GTEST_SKIP() << "no CUDA GPU here (this LibTorch " << compat::torch_version()            \
                   << (torch::hasCUDA() ? " has CUDA, but no GPU is visible)" : " has no CUDA)"); \
  } while (0)

// |a - b| <= tol x max|b|, elementwise; the message names the worst element.
::testing::AssertionResult close_to(const torch::Tensor& a, const torch::Tensor& b, double tol) {
  const auto A = a.detach().to(torch::kCPU, torch::kDouble), B = b.detach().to(torch::kCPU, torch::kDouble);
  if (A.sizes() != B.sizes()) return ::testing::AssertionFailure() << "shapes differ";
  const double scale = std::max(B.abs().max().item<double>(), 1e-12);
  const double worst = (A - B).abs().max().item<double>();
  if (std::isfinite(worst) && worst <= tol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "largest difference " << worst << " > " << tol << " x " << scale;
}

// bf16 gradients are compared in norm: bf16 keeps 8 significant bits (rounding 2^-9, ~0.2%), and
// through two matrix products and a ReLU (hsm_fusion, hsm_gate1) an input within rounding of zero
// can switch its ReLU on one device and not the other, so a single entry of a weight's gradient
// was seen 8% of the largest apart on an H200 while the whole gradient agrees to a few percent.
::testing::AssertionResult close_in_norm(const torch::Tensor& a, const torch::Tensor& b, double tol) {
  const auto A = a.detach().to(torch::kCPU, torch::kDouble), B = b.detach().to(torch::kCPU, torch::kDouble);
  if (A.sizes() != B.sizes()) return ::testing::AssertionFailure() << "shapes differ";
  const double scale = std::max(B.norm().item<double>(), 1e-12);
  const double diff = (A - B).norm().item<double>();
  if (std::isfinite(diff) && diff <= tol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "difference in norm " << diff << " > " << tol << " x " << scale;
}

ModelConfig tiny_config(const std::string& mixer_a = "hsm_ab", const std::string& mixer_b = "attn") {
  ModelConfig c;
  c.name = "tiny";
  c.vocab_size = 64;
  c.d_model = kD;
  c.context = kT;
  c.dropout = 0.0;
  c.layers = {LayerSpec{mixer_a, 64, mixer_info(mixer_a).multi_head ? 4 : 1},
              LayerSpec{mixer_b, 64, mixer_info(mixer_b).multi_head ? 4 : 1}};
  return c;
}

std::vector<std::pair<std::string, torch::Tensor>> named(torch::nn::Module& m) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

// Every registered mixer (hsm/mixer_kind.h).
std::vector<std::string> every_mixer_id() {
  std::vector<std::string> ids;
  for (const MixerInfo& m : all_mixers()) ids.push_back(m.id);
  return ids;
}

class CudaMixer : public ::testing::TestWithParam<std::string> {};

}  // namespace

// ---- the step without a host sync, on any device ----------------------------------------------

// clip_and_step = torch::nn::utils::clip_grad_norm_ then step: the clip as a gradient scale on the
// device gives the weights the host-side clip gives (here with the norm far above the limit).
// Adam's update is nearly blind to a gradient's scale (m / sqrt(v)), so an eps of 1 makes it
// about lr x gradient here: a clip that is off (or missing) moves the weights by as much.
TEST(DeviceStep, ClipAndStepEqualsClipGradNormThenStep) {
  const auto config = tiny_config();
  torch::manual_seed(0);
  Gpt a(config);
  torch::manual_seed(0);
  Gpt b(config);
  auto x = torch::randint(0, config.vocab_size, {kB, kT}), y = torch::randint(0, config.vocab_size, {kB, kT});
  AdamWOptions o;
  o.eps = 1.0;
  AdamW opt_a(named(*a), o), opt_b(named(*b), o);
  for (int step = 0; step < 3; ++step) {
    auto la = a->loss(x, y) * 50, lb = b->loss(x, y) * 50;  // a gradient norm well above 1
    opt_a.zero_grad();
    opt_b.zero_grad();
    la.backward();
    lb.backward();
    const double norm = torch::nn::utils::clip_grad_norm_(a->parameters(), 1.0);
    ASSERT_GT(norm, 2.0) << "the clip must act for this test to mean something";
    opt_a.step(0.01);
    const auto bad = opt_b.clip_and_step(0.01, 1.0, lb);
    EXPECT_FALSE(bad.item<bool>());
  }
  // Against each tensor's update (its change over the steps), not its size.
  torch::manual_seed(0);
  Gpt start(config);
  const auto pa = a->parameters(), pb = b->parameters(), p0 = start->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(close_to(pb[i] - p0[i], pa[i] - p0[i], 1e-4)) << i;
}

// A non-finite loss or gradient: flagged, and the update skipped (the weights stay finite).
TEST(DeviceStep, NonFiniteLossOrGradientSkipsTheUpdate) {
  torch::manual_seed(1);
  Gpt model(tiny_config());
  auto x = torch::randint(0, 64, {kB, kT}), y = torch::randint(0, 64, {kB, kT});
  AdamW opt(named(*model), {});
  std::vector<torch::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  auto loss = model->loss(x, y) * std::numeric_limits<double>::quiet_NaN();
  opt.zero_grad();
  loss.backward();
  EXPECT_TRUE(opt.clip_and_step(0.01, 1.0, loss).item<bool>());
  const auto after = model->parameters();
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(torch::equal(after[i], before[i])) << i;
  // A finite loss then updates as usual.
  loss = model->loss(x, y);
  opt.zero_grad();
  loss.backward();
  EXPECT_FALSE(opt.clip_and_step(0.01, 1.0, loss).item<bool>());
  EXPECT_FALSE(torch::equal(model->parameters().front(), before.front()));
}

TEST(DeviceStep, GlobalNormIsTheNormOfEveryElement) {
  auto a = torch::randn({3, 4}), b = torch::randn({5}), c = torch::randn({});
  const double expected = torch::cat({a.flatten(), b.flatten(), c.flatten()}).norm().item<double>();
  EXPECT_NEAR(compat::global_norm({a, b, c}).item<double>(), expected, 1e-5 * expected);
}

// ---- CUDA against the CPU ----------------------------------------------------------------------

// Each mixer's forward and backward on CUDA against the CPU: fp32, then bf16 autocast.
TEST_P(CudaMixer, ForwardAndBackwardMatchTheCpu) {
  HSM_REQUIRE_CUDA();
  const std::string id = GetParam();
  LayerSpec spec{id, 64, mixer_info(id).multi_head ? 4 : 1};
  torch::manual_seed(3);
  auto cpu = make_mixer(spec, 1, kD, 0.0, kT);
  torch::manual_seed(3);
  auto gpu = make_mixer(spec, 1, kD, 0.0, kT);
  gpu->to(torch::kCUDA);
  cpu->train();
  gpu->train();
  const auto x = torch::randn({kB, kT, kD});
  const auto w = torch::randn({kB, kT, kD});  // a loss that weighs every output differently
  for (const bool bf16 : {false, true}) {
    if (bf16 && !compat::autocast_supported()) continue;
    const double tol = bf16 ? 5e-2 : 1e-4;
    auto xc = x.clone().requires_grad_(true), xg = x.to(torch::kCUDA).requires_grad_(true);
    cpu->zero_grad();
    gpu->zero_grad();
    auto yc = cpu->forward(xc);
    torch::Tensor yg;
    {
      compat::AutocastGuard autocast(torch::Device(torch::kCUDA), bf16);
      yg = gpu->forward(xg);
    }
    EXPECT_TRUE(close_to(yg.to(torch::kFloat), yc, tol)) << id << (bf16 ? " bf16" : " fp32") << " forward";
    (yc * w).sum().backward();
    (yg.to(torch::kFloat) * w.to(torch::kCUDA)).sum().backward();
    EXPECT_TRUE(bf16 ? close_in_norm(xg.grad(), xc.grad(), tol) : close_to(xg.grad(), xc.grad(), tol)) << id << (bf16 ? " bf16" : " fp32") << " input gradient";
    const auto pc = cpu->named_parameters(), pg = gpu->named_parameters();
    for (const auto& p : pc) {
      const auto& g = pg[p.key()];
      ASSERT_TRUE(g.grad().defined()) << id << " " << p.key();
      EXPECT_TRUE(bf16 ? close_in_norm(g.grad(), p.value().grad(), tol) : close_to(g.grad(), p.value().grad(), tol))
          << id << (bf16 ? " bf16 " : " fp32 ") << p.key();
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Registry, CudaMixer, ::testing::ValuesIn(every_mixer_id()),
                         [](const auto& info) { return info.param; });

// The fused update (one at::_fused_adamw_ on LibTorch 2.x) against the CPU's own kernel, on the
// same gradients: weight decay on matrices only, bias corrections, the clip as a gradient scale.
TEST(Cuda, FusedAdamWMatchesTheCpuKernel) {
  HSM_REQUIRE_CUDA();
  torch::manual_seed(4);
  std::vector<std::pair<std::string, torch::Tensor>> pc = {{"w", torch::randn({16, 8}).requires_grad_()},
                                                           {"b", torch::randn({8}).requires_grad_()},
                                                           {"s", torch::randn({}).requires_grad_()}};
  std::vector<std::pair<std::string, torch::Tensor>> pg;
  for (const auto& [n, t] : pc) pg.emplace_back(n, t.detach().to(torch::kCUDA).requires_grad_());
  AdamWOptions o;
  o.weight_decay = 0.1;
  AdamW cpu(pc, o), gpu(pg, o);
  for (int step = 0; step < 4; ++step) {
    for (size_t i = 0; i < pc.size(); ++i) {
      auto g = torch::randn(pc[i].second.sizes());
      pc[i].second.mutable_grad() = g;
      pg[i].second.mutable_grad() = g.to(torch::kCUDA);
    }
    const auto scale = torch::full({}, 1.0 + step, torch::kFloat);
    cpu.step(0.01, scale);
    gpu.step(0.01, scale.to(torch::kCUDA));
    for (size_t i = 0; i < pc.size(); ++i)
      EXPECT_TRUE(close_to(pg[i].second, pc[i].second, 1e-5)) << pc[i].first << " step " << step;
  }
  std::printf("fused AdamW on CUDA: %s\n",
              compat::fused_adamw_supported({pg[0].second}, {pg[0].second.grad()}) ? "yes (at::_fused_adamw_)" : "no (a loop per tensor)");
}

// A few training steps on CUDA follow the CPU's losses (fp32, no dropout; the CUDA side takes
// the trainer's step: clip_and_step, fused where it can be).
TEST(Cuda, TrainingStepsFollowTheCpusLosses) {
  HSM_REQUIRE_CUDA();
  const auto config = tiny_config();
  torch::manual_seed(5);
  Gpt cpu(config);
  torch::manual_seed(5);
  Gpt gpu(config);
  gpu->to(torch::kCUDA);
  AdamW oc(named(*cpu), {}), og(named(*gpu), {});
  auto x = torch::randint(0, config.vocab_size, {4, kT}), y = torch::randint(0, config.vocab_size, {4, kT});
  auto xg = x.to(torch::kCUDA), yg = y.to(torch::kCUDA);
  for (int step = 0; step < 8; ++step) {
    auto lc = cpu->loss(x, y);
    auto lg = gpu->loss(xg, yg);
    EXPECT_NEAR(lg.item<double>(), lc.item<double>(), 2e-3 * lc.item<double>()) << "step " << step;
    oc.zero_grad();
    og.zero_grad();
    lc.backward();
    lg.backward();
    torch::nn::utils::clip_grad_norm_(cpu->parameters(), 1.0);
    oc.step(3e-3);
    EXPECT_FALSE(og.clip_and_step(3e-3, 1.0, lg).item<bool>());
  }
}

// The training step recorded once as a CUDA graph and replayed (train/cuda_graph_step.h) takes
// the same steps as the eager one: a new batch and a new learning rate each step, clipped, fused
// AdamW. fp32, no dropout: the same kernels in the same order, so 1e-5 of the largest weight.
TEST(Cuda, GraphedStepsEqualTheEagerSteps) {
  HSM_REQUIRE_CUDA();
  if (!CudaGraphStep::available(torch::kCUDA)) GTEST_SKIP() << "this build records no CUDA graph (HSM_CUDA_GRAPHS)";
  const auto config = tiny_config();
  torch::manual_seed(7);
  Gpt eager(config);
  torch::manual_seed(7);
  Gpt graphed(config);
  eager->to(torch::kCUDA);
  graphed->to(torch::kCUDA);
  AdamW oe(named(*eager), {}), og(named(*graphed), {});
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA);
  auto batch = [&](int step) {
    torch::manual_seed(100 + step);
    return torch::randint(0, config.vocab_size, {4, kT + 1}, opts);
  };
  auto eager_step = [](Gpt& m, AdamW& o, const torch::Tensor& tokens, double lr) {
    auto loss = m->loss(tokens.narrow(1, 0, kT), tokens.narrow(1, 1, kT));
    o.zero_grad();
    loss.backward();
    o.clip_and_step(lr, 1.0, loss);
    return loss.item<double>();
  };
  for (int step = 0; step < 2; ++step) {  // warm-up, both eager (cuBLAS handles outside the recording)
    eager_step(eager, oe, batch(step), 1e-3);
    eager_step(graphed, og, batch(step), 1e-3);
  }
  og.zero_grad();
  og.prepare_recorded_steps();
  CudaGraphStep graph({batch(0)}, [&](const std::vector<torch::Tensor>& in, const torch::Tensor& lr) {
    auto loss = graphed->loss(in[0].narrow(1, 0, kT), in[0].narrow(1, 1, kT));
    loss.backward();
    auto bad = og.clip_and_step_recorded(lr, 1.0, loss);
    return std::make_pair(loss.detach(), bad);
  });
  // Recording computed nothing: the weights are still the eager model's.
  for (const auto& [n, p] : named(*graphed))
    EXPECT_TRUE(close_to(p, eager->named_parameters()[n], 0)) << n << " changed while recording";
  for (int step = 2; step < 10; ++step) {
    const double lr = 1e-3 * (1 + step % 3);  // the rate changes: it is read on the device
    const auto tokens = batch(step);
    const double le = eager_step(eager, oe, tokens, lr);
    auto [loss, bad] = graph.replay({tokens}, lr);
    og.count_recorded_step();
    EXPECT_NEAR(loss.item<double>(), le, 1e-5 * std::abs(le)) << "step " << step;
    EXPECT_FALSE(bad.item<bool>());
  }
  EXPECT_EQ(og.steps(), oe.steps());
  for (const auto& [n, p] : named(*graphed))
    EXPECT_TRUE(close_to(p, eager->named_parameters()[n], 1e-5)) << n;
  for (const auto& [n, m] : og.state()) {
    const auto es = oe.state();
    for (const auto& [en, em] : es)
      if (en == n) EXPECT_TRUE(close_to(m, em, 1e-5)) << n;
  }
  EXPECT_FALSE(graph.fits({torch::zeros({2, kT + 1}, opts)})) << "another batch shape must not replay";
}

// Decoding on CUDA with caches (prefill, then a token at a time) gives the logits of running the
// whole window again for every token.
TEST(Cuda, CachedDecodingEqualsUncached) {
  HSM_REQUIRE_CUDA();
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{{"hsm_ab", "attn"}, {"attn", "hsm_ab"}}) {
    torch::manual_seed(6);
    Gpt model(tiny_config(a, b));
    model->to(torch::kCUDA);
    model->eval();
    torch::NoGradGuard no_grad;
    auto seq = torch::randint(0, 64, {1, 4}, torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA));
    DecodeState state;
    auto logits = model->prefill(seq, state).reshape({-1});
    for (int i = 0; i < 12; ++i) {
      const auto full = model->forward(seq).select(1, -1).reshape({-1});
      EXPECT_TRUE(close_to(logits, full, 1e-4)) << a << "+" << b << " token " << i;
      auto next = full.argmax().view({1, 1});
      seq = torch::cat({seq, next}, 1);
      logits = model->step(next.view({1}), state).reshape({-1});
    }
  }
}

// ---- decoding as a CUDA graph (inference/cuda_graph_decoder.h) -----------------------------------

namespace {

#define HSM_REQUIRE_GRAPH_DECODING()                                                                    \
  do {                                                                                                  \
    HSM_REQUIRE_CUDA();                                                                                 \
    if (!CudaGraphDecoder::available(torch::kCUDA))                                                     \
      GTEST_SKIP() << "this build records no CUDA graph (HSM_CUDA_GRAPHS) or HSM_CUDA_GRAPH=0 is set"; \
  } while (0)

// hsm_ab with shifts 1..8 (a register that wraps within the context of 24), gpt, a hybrid.
std::vector<std::pair<std::string, ModelConfig>> decoding_models() {
  auto with = [](std::vector<LayerSpec> layers) {
    auto c = tiny_config();
    c.layers = std::move(layers);
    return c;
  };
  return {{"hsm_ab", with(std::vector<LayerSpec>(4, LayerSpec{"hsm_ab", 64, 1}))},
          {"gpt", with(std::vector<LayerSpec>(3, LayerSpec{"attn", 64, 4}))},
          {"hybrid", with({{"hsm_ab", 64, 1}, {"attn", 64, 4}, {"hsm_ab_mh_ext", 64, 4}, {"attn", 64, 2}})}};
}

Gpt cuda_model(const ModelConfig& c) {
  torch::manual_seed(11);
  Gpt model(c);
  {
    torch::NoGradGuard no_grad;  // (a,b) off their equal initial values, so that a wrong shift shows
    for (auto& p : model->named_parameters())
      if (p.key().find(".mixer.") != std::string::npos && p.value().dim() <= 1) p.value().uniform_(-1.5, 1.5);
  }
  model->to(torch::kCUDA);
  model->eval();
  return model;
}

torch::Tensor cuda_tokens(std::vector<int64_t> ids) {
  return torch::tensor(ids, torch::kLong).view({1, -1}).to(torch::kCUDA);
}

}  // namespace

// 200 greedy tokens (temperature 0) through the graph and through LibTorch's eager cached step,
// sliding the window as the generator does (a new prefill loaded into the graph's buffers) every
// time the context of 24 fills. Both are fed the eager path's token (so one near-tie cannot make
// the rest of the comparison meaningless), and at every token: the logits within 1e-4 of the
// largest (fp32 on one GPU: the graph replays the eager step's operators except attention, which
// sums over the whole fixed buffer with the later slots masked to exact zeros: another reduction
// length and order, a few ulps per sum; a wrong slot or position is O(1)), and the same argmax
// unless the eager top two are within that tolerance.
TEST(Cuda, GraphedDecodingEqualsEagerCachedDecoding) {
  HSM_REQUIRE_GRAPH_DECODING();
  torch::NoGradGuard no_grad;
  constexpr int64_t kTokens = 200, kSlide = 6;
  for (const auto& [name, config] : decoding_models()) {
    auto model = cuda_model(config);
    CudaGraphDecoder graph(model);
    std::vector<int64_t> seq = {3, 17, 42, 5};
    DecodeState eager;
    auto logits = model->prefill(cuda_tokens(seq), eager).reshape({-1});
    {
      DecodeState state;
      model->prefill(cuda_tokens(seq), state);
      graph.load(state);
    }
    int64_t ties = 0, slides = 0;
    for (int64_t i = 0; i < kTokens; ++i) {
      const auto next = logits.argmax().item<int64_t>();
      seq.push_back(next);
      if (eager.pos == config.context) {  // slide: both start again from the window's last tokens
        const std::vector<int64_t> window(seq.end() - (config.context - kSlide), seq.end());
        eager = DecodeState();
        logits = model->prefill(cuda_tokens(window), eager).reshape({-1});
        DecodeState state;
        model->prefill(cuda_tokens(window), state);
        graph.load(state);
        ++slides;
        continue;
      }
      logits = model->step(torch::full({1}, next, torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA)),
                           eager)
                   .reshape({-1});
      const auto g = graph.step(next).reshape({-1}).clone();
      ASSERT_EQ(graph.position(), eager.pos) << name << " token " << i;
      ASSERT_TRUE(close_to(g, logits, 1e-4)) << name << " token " << i;
      if (g.argmax().item<int64_t>() != logits.argmax().item<int64_t>()) {
        const auto top = std::get<0>(logits.topk(2));
        const double gap = (top[0] - top[1]).item<double>(), scale = logits.abs().max().item<double>();
        EXPECT_LE(gap, 1e-4 * scale) << name << " token " << i << ": another token, and not a near-tie";
        ++ties;
      }
    }
    EXPECT_GE(slides, 20) << name;  // 200 tokens through a window of 24 that slides by 6
    EXPECT_LE(ties, 2) << name;
  }
}

// The graph's buffers are the decoder's whole state: after one prompt and some tokens, a second
// (shorter) prompt loaded into it decodes exactly as a freshly recorded decoder (and as the eager
// step): nothing of the first sequence is read, masked or not.
TEST(Cuda, GraphReplayAfterASecondPromptEqualsAFreshDecoder) {
  HSM_REQUIRE_GRAPH_DECODING();
  torch::NoGradGuard no_grad;
  const auto config = decoding_models()[2].second;  // the hybrid: shift rings and KV buffers
  auto model = cuda_model(config);
  auto decode = [&](CudaGraphDecoder& g, const std::vector<int64_t>& prompt, int64_t n) {
    DecodeState state;
    auto logits = model->prefill(cuda_tokens(prompt), state).reshape({-1});
    g.load(state);
    std::vector<torch::Tensor> out;
    for (int64_t i = 0; i < n; ++i) {
      logits = g.step(logits.argmax().view({1})).reshape({-1}).clone();
      out.push_back(logits);
    }
    return out;
  };
  CudaGraphDecoder used(model);
  decode(used, {9, 8, 7, 6, 5, 4, 3, 2, 1, 10, 11}, 10);  // 21 of 24 slots filled
  const auto again = decode(used, {1, 2, 3}, 15);
  CudaGraphDecoder fresh(model);
  const auto first = decode(fresh, {1, 2, 3}, 15);
  DecodeState eager;  // fed the graph's tokens
  auto previous = model->prefill(cuda_tokens({1, 2, 3}), eager).reshape({-1});
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(close_to(again[i], first[i], 1e-6)) << "token " << i;
    const auto logits = model->step(previous.argmax().view({1}), eager).reshape({-1});
    EXPECT_TRUE(close_to(again[i], logits, 1e-4)) << "token " << i << " against the eager step";
    previous = again[i];
  }
  while (used.position() < config.context) used.step(int64_t{0});
  EXPECT_THROW(used.step(int64_t{0}), std::logic_error) << "the context is full";
}

// ---- the fused training kernels (model/cuda_fused.h) ---------------------------------------------

// Everywhere: CPU tensors never take the fused kernels (the CPU keeps its own), and a build or a
// run without them says why in the words the run log and `hsm bench --json` print.
TEST(DeviceStep, FusedKernelsAreForCudaTensorsAndSayWhetherTheyAreOn) {
  const auto x = torch::randn({2, 5, 8}), w = torch::ones({8}), b = torch::zeros({8});
  EXPECT_FALSE(cuda_fused::eligible_layer_norm(x, w, b));
  EXPECT_FALSE(cuda_fused::eligible_dropout(x, x));
  EXPECT_FALSE(cuda_fused::eligible_shift_mix(x, torch::ones({}), torch::ones({}), 1));
  EXPECT_FALSE(cuda_fused::eligible_lm_loss(x.reshape({10, 8}), torch::randn({4, 8})));
  EXPECT_FALSE(cuda_fused::eligible_bias_gelu(x, b));
  EXPECT_FALSE(cuda_fused::eligible_add_norm(x, x, w, b));
  const std::string said = cuda_fused::describe();
  EXPECT_EQ(said.rfind("fused CUDA kernels: ", 0), 0u) << said;
  if (said.find("not built") != std::string::npos) {
    EXPECT_FALSE(cuda_fused::enabled());
    cuda_fused::set_enabled(true);  // turning on what is not built changes nothing
    EXPECT_FALSE(cuda_fused::enabled());
  } else {
    const bool was = cuda_fused::enabled();
    cuda_fused::set_enabled(false);
    EXPECT_FALSE(cuda_fused::enabled());
    EXPECT_NE(cuda_fused::describe().find("off"), std::string::npos) << cuda_fused::describe();
    cuda_fused::set_enabled(was);
  }
}

// The eligible_* calls below also run the check at first use (model/cuda_fused.cpp): a family that
// fails it is off, its ASSERT fails, and stderr says by how much it disagreed.
#define HSM_REQUIRE_FUSED()                                                                        \
  do {                                                                                             \
    HSM_REQUIRE_CUDA();                                                                            \
    if (!cuda_fused::enabled()) GTEST_SKIP() << cuda_fused::describe();                            \
  } while (0)

// LayerNorm against LibTorch's on the same GPU, fp32: widths of each kernel variant (≤ 256, ≤ 512,
// ≤ 1024 per row, and one that is no multiple of 32), and enough rows that a warp takes several
// (the weight gradients' partial sums over a warp's rows). fp32 sums in another order: 1e-5 of the
// largest value forward, 1e-4 for gradients summed over 9,000 rows.
TEST(Cuda, FusedLayerNormMatchesLibTorch) {
  HSM_REQUIRE_FUSED();
  const auto f32 = torch::TensorOptions().device(torch::kCUDA);
  for (const int64_t d : {32, 100, 256, 512, 1024}) {
    for (const int64_t rows : {7, 9000}) {
      torch::manual_seed(static_cast<uint64_t>(d + rows));
      const auto x = (torch::randn({rows, d}, f32) * 3 + 1).requires_grad_(true);
      const auto w = torch::randn({d}, f32).requires_grad_(true), b = torch::randn({d}, f32).requires_grad_(true);
      const auto up = torch::randn({rows, d}, f32);
      ASSERT_TRUE(cuda_fused::eligible_layer_norm(x, w, b));
      const auto y = cuda_fused::layer_norm(x, w, b, 1e-5);
      (y * up).sum().backward();
      const auto dx = x.grad().clone(), dw = w.grad().clone(), db = b.grad().clone();
      x.mutable_grad().reset();
      w.mutable_grad().reset();
      b.mutable_grad().reset();
      const auto ref = torch::layer_norm(x, {d}, w, b, 1e-5);
      (ref * up).sum().backward();
      const std::string at = "d " + std::to_string(d) + ", rows " + std::to_string(rows);
      EXPECT_TRUE(close_to(y, ref, 1e-5)) << at << " forward";
      EXPECT_TRUE(close_to(dx, x.grad(), 1e-4)) << at << " input gradient";
      EXPECT_TRUE(close_to(dw, w.grad(), 1e-4)) << at << " weight gradient";
      EXPECT_TRUE(close_to(db, b.grad(), 1e-4)) << at << " bias gradient";
    }
  }
  EXPECT_FALSE(cuda_fused::eligible_layer_norm(torch::zeros({2, 1025}, f32), torch::ones({1025}, f32),
                                               torch::zeros({1025}, f32)))
      << "wider than the kernels take";
  EXPECT_FALSE(cuda_fused::eligible_layer_norm(torch::zeros({2, 8}), torch::ones({8}), torch::zeros({8})))
      << "the CPU keeps LibTorch's";
  // hsm bench reports what the check at first use found (the figures' meaning hangs on it).
  EXPECT_NE(cuda_fused::check_results().find("norm passed on cuda:"), std::string::npos) << cuda_fused::check_results();
}

// The CUDA dropout draws the CPU's hashed mask (model/dropout.cpp) from the same seed: the same
// elements dropped, the kept ones scaled by 1/(1 − p); its gradient is the upstream gradient times
// that mask; the residual form adds h and passes h's gradient through. fp32 and bf16 outputs of
// the block (y), an fp32 residual stream (h).
TEST(Cuda, FusedDropoutDrawsTheCpusMaskFromTheSameSeed) {
  HSM_REQUIRE_FUSED();
  const double p = 0.1;
  const int64_t seed = 0x1234567890abcdefLL;
  const auto seed_t = torch::full({1}, seed, torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA));
  const auto mask = dropout_mask({4, 50, 64}, p, static_cast<uint64_t>(seed));  // CPU, fp32
  const double kept = mask.ne(0).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 1 - p, 0.02);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    torch::manual_seed(11);
    const auto y = torch::randn({4, 50, 64}).to(torch::kCUDA, dtype).requires_grad_(true);
    const auto h = torch::randn({4, 50, 64}, torch::TensorOptions().device(torch::kCUDA)).requires_grad_(true);
    const auto up = torch::randn({4, 50, 64}, torch::TensorOptions().device(torch::kCUDA));
    const std::string at = dtype == torch::kBFloat16 ? "bf16 y" : "fp32 y";
    ASSERT_TRUE(cuda_fused::eligible_dropout(h, y)) << at;
    const auto out = cuda_fused::dropout_with_seed(h, y, p, seed_t);
    ASSERT_EQ(out.scalar_type(), torch::kFloat32) << at;
    const auto y32 = y.detach().to(torch::kCPU, torch::kFloat32), h32 = h.detach().cpu();
    EXPECT_TRUE(close_to(out, h32 + y32 * mask, 1e-6)) << at << " residual forward";
    EXPECT_TRUE(torch::equal((out.detach().cpu() - h32).ne(0), mask.ne(0) & y32.ne(0))) << at << " dropped elements";
    (out * up).sum().backward();
    EXPECT_TRUE(close_to(h.grad(), up, 0)) << at << " the residual's gradient passes through";
    EXPECT_TRUE(close_to(y.grad().to(torch::kFloat32), (up.cpu() * mask).to(dtype).to(torch::kFloat32), 1e-6))
        << at << " gradient = upstream × mask";
    const auto alone = cuda_fused::dropout_with_seed({}, y.detach(), p, seed_t);
    EXPECT_EQ(alone.scalar_type(), dtype) << at;
    EXPECT_TRUE(close_to(alone.to(torch::kFloat32), (y32 * mask).to(dtype).to(torch::kFloat32), 1e-6)) << at;
  }
  // Seeds come from LibTorch's CUDA generator: a new mask each call, the same after manual_seed.
  const auto y = torch::ones({1000}, torch::TensorOptions().device(torch::kCUDA));
  torch::manual_seed(3);
  const auto a = cuda_fused::dropout({}, y, 0.5), b = cuda_fused::dropout({}, y, 0.5);
  torch::manual_seed(3);
  const auto a2 = cuda_fused::dropout({}, y, 0.5);
  EXPECT_FALSE(torch::equal(a, b)) << "two calls drew the same mask";
  EXPECT_TRUE(torch::equal(a, a2)) << "torch::manual_seed does not repeat the mask";
  EXPECT_NEAR(a.eq(0).to(torch::kDouble).mean().item<double>(), 0.5, 0.06);
}

// The fused output layer against LibTorch's path under bf16 autocast (bf16 logits, then
// cross_entropy in fp32): the loss to 2e-4 (the same bf16 product, though cuBLAS may sum in another
// order and round a logit the other way), the gradients to 1% in norm (the loss's gradient rounded
// to bf16 before the products, in both). A wrong kernel is off by O(1). Vocabularies of one block
// pass (1000) and of several (5000); targets at the first and last token id included.
TEST(Cuda, FusedLmLossMatchesCrossEntropyUnderAutocast) {
  HSM_REQUIRE_FUSED();
  if (!compat::autocast_supported()) GTEST_SKIP() << "no autocast in this LibTorch";
  const auto f32 = torch::TensorOptions().device(torch::kCUDA);
  for (const int64_t V : {1000, 5000}) {
    torch::manual_seed(static_cast<uint64_t>(V));
    const int64_t N = 600, d = 64;
    const auto h = torch::randn({N, d}, f32).requires_grad_(true);
    const auto w = (torch::randn({V, d}, f32) * 0.3).requires_grad_(true);
    auto t = torch::randint(0, V, {N}, f32.dtype(torch::kLong));
    t.index_put_({0}, 0);
    t.index_put_({1}, V - 1);
    torch::Tensor fused, ref;
    {
      compat::AutocastGuard autocast(torch::Device(torch::kCUDA), true);
      ASSERT_TRUE(cuda_fused::eligible_lm_loss(h, w));
      fused = cuda_fused::lm_loss(h, w, t);
    }
    (fused * 3).backward();  // an upstream gradient other than 1
    const auto dh = h.grad().clone(), dw = w.grad().clone();
    h.mutable_grad().reset();
    w.mutable_grad().reset();
    {
      compat::AutocastGuard autocast(torch::Device(torch::kCUDA), true);
      ref = torch::nn::functional::cross_entropy(torch::matmul(h, w.t()).to(torch::kFloat32), t);
    }
    (ref * 3).backward();
    const std::string at = "V " + std::to_string(V);
    EXPECT_NEAR(fused.item<double>(), ref.item<double>(), 2e-4 * ref.item<double>()) << at;
    EXPECT_TRUE(close_in_norm(dh, h.grad(), 1e-2)) << at << " hidden-state gradient";
    EXPECT_TRUE(close_in_norm(dw, w.grad(), 1e-2)) << at << " weight gradient";
  }
  EXPECT_FALSE(cuda_fused::eligible_lm_loss(torch::zeros({2, 8}, f32), torch::zeros({5, 8}, f32)))
      << "without autocast the plain fp32 path keeps its precision";
}

// A block's residual add with dropout and ln2 in one kernel against the two it replaces: the CPU's
// mask for the same seed, then LayerNorm; h's and x's gradients both flowing back (the FFN's residual
// and its input), y fp32 and bf16, and without dropout (p 0 keeps every element). Tolerances as
// LayerNorm's; y's bf16 gradient rounded once on both sides. With bf16 y also x in bf16 (x_bf16: for
// a product under autocast): torch::layer_norm's output rounded to bf16 (one bf16 step where the two
// fp32 values straddle a rounding boundary; most are equal), x's gradient then coming back in bf16
// on both sides.
TEST(Cuda, FusedAddNormIsResidualDropoutThenLayerNorm) {
  HSM_REQUIRE_FUSED();
  const auto f32 = torch::TensorOptions().device(torch::kCUDA);
  const int64_t seed = 0x0badc0ffee12LL, rows = 3000;
  const auto seed_t = torch::full({1}, seed, f32.dtype(torch::kLong));
  for (const int64_t d : {64, 300, 1024}) {
    for (const double p : {0.0, 0.1}) {
      for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
        for (const bool x_bf16 : {false, true}) {
          if (x_bf16 && dtype != torch::kBFloat16) continue;
          torch::manual_seed(static_cast<uint64_t>(d));
          const auto mask = p > 0 ? dropout_mask({rows, d}, p, static_cast<uint64_t>(seed)).to(torch::kCUDA)
                                  : torch::ones({rows, d}, f32);
          const auto h_in = torch::randn({rows, d}, f32).requires_grad_(true);
          const auto y = torch::randn({rows, d}, f32).to(dtype).requires_grad_(true);
          const auto w = torch::randn({d}, f32).requires_grad_(true), b = torch::randn({d}, f32).requires_grad_(true);
          auto up_h = torch::randn({rows, d}, f32), up_x = torch::randn({rows, d}, f32);
          if (x_bf16) up_x = up_x.to(torch::kBFloat16).to(torch::kFloat32);  // x's gradient, exact in bf16
          ASSERT_TRUE(cuda_fused::eligible_add_norm(h_in, y, w, b));
          const auto [h, x] = cuda_fused::add_norm_with_seed(h_in, y, p, w, b, 1e-5, seed_t, x_bf16);
          ASSERT_EQ(x.scalar_type(), x_bf16 ? torch::kBFloat16 : torch::kFloat32);
          ASSERT_EQ(h.scalar_type(), torch::kFloat32);
          ((h * up_h).sum() + (x.to(torch::kFloat32) * up_x).sum()).backward();
          std::vector<torch::Tensor> fused;
          for (const auto& t : {h_in, y, w, b}) {
            fused.push_back(t.grad().clone());
            t.mutable_grad().reset();
          }
          const auto h_ref = h_in + y.to(torch::kFloat32) * mask;
          auto x_ref = torch::layer_norm(h_ref, {d}, w, b, 1e-5);
          if (x_bf16) x_ref = x_ref.to(torch::kBFloat16);
          ((h_ref * up_h).sum() + (x_ref.to(torch::kFloat32) * up_x).sum()).backward();
          const std::string at = "d " + std::to_string(d) + ", p " + std::to_string(p) +
                                 (dtype == torch::kBFloat16 ? ", bf16 y" : ", fp32 y") + (x_bf16 ? ", bf16 x" : "");
          EXPECT_TRUE(close_to(h, h_ref, 1e-6)) << at << " h";
          EXPECT_TRUE(close_to(x.to(torch::kFloat32), x_ref.to(torch::kFloat32), x_bf16 ? 1e-2 : 1e-5)) << at << " x";
          if (x_bf16)
            EXPECT_GT((x == x_ref).to(torch::kFloat64).mean().item<double>(), 0.95) << at << " x rounded as LibTorch's";
          EXPECT_TRUE(close_to(fused[0], h_in.grad(), 1e-4)) << at << " h_in's gradient";
          EXPECT_TRUE(close_to(fused[1].to(torch::kFloat32), y.grad().to(torch::kFloat32),
                               dtype == torch::kBFloat16 ? 1e-2 : 1e-4))
              << at << " y's gradient";
          EXPECT_TRUE(close_to(fused[2], w.grad(), 1e-4)) << at << " weight gradient";
          EXPECT_TRUE(close_to(fused[3], b.grad(), 1e-4)) << at << " bias gradient";
        }
      }
    }
  }
}

// The FFN's bias + GELU under bf16 autocast against LibTorch's (the product with its bias, then
// torch::gelu in bf16): each value to 1% of the largest (bf16 rounding, in a different place: the
// product is rounded before the bias is added here), the first product's gradient likewise, the bias
// gradient to 1% in norm. Widths of one block across, of several, and one that is no multiple of
// the block; enough rows that each block of rows sums many.
TEST(Cuda, FusedBiasGeluMatchesLibTorchUnderAutocast) {
  HSM_REQUIRE_FUSED();
  if (!compat::autocast_supported()) GTEST_SKIP() << "no autocast in this LibTorch";
  const auto f32 = torch::TensorOptions().device(torch::kCUDA);
  for (const int64_t f : {64, 1024, 1300}) {
    torch::manual_seed(static_cast<uint64_t>(f));
    const int64_t N = 5000, d = 96;
    const auto x = torch::randn({N, d}, f32).requires_grad_(true);
    const auto w = (torch::randn({f, d}, f32) * 0.2).requires_grad_(true), b = torch::randn({f}, f32).requires_grad_(true);
    const auto up = torch::randn({N, f}, f32);
    torch::Tensor fused, ref;
    {
      compat::AutocastGuard autocast(torch::Device(torch::kCUDA), true);
      ASSERT_TRUE(cuda_fused::eligible_bias_gelu(x, b));
      fused = cuda_fused::bias_gelu(torch::nn::functional::linear(x, w), b);
    }
    ASSERT_EQ(fused.scalar_type(), torch::kBFloat16);
    (fused * up).sum().backward();
    const auto dx = x.grad().clone(), dw = w.grad().clone(), db = b.grad().clone();
    for (const auto& t : {x, w, b}) t.mutable_grad().reset();
    {
      compat::AutocastGuard autocast(torch::Device(torch::kCUDA), true);
      ref = torch::gelu(torch::nn::functional::linear(x, w, b));
    }
    (ref * up).sum().backward();
    const std::string at = "f " + std::to_string(f);
    EXPECT_TRUE(close_to(fused.to(torch::kFloat32), ref.to(torch::kFloat32), 1e-2)) << at << " forward";
    EXPECT_TRUE(close_in_norm(dx, x.grad(), 1e-2)) << at << " input gradient";
    EXPECT_TRUE(close_in_norm(dw, w.grad(), 1e-2)) << at << " weight gradient";
    EXPECT_TRUE(close_in_norm(db, b.grad(), 1e-2)) << at << " bias gradient";
  }
  EXPECT_FALSE(cuda_fused::eligible_bias_gelu(torch::zeros({2, 8}, f32), torch::zeros({8}, f32)))
      << "without autocast the first product stays fp32: LibTorch's path";
}

// A model's training steps under bf16 autocast with the fused kernels follow the same steps with
// LibTorch's kernels (no dropout: the two draw different masks): the losses agree to 2% over 12
// steps (bf16 roundings in another order, through Adam), for an (a,b) layer, attention and an
// (a,b) vector layer. With dropout 0.1 the fused model learns (the loss falls by over 10% on the
// batch it sees again).
TEST(Cuda, FusedKernelsTrainAsLibTorchsUnderAutocast) {
  HSM_REQUIRE_FUSED();
  if (!compat::autocast_supported()) GTEST_SKIP() << "no autocast in this LibTorch";
  auto train = [](bool fused, double dropout) {
    cuda_fused::set_enabled(fused);
    auto config = tiny_config("hsm_ab", "attn");
    config.layers.push_back(LayerSpec{"hsm_ab_vec", 64, 1});
    config.dropout = dropout;
    torch::manual_seed(21);
    Gpt model(config);
    model->to(torch::kCUDA);
    model->train();
    AdamW opt(named(*model), {});
    torch::manual_seed(22);
    const auto opts = torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA);
    const auto x = torch::randint(0, config.vocab_size, {8, kT}, opts), y = torch::randint(0, config.vocab_size, {8, kT}, opts);
    std::vector<double> losses;
    for (int step = 0; step < 12; ++step) {
      torch::Tensor loss;
      {
        compat::AutocastGuard autocast(torch::Device(torch::kCUDA), true);
        loss = model->loss(x, y);
      }
      opt.zero_grad();
      loss.backward();
      opt.clip_and_step(1e-2, 1.0, loss);
      losses.push_back(loss.item<double>());
    }
    cuda_fused::set_enabled(true);
    return losses;
  };
  const auto fused = train(true, 0.0), plain = train(false, 0.0);
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], plain[i], 2e-2 * plain[i]) << "step " << i;
  EXPECT_LT(fused.back(), fused.front() * 0.9) << "no learning to compare";
  const auto with_dropout = train(true, 0.1);
  EXPECT_LT(with_dropout.back(), with_dropout.front() * 0.9) << "the fused model with dropout did not learn";
}
