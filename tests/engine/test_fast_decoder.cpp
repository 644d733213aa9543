// The hand-written fp32 decoding path (inference/fast_decoder.h) computes what LibTorch's
// cached step computes: logits equal to ~1e-4 for every mixer it supports and for hybrids,
// across a full context and the restarts of a sliding window; and a model samples the same
// text from the same seed on either path.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>
#include <limits>
#include <filesystem>

#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/mixer_kind.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "inference/fast_decoder.h"
#include "kernels/fast_kernels.h"
#include "model/model.h"
#include "kernels/parallel_gemm.h"
#include "train/adamw.h"
#include "kernels/blas_threads.h"
#include "kernels/gemm.h"

using namespace hsm;

namespace {

constexpr double kTol = 1e-4;

ModelConfig tiny_config(const std::vector<LayerSpec>& layers, int64_t context = 24) {
  ModelConfig c;
  c.vocab_size = 37;  // not a multiple of 4: the matrix-vector kernel's row tail runs
  c.d_model = 16;
  c.context = context;
  c.dropout = 0.0;
  c.layers = layers;
  return c;
}

// half_weights: every weight rounded to fp16 first, as in the F16 exports (the bundled demo
// models), which the fast path then keeps as halves.
Gpt random_model(const ModelConfig& c, bool half_weights) {
  torch::manual_seed(11);
  Gpt model(c);
  model->eval();
  torch::NoGradGuard no_grad;
  // Move every weight off its initial value (zero biases, LayerNorm 1/0, equal a/b) so a
  // mix-up of any two shows.
  for (auto& p : model->named_parameters()) {
    p.value().uniform_(-0.8, 0.8);
    if (half_weights) p.value().copy_(p.value().to(torch::kHalf).to(torch::kFloat));
  }
  return model;
}

double max_diff(const float* fast, const torch::Tensor& ref) {
  auto r = ref.reshape({-1}).to(torch::kFloat32).contiguous();
  auto f = torch::from_blob(const_cast<float*>(fast), {r.numel()}, torch::kFloat32);
  return (f - r).abs().max().item<double>();
}

// Steps both paths through a full context, restarts as the model does when its window
// slides (a fresh state fed the last tokens), and continues from a LibTorch prefill.
void expect_fast_equals_libtorch(const ModelConfig& c, const std::string& what_base, bool half_weights = false) {
  ASSERT_TRUE(FastDecoder::supports(c)) << FastDecoder::unsupported_reason(c);
  const std::string what = what_base + (half_weights ? " (fp16 weights)" : " (fp32 weights)");
  Gpt model = random_model(c, half_weights);
  c10::InferenceMode inference;
  FastDecoder fast(*model);
  EXPECT_EQ(fast.weight_storage(), half_weights ? "fp16" : "fp32") << what;
  EXPECT_EQ(fast.threads(), 0) << what << ": no step yet";
  torch::manual_seed(3);
  auto idx = torch::randint(0, c.vocab_size, {1, c.context + 9}, torch::kLong);
  auto tok = [&](int64_t t) { return static_cast<int32_t>(idx[0][t].item<int64_t>()); };

  DecodeState state;
  for (int64_t t = 0; t < c.context; ++t) {
    auto ref = model->step(idx.select(1, t), state);
    ASSERT_LT(max_diff(fast.step(tok(t)), ref), kTol) << what << ": position " << t;
  }
  EXPECT_THROW(fast.step(tok(0)), std::logic_error);  // the context is full, as for LibTorch
  // A token this small is not worth waking a second thread for, however quiet the machine.
  EXPECT_EQ(fast.threads(), 1) << what;

  // Past the context: the window slides by 9 and is fed again from a fresh state.
  fast.reset();
  const float* last = nullptr;
  for (int64_t t = 9; t < c.context + 9; ++t) last = fast.step(tok(t));
  auto window_ref = model->forward(idx.narrow(1, 9, c.context)).select(1, -1);
  EXPECT_LT(max_diff(last, window_ref), kTol) << what << ": slid window";

  // Taking over LibTorch's caches after a batched prefill continues exactly.
  for (int64_t prefix : {int64_t{1}, int64_t{7}, c.context - 2}) {
    DecodeState st;
    model->prefill(idx.narrow(1, 0, prefix), st);
    fast.load_state(st);
    ASSERT_EQ(fast.pos(), prefix);
    for (int64_t t = prefix; t < c.context; ++t) {
      auto ref = model->step(idx.select(1, t), st);
      ASSERT_LT(max_diff(fast.step(tok(t)), ref), kTol) << what << ": prefix " << prefix << ", position " << t;
    }
  }
}

class FastDecoderMixers : public ::testing::TestWithParam<std::string> {};

// Every mixer whose registry entry names a fast decoding form.
std::vector<std::string> fast_decoded_mixers() {
  std::vector<std::string> ids;
  for (const MixerInfo& m : all_mixers())
    if (m.fast_decode != FastDecodeForm::kNone) ids.push_back(m.id);
  return ids;
}

}  // namespace

TEST_P(FastDecoderMixers, LogitsEqualLibTorchSteps) {
  const std::string mixer = GetParam();
  const int64_t heads = mixer_info(mixer).multi_head ? 4 : 1;
  // Five layers: shifts 1..16 (the last one past the 24-token context for multihead heads);
  // FFN 28 is not a multiple of 8: the kernels' column tails run.
  std::vector<LayerSpec> layers(5, LayerSpec{mixer, 28, heads});
  expect_fast_equals_libtorch(tiny_config(layers), mixer);
  expect_fast_equals_libtorch(tiny_config(layers), mixer, true);
}

INSTANTIATE_TEST_SUITE_P(Mixers, FastDecoderMixers, ::testing::ValuesIn(fast_decoded_mixers()),
                         [](const auto& info) { return info.param; });

// The decoder's logits held to the model's one forward (GptImpl::forward, whose blocks the
// analyses observe) at every position of a full context, for a stack of every mixer it serves:
// its weights are the modules' own (copy_weights reads ln1, the FFN and each mixer's members).
TEST(FastDecoder, LogitsEqualTheOneForwardAtEveryPosition) {
  const auto mixers = fast_decoded_mixers();
  ASSERT_GE(mixers.size(), 6u);
  // Stacks of four (the 4th layer's HSM shift, 8, stays below the context), each mixer once.
  for (size_t first = 0; first < mixers.size(); first += 4) {
    std::vector<LayerSpec> layers;
    for (size_t i = first; i < std::min(first + 4, mixers.size()); ++i)
      layers.push_back({mixers[i], 28, mixer_info(mixers[i]).multi_head ? 4 : 1});
    const ModelConfig c = tiny_config(layers);
    for (bool half : {false, true}) {
      Gpt model = random_model(c, half);
      c10::InferenceMode inference;
      FastDecoder fast(*model);
      torch::manual_seed(4);
      const auto idx = torch::randint(0, c.vocab_size, {1, c.context}, torch::kLong);
      const auto full = model->forward(idx)[0];  // [T, V]
      for (int64_t t = 0; t < c.context; ++t)
        ASSERT_LT(max_diff(fast.step(static_cast<int32_t>(idx[0][t].item<int64_t>())), full[t]), kTol)
            << mixers[first] << "...: " << (half ? "fp16" : "fp32") << " weights, position " << t;
    }
  }
}

// The registry decides what the decoder serves: every mixer whose entry names a form, none
// other. And none of the mixers it served when it still listed them by id has lost its form
// (decoding would fall back to LibTorch's steps, several times slower, and nothing else fails).
TEST(FastDecoder, ServesExactlyTheMixersWhoseEntryNamesAForm) {
  const std::vector<std::string> served_before = {"attn",      "hsm_ab",     "hsm_ab_vec", "hsm_AB",       "hsm_gate1",
                                                  "hsm_gate2", "hsm_fusion", "hsm_ab_mh",  "hsm_ab_mh_ext"};
  for (const std::string& id : served_before) EXPECT_NE(mixer_info(id).fast_decode, FastDecodeForm::kNone) << id;
  for (const MixerInfo& m : all_mixers()) {
    const int64_t heads = m.multi_head ? 4 : 1;
    const ModelConfig c = tiny_config({{m.id, 16, heads}});
    EXPECT_EQ(FastDecoder::supports(c), m.fast_decode != FastDecodeForm::kNone) << m.id;
    if (m.fast_decode == FastDecodeForm::kNone) {
      EXPECT_NE(FastDecoder::unsupported_reason(c).find(m.id), std::string::npos) << m.id;
      Gpt model = random_model(c, false);
      EXPECT_THROW(FastDecoder decoder(*model), std::invalid_argument) << m.id;
    }
  }
}

TEST(FastDecoder, Hybrids) {
  expect_fast_equals_libtorch(tiny_config({{"hsm_ab", 32, 1},
                                           {"attn", 16, 4},
                                           {"hsm_ab_mh_ext", 32, 4},
                                           {"attn", 16, 2},
                                           {"hsm_AB", 24, 1},
                                           {"hsm_ab_vec", 32, 1}},
                                          40),
                              "hybrid");
  // The paper's hybrid [0, 6] at a small width: HSM at the ends (shifts 1 and 64).
  std::vector<LayerSpec> h06(7, LayerSpec{"attn", 16, 2});
  h06.front() = h06.back() = LayerSpec{"hsm_ab", 32, 1};
  expect_fast_equals_libtorch(tiny_config(h06, 72), "hybrid_0_6", true);
}

// Float rounding units (ulps) of s, elementwise: the gap from |s| to the next float up.
torch::Tensor ulps_of(const torch::Tensor& s) {
  auto a = s.abs();
  return torch::nextafter(a, torch::full_like(a, std::numeric_limits<float>::infinity())) - a;
}

// How far the engine's GELU may be from LibTorch's, from float rounding alone. Both compute
// x·Φ(x) (Φ through erf) in float, each with its own erf (a polynomial here, LibTorch's scalar
// or vector one, which changed between 1.13 and 2.6): Φ to a few ulps of 1, times x, so the
// result differs by a few ulps of max(|x|, 1), not of GELU(x), which is tiny for x << 0.
// Measured: 1 ulp from LibTorch 1.13 (Debian 12), 5 ulps from LibTorch 2.6 (Debian 13, x in
// [1, 2), where 5 ulps are 1.19e-6); the bound is 8. A wrong formula or a wrong tail is
// thousands of ulps off. Reports the largest gap in ulps.
void expect_within_rounding(const torch::Tensor& ours, const torch::Tensor& libtorch, const torch::Tensor& scale,
                            double ulps, const std::string& what) {
  const auto unit = ulps_of(torch::clamp_min(scale.abs(), 1.0));
  const double worst = ((ours - libtorch).abs() / unit).max().item<double>();
  EXPECT_LE(worst, ulps) << what << ": " << worst << " ulps of max(|x|, 1) from LibTorch";
}

TEST(FastDecoder, GeluMatchesLibTorch) {
  auto x = torch::linspace(-12, 12, 20001);
  auto y = x.clone();
  fast::gelu(y.data_ptr<float>(), y.numel());
  expect_within_rounding(y, torch::gelu(x), x, 8, fast::kernel_set());
}

// Each kernel set this CPU has (AVX-512, AVX2, plain loops), the best one restored after.
std::vector<std::string> kernel_sets() {
  std::vector<std::string> sets;
  const std::string best = fast::kernel_set();
  for (const std::string s : {"avx512", "avx2", "generic"})
    if (fast::limit_kernel_set(s) == s) sets.push_back(s);
  fast::limit_kernel_set(best);
  return sets;
}

// HSM_KERNELS caps the kernels for the whole process (CI's "avx2:" run of these suites sets
// it); a name that is no kernel set is refused with a message that names the variable.
TEST(FastKernels, HsmKernelsCapsTheKernelsAndABadNameIsRefused) {
  const char* env = std::getenv("HSM_KERNELS");
  const std::string saved = env ? env : "";
  if (saved == "avx2" || saved == "generic") {
    const std::string best = fast::kernel_set();
    EXPECT_EQ(best, saved);
    EXPECT_EQ(std::string(fast::limit_kernel_set("avx512")), saved) << "a test cannot lift the cap";
    fast::limit_kernel_set(best);
  }
  EXPECT_NO_THROW(fast::check_kernels_env());
  ::setenv("HSM_KERNELS", "avx3", 1);
  try {
    fast::check_kernels_env();
    ADD_FAILURE() << "HSM_KERNELS=avx3 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("HSM_KERNELS='avx3'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("avx2"), std::string::npos) << e.what();
  }
  if (env)
    ::setenv("HSM_KERNELS", saved.c_str(), 1);
  else
    ::unsetenv("HSM_KERNELS");
}

TEST(FastKernels, GeluAndItsGradientMatchLibTorchOnEveryKernelSet) {
  const std::string best = fast::kernel_set();
  for (const std::string& set : kernel_sets()) {
    fast::limit_kernel_set(set);
    auto x = torch::linspace(-12, 12, 200001);  // every vector width and the scalar or masked tail
    auto y = torch::empty_like(x);
    fast::gelu_rows(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    expect_within_rounding(y, torch::gelu(x), x, 8, set);
    auto g = torch::randn_like(x);
    auto dx = torch::empty_like(x);
    fast::gelu_backward(x.data_ptr<float>(), g.data_ptr<float>(), dx.data_ptr<float>(), x.numel());
    auto xr = x.clone().requires_grad_(true);
    torch::gelu(xr).backward(g);
    // g·GELU'(x), GELU'(x) = Φ(x) + x·φ(x): a few ulps of max(|x|, 1) times |g|, from the
    // products and sums of two ways of writing it (5 ulps at most on LibTorch 1.13).
    expect_within_rounding(dx, xr.grad(), x * torch::clamp_min(g.abs(), 1.0), 16, set + " gradient");
  }
  fast::limit_kernel_set(best);
  EXPECT_THROW(fast::limit_kernel_set("sse9"), std::invalid_argument);
}

TEST(FastKernels, CrossEntropyRowsMatchesLibTorch) {
  const std::string best = fast::kernel_set();
  for (const std::string& set : kernel_sets())
  for (int64_t V : {int64_t{5}, int64_t{37}, int64_t{5000}}) {
    fast::limit_kernel_set(set);
    auto x = torch::randn({33, V}) * 4;
    auto t = torch::randint(0, V, {33}, torch::kLong);
    t.narrow(0, 0, 5).copy_(x.narrow(0, 0, 5).argmax(1));  // some right answers
    double loss = 0;
    int64_t correct = 0;
    fast::cross_entropy_rows(x.data_ptr<float>(), t.data_ptr<int64_t>(), 33, V, &loss, &correct);
    const double ref = torch::nn::functional::cross_entropy(
                           x, t, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                           .item<double>();
    EXPECT_NEAR(loss, ref, 1e-4 * std::abs(ref)) << set << " " << V;
    EXPECT_EQ(correct, x.argmax(1).eq(t).sum().item<int64_t>()) << set << " " << V;
  }
  fast::limit_kernel_set(best);
  // Evaluation's loss (no gradients) goes through it and equals the plain cross-entropy.
  auto h = torch::randn({2, 700, 16}), w = torch::randn({37, 16});
  auto y = torch::randint(0, 37, {2, 700}, torch::kLong);
  torch::NoGradGuard no_grad;
  const double plain =
      torch::nn::functional::cross_entropy(torch::matmul(h, w.t()).view({-1, 37}), y.view({-1})).item<double>();
  EXPECT_NEAR(lm_head_loss(h, w, y).item<double>(), plain, 1e-5);
}

TEST(FastKernels, SoftmaxGradRowsEqualLibTorch) {
  const std::string best = fast::kernel_set();
  for (const std::string& set : kernel_sets())
  for (int64_t V : {int64_t{5}, int64_t{37}, int64_t{5000}}) {
    fast::limit_kernel_set(set);
    auto x = torch::randn({19, V}) * 6;
    auto t = torch::randint(0, V, {19}, torch::kLong);
    auto g = x.clone();
    const double loss = fast::softmax_xent_grad_rows(g.data_ptr<float>(), t.data_ptr<int64_t>(), 19, V);
    const double ref = torch::nn::functional::cross_entropy(
                           x, t, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                           .item<double>();
    EXPECT_NEAR(loss, ref, 1e-5 * std::abs(ref)) << set << " " << V;
    // Against the exact (double) softmax: a float sum of 5000 terms, in 8 or 16 lanes as here or
    // in LibTorch's own float softmax, is up to ~2e-6 off; a wrong formula is off by far more.
    auto expected = (torch::softmax(x.to(torch::kFloat64), 1) - torch::one_hot(t, V).to(torch::kFloat64))
                        .to(torch::kFloat32);
    EXPECT_LT((g - expected).abs().max().item<double>(), 4e-6) << set << " " << V;
  }
  fast::limit_kernel_set(best);
}

TEST(FastKernels, BiasGeluRowsEqualLibTorchOnEveryKernelSet) {
  const std::string best = fast::kernel_set();
  for (const std::string& set : kernel_sets()) {
    fast::limit_kernel_set(set);
    auto x = torch::randn({7, 43}) * 3;  // 43: two full AVX2 vectors and a tail, one AVX-512 vector and a tail
    auto b = torch::randn({43});
    auto y = x.clone();
    fast::bias_gelu_rows(y.data_ptr<float>(), b.data_ptr<float>(), 7, 43);
    expect_within_rounding(y, torch::gelu(x + b), x + b, 8, set);
    y = x.clone();
    fast::bias_gelu_rows(y.data_ptr<float>(), nullptr, 7, 43);
    expect_within_rounding(y, torch::gelu(x), x, 8, set);
  }
  fast::limit_kernel_set(best);
}

// Memory that ends (or starts) at an inaccessible page: a kernel that reads or writes one
// float past its buffer (or before it) faults here, where in a training run the same write
// lands on the next heap chunk's header and glibc aborts later, somewhere else ("corrupted
// size vs. prev_size"). Every kernel set, every length across the vector widths and tails.
class GuardedFloats {
 public:
  // n floats (or int64s: `bytes` per value) flush against the guard page after them, or, with
  // `at_start`, starting right after the guard page before them.
  GuardedFloats(int64_t n, bool at_start, size_t bytes = sizeof(float)) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t need = std::max<size_t>(1, static_cast<size_t>(n) * bytes);
    size_ = (need + page - 1) / page * page + 2 * page;
    base_ = static_cast<char*>(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    ::mprotect(base_, page, PROT_NONE);
    ::mprotect(base_ + size_ - page, page, PROT_NONE);
    data_ = at_start ? base_ + page : base_ + size_ - page - static_cast<size_t>(n) * bytes;
  }
  ~GuardedFloats() { ::munmap(base_, size_); }
  GuardedFloats(const GuardedFloats&) = delete;
  GuardedFloats& operator=(const GuardedFloats&) = delete;
  float* f() { return reinterpret_cast<float*>(data_); }
  int64_t* i64() { return reinterpret_cast<int64_t*>(data_); }
  uint16_t* u16() { return reinterpret_cast<uint16_t*>(data_); }

 private:
  char* base_ = nullptr;
  char* data_ = nullptr;
  size_t size_ = 0;
};

TEST(FastKernels, NoKernelTouchesMemoryOutsideItsBuffers) {
  const std::string best = fast::kernel_set();
  for (const std::string& set : kernel_sets()) {
    fast::limit_kernel_set(set);
    for (const bool at_start : {false, true})
      for (int64_t n = 1; n <= 70; ++n) {
        SCOPED_TRACE(set + " n=" + std::to_string(n) + (at_start ? " (guard before)" : " (guard after)"));
        GuardedFloats x(n, at_start), y(n, at_start), g(n, at_start), m(n, at_start), v(n, at_start);
        for (int64_t i = 0; i < n; ++i) {
          x.f()[i] = 0.1f * static_cast<float>(i % 13) - 0.5f;
          g.f()[i] = 0.01f * static_cast<float>(i % 7);
          m.f()[i] = v.f()[i] = 0.0f;
        }
        fast::gelu_rows(x.f(), y.f(), n);
        fast::gelu_backward(x.f(), g.f(), y.f(), n);
        fast::gelu(y.f(), n);
        fast::adamw_update(y.f(), g.f(), m.f(), v.f(), n, 0.99f, 0.9f, 0.999f, 1.0f, 1e-8f, 1e-3f);
        (void)fast::dot(x.f(), g.f(), n);
        fast::axpy(0.5f, x.f(), y.f(), n);
        fast::softmax(y.f(), n);
        fast::layer_norm(x.f(), g.f(), m.f(), y.f(), n, 1e-5f);
        for (const int64_t rows : {int64_t{1}, int64_t{3}}) {
          GuardedFloats logits(rows * n, at_start), bias(n, at_start), targets(rows, at_start, sizeof(int64_t));
          for (int64_t i = 0; i < rows * n; ++i) logits.f()[i] = 0.01f * static_cast<float>(i % 17);
          for (int64_t i = 0; i < n; ++i) bias.f()[i] = 0.1f;
          for (int64_t r = 0; r < rows; ++r) targets.i64()[r] = (r * 5) % n;
          double loss = 0;
          int64_t correct = 0;
          fast::cross_entropy_rows(logits.f(), targets.i64(), rows, n, &loss, &correct);
          (void)fast::softmax_xent_grad_rows(logits.f(), targets.i64(), rows, n);
          fast::bias_gelu_rows(logits.f(), bias.f(), rows, n);
          fast::bias_gelu_rows(logits.f(), nullptr, rows, n);
          EXPECT_TRUE(std::isfinite(loss));
        }
        for (const int64_t out : {int64_t{1}, int64_t{5}}) {
          GuardedFloats W(out * n, at_start), Wh(out * n, at_start, sizeof(uint16_t)), bias(out, at_start),
              r(out, at_start);
          for (int64_t i = 0; i < out * n; ++i) {
            W.f()[i] = 0.01f * static_cast<float>(i % 11);
            Wh.u16()[i] = fast::to_half(W.f()[i]);
          }
          for (int64_t i = 0; i < out; ++i) bias.f()[i] = 0.5f;
          fast::matvec(W.f(), x.f(), bias.f(), r.f(), out, n);
          fast::matvec(W.f(), x.f(), nullptr, r.f(), out, n);
          fast::matvec_f16(Wh.u16(), x.f(), bias.f(), r.f(), out, n);
        }
      }
  }
  fast::limit_kernel_set(best);
}

// The matrix products (kernels/gemm.h) on each backend, with every operand's last element
// against an inaccessible page: a leading dimension or a transposition the wrapper gets wrong
// faults here. The layouts training passes: rows of a matrix, a transposed matrix, a column
// block of a wider one, transposed (lm_head's weight gradient).
TEST(FastKernels, MatrixProductsStayInsideTheirOperands) {
  std::vector<GemmBackend> backends{GemmBackend::kLibTorch};
  if (onednn_available()) backends.push_back(GemmBackend::kOneDnn);
  const GemmBackend saved = gemm_backend();
  // A [rows, cols] operand: contiguous, or the transpose of a contiguous [cols, rows], or
  // columns [1, 1 + cols) of a [rows, cols + 2] matrix; its memory ends at a guard page.
  struct Operand {
    std::unique_ptr<GuardedFloats> memory;
    torch::Tensor t;
  };
  auto make = [](int64_t rows, int64_t cols, int layout, uint64_t seed) {
    Operand o;
    const int64_t wide = layout == 2 ? cols + 2 : cols;
    o.memory = std::make_unique<GuardedFloats>(rows * wide, false);
    for (int64_t i = 0; i < rows * wide; ++i)
      o.memory->f()[i] = static_cast<float>((static_cast<uint64_t>(i) * 2654435761u + seed) % 17) / 8.0f - 1.0f;
    if (layout == 0) o.t = torch::from_blob(o.memory->f(), {rows, cols});
    if (layout == 1) o.t = torch::from_blob(o.memory->f(), {cols, rows}).t();
    if (layout == 2) o.t = torch::from_blob(o.memory->f(), {rows, wide}).narrow(1, 1, cols);
    return o;
  };
  for (const GemmBackend backend : backends) {
    set_gemm_backend(backend);
    // Small sizes (every tail) and a tiny training run's (rows 256, d 32, FFN 64, QKV 96, vocabulary 300).
    for (const int64_t M : {1, 17, 256})
      for (const int64_t N : {1, 33, 300})
        for (const int64_t K : {1, 31, 32, 256})
          for (int la = 0; la < 3; ++la)
            for (int lb = 0; lb < 3; ++lb)
              for (const float beta : {0.0f, 1.0f}) {
                SCOPED_TRACE(gemm_backend_name(backend) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
                             " K=" + std::to_string(K) + " layouts " + std::to_string(la) + std::to_string(lb) +
                             " beta " + std::to_string(beta));
                Operand a = make(M, K, la, 1), b = make(K, N, lb, 2), out = make(M, N, la == 1 ? 2 : 0, 3);
                const torch::Tensor expected = beta * out.t.clone() + torch::mm(a.t.clone(), b.t.clone());
                gemm(out.t, a.t, b.t, beta);
                EXPECT_LT((out.t - expected).abs().max().item<float>(), 1e-4f);
              }
  }
  set_gemm_backend(saved);
}

// Evaluation's in-place FFN (model.cpp, add_forward_to) against the same model's forward with
// gradients on, which takes the plain LibTorch path.
TEST(FastKernels, InferenceForwardEqualsTheGradientPath) {
  torch::manual_seed(5);
  std::vector<LayerSpec> layers{LayerSpec{"hsm_ab", 40, 1}, LayerSpec{"attn", 24, 2}, LayerSpec{"hsm_ab", 40, 1}};
  Gpt model(tiny_config(layers, 30));
  model->eval();
  auto idx = torch::randint(0, model->config.vocab_size, {3, 30}, torch::kLong);
  const auto plain = model->forward(idx).detach();
  c10::InferenceMode inference;
  const auto fused = model->forward(idx);
  EXPECT_LT((fused - plain).abs().max().item<double>(), 1e-5);
}

// train/adamw.cpp's one-pass update against LibTorch's AdamW: a 2-D tensor with weight
// decay, and a vector without (our AdamW never decays vectors).
TEST(FastKernels, AdamWEqualsLibTorchs) {
  const int torch_threads = torch::get_num_threads(), blas = blas_threads();
  // Unsplit, and split over two LibTorch threads (the CPU default, kernels/parallel_gemm.h).
  for (const bool matrix : {true, false}) for (const bool split : {false, true}) {
    torch::set_num_threads(split ? 2 : 1);
    set_blas_threads(1);
    ASSERT_EQ(split_gemms(), split);
    torch::manual_seed(11);
    auto init = matrix ? torch::randn({300, 500}) : torch::randn({777});
    const double wd = matrix ? 0.1 : 0.0;
    auto ours = init.clone().requires_grad_(true), theirs = init.clone().requires_grad_(true);
    AdamW opt({{"w", ours}}, {0.01, 0.9, 0.95, 1e-8, 0.1});
    torch::optim::AdamW ref({theirs}, torch::optim::AdamWOptions(0.01).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd));
    for (int step = 0; step < 4; ++step) {
      auto g = torch::randn(init.sizes());
      opt.zero_grad();
      ref.zero_grad();
      ours.mutable_grad() = g.clone();
      theirs.mutable_grad() = g.clone();
      opt.step(0.01);
      ref.step();
    }
    EXPECT_LT((ours - theirs).abs().max().item<double>(), 1e-6) << (matrix ? "matrix" : "vector") << split;
    EXPECT_GT((ours - init).abs().max().item<double>(), 1e-3);  // it moved
  }
  torch::set_num_threads(torch_threads);
  if (blas > 0) set_blas_threads(blas);
}

TEST(FastDecoder, HalfConversionRoundTrips) {
  // Every half (finite, subnormal, zero, ±inf) survives half -> float -> half; floats round
  // to nearest as LibTorch's conversion does.
  auto all = torch::arange(0, 65536, torch::kInt32).to(torch::kInt16);
  auto as_float = all.view(torch::kHalf).to(torch::kFloat);
  for (int64_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = fast::from_half(h);
    const float ref = as_float[i].item<float>();
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(f)) << i;
      continue;
    }
    ASSERT_EQ(f, ref) << i;
    ASSERT_EQ(fast::to_half(f), h) << i;
  }
  auto x = torch::cat({torch::randn({4096}) * 1000, torch::randn({4096}) * 1e-6});  // normals, subnormals
  auto xh = x.to(torch::kHalf).to(torch::kFloat);
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_EQ(fast::from_half(fast::to_half(x[i].item<float>())), xh[i].item<float>()) << x[i].item<float>();
}

TEST(FastDecoder, RefusesMixersItDoesNotImplement) {
  EXPECT_TRUE(FastDecoder::supports(tiny_config({{"hsm_ab", 16, 1}, {"attn", 16, 2}})));
  const ModelConfig other = tiny_config({{"hsm_ab", 16, 1}, {"some_future_mixer", 16, 1}});
  EXPECT_FALSE(FastDecoder::supports(other));
  EXPECT_NE(FastDecoder::unsupported_reason(other).find("some_future_mixer"), std::string::npos);
  EXPECT_FALSE(FastDecoder::supports(tiny_config({})));
}

TEST(FastDecoder, MatvecMatchesReferenceOnRaggedShapesOnEveryKernelSet) {
  const std::string best = fast::kernel_set();
  for (const std::string& set : kernel_sets())
  // in: below, at and past each kernel's unrolled width (AVX2 8/16, AVX-512 16/32) and masked tails
  for (auto [out, in] : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {9, 17}, {13, 40}, {6, 33}, {7, 70}, {64, 256}}) {
    fast::limit_kernel_set(set);
    auto W = torch::randn({out, in}).to(torch::kHalf).to(torch::kFloat), x = torch::randn({in}),
         b = torch::randn({out});
    std::vector<float> y(static_cast<size_t>(out));
    fast::matvec(W.data_ptr<float>(), x.data_ptr<float>(), b.data_ptr<float>(), y.data(), out, in);
    EXPECT_LT(max_diff(y.data(), torch::mv(W, x) + b), 1e-4) << out << "x" << in << " (" << fast::kernel_set() << ")";
    fast::matvec(W.data_ptr<float>(), x.data_ptr<float>(), nullptr, y.data(), out, in);
    EXPECT_LT(max_diff(y.data(), torch::mv(W, x)), 1e-4) << out << "x" << in;
    // The same matrix as halves (exact: W was rounded to fp16) gives the same products.
    auto Wh = W.to(torch::kHalf).contiguous();
    fast::matvec_f16(reinterpret_cast<const uint16_t*>(Wh.data_ptr<at::Half>()), x.data_ptr<float>(),
                     b.data_ptr<float>(), y.data(), out, in);
    EXPECT_LT(max_diff(y.data(), torch::mv(W, x) + b), 1e-4) << out << "x" << in << " fp16 " << set;
  }
  fast::limit_kernel_set(best);
}

// A model decodes on the fast path by default on the CPU, says so, and samples the same
// text from the same seed as LibTorch's steps, past the context (the window slides twice).
TEST(FastDecoder, ModelSamplesTheSameTextOnBothPaths) {
  for (const std::string name : {"hsm_ab", "hybrid_0_6"}) {
    const std::string dir = std::string(HSM_RESOURCES_PATH) + "/models/" + name;
    if (!std::filesystem::exists(dir + "/model.safetensors")) GTEST_SKIP() << dir << " is missing";
    auto model = Model::load(dir, "cpu");
    GenerateOptions o;
    o.sampling.seed = 17;
    o.sampling.max_new_tokens = 160;
    o.sampling.stop_at_end = false;
    o.sampling.temperature = 1.0;
    const auto fast = Generator(model).run("Once upon a time", o);
    o.fast_path = false;
    const auto slow = Generator(model).run("Once upon a time", o);
    EXPECT_EQ(fast.decoder, "fast");
    EXPECT_EQ(slow.decoder, "libtorch");
    for (const auto* r : {&fast, &slow}) {
      EXPECT_GE(r->decode_threads, 1) << name << " " << r->decoder;
      EXPECT_LE(r->decode_threads, torch::get_num_threads()) << name << " " << r->decoder;
    }
    ASSERT_EQ(fast.tokens.size(), slow.tokens.size()) << name;
    for (size_t i = 0; i < fast.tokens.size(); ++i) {
      ASSERT_EQ(fast.tokens[i].id, slow.tokens[i].id) << name << ": token " << i;
      EXPECT_NEAR(fast.tokens[i].prob, slow.tokens[i].prob, 1e-4) << name << ": token " << i;
    }
    EXPECT_EQ(fast.text, slow.text);
  }
}


// Presentation mode's stories (hsm/sampling.h, end_at_sentence_after): past the minimum length
// a generation stops at the first sentence end, not mid-sentence at max_new_tokens, and what it
// made is the start of the same seed's unstopped text.
TEST(Generator, EndsAtASentenceEndAfterTheMinimumLength) {
  const std::string dir = std::string(HSM_RESOURCES_PATH) + "/models/hsm_ab";
  if (!std::filesystem::exists(dir + "/model.safetensors")) GTEST_SKIP() << dir << " is missing";
  auto model = Model::load(dir, "cpu");
  int sentence_ends = 0;
  for (uint64_t seed : {3, 5, 8}) {
    GenerateOptions o;
    o.sampling.seed = seed;
    o.sampling.max_new_tokens = 300;
    o.sampling.stop_at_end = false;
    const auto whole = Generator(model).run("Once upon a time", o);
    o.sampling.end_at_sentence_after = 20;
    const auto story = Generator(model).run("Once upon a time", o);
    ASSERT_GE(story.tokens.size(), 20u) << "seed " << seed;
    ASSERT_LE(story.tokens.size(), whole.tokens.size());
    EXPECT_EQ(whole.text.substr(0, story.text.size()), story.text) << "seed " << seed;
    if (!story.sentence_end) continue;  // no sentence ended within 300 tokens
    ++sentence_ends;
    EXPECT_LT(story.tokens.size(), whole.tokens.size());
    // It ends on a sentence's punctuation (and closing quotes), and the next token of the
    // unstopped text starts a new word.
    const std::string end = story.text.substr(story.text.find_last_not_of(" \n\"'") );
    EXPECT_NE(std::string(".!?").find(end[0]), std::string::npos) << "seed " << seed << ": ..." << story.text.substr(story.text.size() - 30);
    const std::string next = whole.tokens[story.tokens.size()].text;
    ASSERT_FALSE(next.empty());
    EXPECT_TRUE(next[0] == ' ' || next[0] == '\n') << "seed " << seed << ": next token '" << next << "'";
  }
  EXPECT_GT(sentence_ends, 0) << "none of the stories reached a sentence end";
  GenerateOptions bad;
  bad.sampling.end_at_sentence_after = -1;
  EXPECT_THROW(Generator(model).run("x", bad), std::invalid_argument);
}
