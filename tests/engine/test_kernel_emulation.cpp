// The fused CUDA kernels' own source (engine/src/kernels/cuda/fused_kernels.cuh) run on the CPU
// through simt_emulation.h, against LibTorch, on every machine. On a GPU machine the same kernels
// are checked again on the device (Cuda.Fused*, and the first-use check of model/cuda_fused.cpp);
// here, every CI run, each index of each kernel is: every width variant, grids of one block (each
// warp several rows), of one row per warp and of idle warps, widths that are not a multiple of 32.
//
// Every buffer sits between guards of NaN: a kernel that reads outside its tensor takes NaN into
// its result, one that writes outside changes a guard, and outputs start as NaN, so an element the
// kernel never writes fails the comparison too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "simt_emulation.h"
// after the emulation, as fused_kernels.cu includes it after the CUDA headers
#include "kernels/cuda/fused_kernels.cuh"
#include "model/dropout.h"
#include "model/mixers/mixer.h"

namespace {

using namespace hsm::cuda_kernels;

constexpr int64_t kGuard = 64;
constexpr uint32_t kGuardF32 = 0x7fa5a5a5U;  // a NaN with a payload of its own
constexpr uint16_t kGuardBf16 = 0x7fa5U;

// A copy of a CPU tensor (fp32 or bf16) between NaN guards, and back.
class Guarded {
 public:
  explicit Guarded(const torch::Tensor& t) : shape_(t.sizes().vec()), dtype_(t.scalar_type()) {
    const auto c = t.contiguous();
    n_ = c.numel();
    elem_ = c.element_size();
    bytes_.resize(static_cast<size_t>((n_ + 2 * kGuard) * elem_));
    for (int64_t i = 0; i < n_ + 2 * kGuard; ++i) set_guard(i);
    std::memcpy(bytes_.data() + kGuard * elem_, c.data_ptr(), static_cast<size_t>(n_ * elem_));
  }
  // A buffer of NaN: what a kernel leaves unwritten stays NaN.
  static Guarded nan(at::IntArrayRef sizes, torch::Dtype dtype) {
    return Guarded(torch::full(sizes, std::numeric_limits<float>::quiet_NaN(), torch::dtype(dtype)));
  }
  float* f32() { return reinterpret_cast<float*>(bytes_.data() + kGuard * elem_); }
  __nv_bfloat16* bf16() { return reinterpret_cast<__nv_bfloat16*>(bytes_.data() + kGuard * elem_); }
  void* data() { return bytes_.data() + kGuard * elem_; }
  // The values as fp32 (bf16 widened exactly).
  torch::Tensor tensor() const {
    auto t = torch::empty(shape_, torch::dtype(dtype_));
    std::memcpy(t.data_ptr(), bytes_.data() + kGuard * elem_, static_cast<size_t>(n_ * elem_));
    return t.to(torch::kFloat32);
  }
  bool guards_intact() const {
    for (int64_t i = 0; i < kGuard; ++i)
      if (!is_guard(i) || !is_guard(n_ + kGuard + i)) return false;
    return true;
  }

 private:
  void set_guard(int64_t i) {
    if (elem_ == 4) std::memcpy(bytes_.data() + i * 4, &kGuardF32, 4);
    else std::memcpy(bytes_.data() + i * 2, &kGuardBf16, 2);
  }
  bool is_guard(int64_t i) const {
    return elem_ == 4 ? std::memcmp(bytes_.data() + i * 4, &kGuardF32, 4) == 0
                      : std::memcmp(bytes_.data() + i * 2, &kGuardBf16, 2) == 0;
  }
  std::vector<int64_t> shape_;
  torch::Dtype dtype_;
  int64_t n_ = 0, elem_ = 4;
  std::vector<uint8_t> bytes_;
};

// max |a − b| ≤ atol + rtol · max |b|, NaN anywhere failing.
::testing::AssertionResult close(const torch::Tensor& a, const torch::Tensor& b, double atol, double rtol) {
  const auto A = a.to(torch::kFloat64), B = b.to(torch::kFloat64);
  if (A.sizes() != B.sizes()) return ::testing::AssertionFailure() << "shapes " << A.sizes() << " and " << B.sizes();
  if (!torch::isfinite(A).all().item<bool>()) return ::testing::AssertionFailure() << "a value is not finite (a NaN guard read, or never written)";
  const double diff = (A - B).abs().max().item<double>(), bound = atol + rtol * B.abs().max().item<double>();
  if (diff <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "off by " << diff << " (allowed " << bound << ")";
}

// The host's width variant (values per lane) for a row of d: fused_kernels.cu's by_width.
template <class F>
void by_width(int64_t d, const F& f) {
  if (d <= 256) f(std::integral_constant<int, 8>{});
  else if (d <= 512) f(std::integral_constant<int, 16>{});
  else f(std::integral_constant<int, 32>{});
}

torch::Tensor bf16_round(const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kFloat32); }

TEST(KernelEmulation, LayerNormMatchesLibTorchInEveryWidthVariantAndGrid) {
  torch::manual_seed(1);
  const int64_t rows = 29;
  for (const int64_t d : {3, 33, 256, 257, 700, 1024}) {  // d 1: LibTorch's own rounding × 1/√eps
    for (const unsigned blocks : {1U, 4U, 6U}) {  // 8 warps for 29 rows; one row a warp; idle warps
      SCOPED_TRACE("d " + std::to_string(d) + ", " + std::to_string(blocks) + " blocks");
      const auto x = torch::randn({rows, d}) * 3 + 1, w = torch::randn({d}), b = torch::randn({d});
      const auto g = torch::randn({rows, d});
      Guarded gx(x), gw(w), gb(b), gg(g);
      auto y = Guarded::nan({rows, d}, torch::kFloat32), mean = Guarded::nan({rows}, torch::kFloat32),
           rstd = Guarded::nan({rows}, torch::kFloat32), dx = Guarded::nan({rows, d}, torch::kFloat32);
      const int64_t parts = blocks * kWarpsPerBlock;
      auto dw = Guarded::nan({parts, d}, torch::kFloat32), db = Guarded::nan({parts, d}, torch::kFloat32);
      by_width(d, [&](auto per_lane) {
        constexpr int K = decltype(per_lane)::value;
        simt::launch(blocks, kThreads, [&] {
          layer_norm_forward_kernel<K>(gx.f32(), gw.f32(), gb.f32(), y.f32(), mean.f32(), rstd.f32(), rows,
                                       static_cast<int>(d), 1e-5f);
        });
        simt::launch(blocks, kThreads, [&] {
          layer_norm_backward_kernel<K>(gg.f32(), gx.f32(), mean.f32(), rstd.f32(), gw.f32(), dx.f32(), dw.f32(),
                                        db.f32(), rows, static_cast<int>(d));
        });
      });
      const auto xl = x.clone().requires_grad_(true), wl = w.clone().requires_grad_(true),
                 bl = b.clone().requires_grad_(true);
      const auto ref = torch::layer_norm(xl, {d}, wl, bl, 1e-5);
      (ref * g).sum().backward();
      EXPECT_TRUE(close(y.tensor(), ref.detach(), 1e-5, 1e-5));
      EXPECT_TRUE(close(mean.tensor(), x.mean(1), 1e-5, 1e-5));
      EXPECT_TRUE(close(dx.tensor(), xl.grad(), 1e-4, 1e-4));
      EXPECT_TRUE(close(dw.tensor().sum(0), wl.grad(), 1e-4, 1e-4));
      EXPECT_TRUE(close(db.tensor().sum(0), bl.grad(), 1e-4, 1e-4));
      for (Guarded* buf : {&gx, &gw, &gb, &gg, &y, &mean, &rstd, &dx, &dw, &db}) EXPECT_TRUE(buf->guards_intact());
    }
  }
}

TEST(KernelEmulation, ShiftMixMatchesTheMixersFormulaInsideAndBeyondTheContext) {
  torch::manual_seed(2);
  const int64_t B = 2, T = 13, rows = B * T;
  for (const int64_t d : {5, 100, 300, 700}) {
    for (const bool vector : {false, true}) {
      for (const int64_t s : {1, 4, 13, 20}) {  // s ≥ T: nothing reaches back
        for (const unsigned blocks : {1U, 4U}) {
          SCOPED_TRACE("d " + std::to_string(d) + (vector ? " vector" : " scalar") + ", s " + std::to_string(s) +
                       ", " + std::to_string(blocks) + " blocks");
          const auto x = torch::randn({B, T, d}), g = torch::randn({B, T, d});
          const auto a = vector ? torch::randn({d}) : torch::randn({1}), b = vector ? torch::randn({d}) : torch::randn({1});
          Guarded gx(x), ga(a), gb(b), gg(g);
          const int64_t parts = blocks * kWarpsPerBlock;
          auto y = Guarded::nan({B, T, d}, torch::kFloat32), dx = Guarded::nan({B, T, d}, torch::kFloat32);
          auto da = Guarded::nan({parts, d}, torch::kFloat32), db = Guarded::nan({parts, d}, torch::kFloat32);
          simt::launch(blocks, kThreads, [&] {
            shift_mix_forward_kernel(gx.f32(), ga.f32(), gb.f32(), vector, y.f32(), rows, T, d, s);
          });
          by_width(d, [&](auto per_lane) {
            simt::launch(blocks, kThreads, [&] {
              shift_mix_backward_kernel<decltype(per_lane)::value>(gg.f32(), gx.f32(), ga.f32(), gb.f32(), vector,
                                                                   dx.f32(), da.f32(), db.f32(), rows, T,
                                                                   static_cast<int>(d), s);
            });
          });
          const auto xl = x.clone().requires_grad_(true), al = a.clone().requires_grad_(true),
                     bl = b.clone().requires_grad_(true);
          const auto ref = al * xl + bl * hsm::shift_right(xl, s);
          (ref * g).sum().backward();
          EXPECT_TRUE(close(y.tensor(), ref.detach(), 1e-5, 1e-5));
          EXPECT_TRUE(close(dx.tensor(), xl.grad(), 1e-5, 1e-5));
          const auto da_sum = vector ? da.tensor().sum(0) : da.tensor().sum().reshape({1});
          const auto db_sum = vector ? db.tensor().sum(0) : db.tensor().sum().reshape({1});
          EXPECT_TRUE(close(da_sum, al.grad(), 1e-4, 1e-4));
          EXPECT_TRUE(close(db_sum, bl.grad(), 1e-4, 1e-4));
          for (Guarded* buf : {&gx, &ga, &gb, &gg, &y, &dx, &da, &db}) EXPECT_TRUE(buf->guards_intact());
        }
      }
    }
  }
}

TEST(KernelEmulation, DropoutDrawsTheCpusMaskAndItsGradient) {
  torch::manual_seed(3);
  const int64_t n = 2001;
  const double p = 0.1;
  const int64_t seed = 0x5eed1234abcdLL;
  const auto mask = hsm::dropout_mask({n}, p, static_cast<uint64_t>(seed));  // 1/(1-p) or 0
  ASSERT_GT((mask == 0).sum().item<int64_t>(), 100);
  std::vector<int64_t> seed_dev{seed};
  for (const auto y_type : {torch::kFloat32, torch::kBFloat16}) {
    for (const bool residual : {false, true}) {
      for (const unsigned blocks : {1U, 3U}) {
        SCOPED_TRACE(std::string(y_type == torch::kBFloat16 ? "bf16" : "fp32") + (residual ? " h + y" : " y") + ", " +
                     std::to_string(blocks) + " blocks");
        const auto y = torch::randn({n}).to(y_type), h = torch::randn({n}), g = torch::randn({n});
        const auto out_type = residual ? torch::kFloat32 : y_type;
        Guarded gy(y), gh(h), gg(g.to(y_type));
        auto out = Guarded::nan({n}, out_type), dy = Guarded::nan({n}, y_type);
        const bool y_bf16 = y_type == torch::kBFloat16, out_bf16 = out_type == torch::kBFloat16;
        const uint32_t threshold = hsm::dropout_hash::threshold(p);
        const float scale = hsm::dropout_hash::scale(p);
        simt::launch(blocks, kThreads, [&] {
          dropout_forward_kernel(residual ? gh.f32() : nullptr, gy.data(), y_bf16, out.data(), out_bf16,
                                 seed_dev.data(), threshold, scale, n);
        });
        simt::launch(blocks, kThreads, [&] {
          dropout_backward_kernel(gg.data(), y_bf16, dy.data(), y_bf16, seed_dev.data(), threshold, scale, n);
        });
        const auto y32 = y.to(torch::kFloat32);
        auto expected = residual ? h + y32 * mask : y32 * mask;
        if (out_bf16) expected = bf16_round(expected);
        EXPECT_TRUE(close(out.tensor(), expected, 1e-6, 1e-6));
        auto expected_dy = g.to(y_type).to(torch::kFloat32) * mask;
        if (y_bf16) expected_dy = bf16_round(expected_dy);
        EXPECT_TRUE(close(dy.tensor(), expected_dy, 1e-6, 1e-6));
        for (Guarded* buf : {&gy, &gh, &gg, &out, &dy}) EXPECT_TRUE(buf->guards_intact());
      }
    }
  }
}

TEST(KernelEmulation, SoftmaxCrossEntropyInPlaceGivesTheLossAndItsGradient) {
  torch::manual_seed(4);
  // V beyond 2,048 (256 threads × 8 values at a time): a thread's running maximum grows from one
  // pass to the next and its sum is rescaled; the last row rises along the row, so it grows every pass.
  for (const int64_t V : {7, 256, 1000, 2049, 5000}) {
    SCOPED_TRACE("V " + std::to_string(V));
    const int64_t rows = 5;
    auto logits = torch::randn({rows, V}) * 4;
    logits[rows - 1] = torch::linspace(-12, 12, V);
    logits = bf16_round(logits);
    const std::vector<int64_t> targets{0, V - 1, 3 % V, -1, V / 2};  // both ends, one outside [0, V)
    Guarded buf(logits.to(torch::kBFloat16));
    auto row_loss = Guarded::nan({rows}, torch::kFloat32);
    std::vector<int64_t> t = targets;
    simt::launch(static_cast<unsigned>(rows), kThreads, [&] { softmax_xent_kernel(buf.bf16(), t.data(), row_loss.f32(), V); });
    const auto logp = torch::log_softmax(logits.to(torch::kFloat64), 1);
    const auto soft = logp.exp();
    const auto loss = row_loss.tensor(), grad = buf.tensor();
    for (int64_t r = 0; r < rows; ++r) {
      auto want = soft[r].clone();
      if (targets[r] >= 0) {
        want[targets[r]] -= 1.0;
        EXPECT_NEAR(loss[r].item<double>(), -logp[r][targets[r]].item<double>(), 1e-4) << "row " << r;
      } else {
        EXPECT_TRUE(std::isnan(loss[r].item<float>())) << "a target outside the vocabulary gives NaN, not a loss";
      }
      EXPECT_TRUE(close(grad[r], want, 1e-6, 1.0 / 128)) << "row " << r;  // bf16: 8 bits
    }
    EXPECT_TRUE(buf.guards_intact());
    EXPECT_TRUE(row_loss.guards_intact());
  }
}

TEST(KernelEmulation, BiasGeluAndItsBackwardMatchTorchGeluWithTheBiasGradient) {
  torch::manual_seed(5);
  const int64_t rows = 37;
  for (const int64_t f : {1, 100, 256, 300, 1024}) {
    // blocks of rows: each takes every (down)th chunk of kColumnRows rows (37 rows: 5 chunks, the last
    // of 5 rows); 2: chunks interleaved; 37: blocks with no row (their partial sums 0)
    for (const unsigned down : {1U, 2U, 5U, 37U}) {
      SCOPED_TRACE("f " + std::to_string(f) + ", " + std::to_string(down) + " blocks down");
      const auto u = bf16_round(torch::randn({rows, f}) * 2), bias = torch::randn({f});
      const auto g = bf16_round(torch::randn({rows, f}));
      Guarded gu(u.to(torch::kBFloat16)), gb(bias), gg(g.to(torch::kBFloat16));
      auto a = Guarded::nan({rows, f}, torch::kBFloat16), du = Guarded::nan({rows, f}, torch::kBFloat16);
      auto db = Guarded::nan({down, f}, torch::kFloat32);
      const dim3 grid(static_cast<unsigned>((f + kThreads - 1) / kThreads), down);
      simt::launch(grid, kThreads, [&] { bias_gelu_forward_kernel(gu.bf16(), gb.f32(), a.bf16(), rows, f); });
      simt::launch(grid, kThreads, [&] {
        bias_gelu_backward_kernel(gg.bf16(), gu.bf16(), gb.f32(), du.bf16(), db.f32(), rows, f);
      });
      const auto v = (u.to(torch::kFloat64) + bias.to(torch::kFloat64)).requires_grad_(true);
      const auto ref = torch::gelu(v);  // the erf form
      (ref * g.to(torch::kFloat64)).sum().backward();
      EXPECT_TRUE(close(a.tensor(), ref.detach(), 1e-6, 1.0 / 128));
      EXPECT_TRUE(close(du.tensor(), v.grad(), 1e-6, 1.0 / 128));
      EXPECT_TRUE(close(db.tensor().sum(0), v.grad().sum(0), 1e-4, 1e-4));  // fp32 before rounding
      for (Guarded* buf : {&gu, &gb, &gg, &a, &du, &db}) EXPECT_TRUE(buf->guards_intact());
    }
  }
}

TEST(KernelEmulation, AddNormIsTheResidualDropoutThenLayerNormBothWays) {
  torch::manual_seed(6);
  const int64_t rows = 21;
  const int64_t seed = 0x0badc0ffee12LL;
  std::vector<int64_t> seed_dev{seed};
  for (const int64_t d : {7, 256, 300, 1000}) {
    for (const double p : {0.0, 0.3}) {
      for (const auto y_type : {torch::kFloat32, torch::kBFloat16}) {
        // x's type and which gradients come back: both; with fp32 dropout also only x's (h unused
        // further), only h's; with bf16 y also x in bf16 (for the FFN's product under autocast, as
        // the model has it; its gradient then comes back in bf16 too)
        struct Variant {
          torch::Dtype x_type;
          int grads;
        };
        std::vector<Variant> variants{{torch::kFloat32, 3}};
        if (p > 0 && y_type == torch::kFloat32) variants = {{torch::kFloat32, 3}, {torch::kFloat32, 2}, {torch::kFloat32, 1}};
        if (y_type == torch::kBFloat16) variants.push_back({torch::kBFloat16, 3});
        for (const auto& [x_type, grads] : variants) {
          const unsigned blocks = d == 256 ? 1U : 3U;  // one block: 8 warps take the 21 rows in turn
          const bool x_bf16 = x_type == torch::kBFloat16;
          SCOPED_TRACE("d " + std::to_string(d) + ", p " + std::to_string(p) +
                       (y_type == torch::kBFloat16 ? ", bf16 y" : ", fp32 y") + (x_bf16 ? ", bf16 x" : ", fp32 x") +
                       ", gradients " + std::to_string(grads));
          const auto mask = p > 0 ? hsm::dropout_mask({rows, d}, p, static_cast<uint64_t>(seed)) : torch::ones({rows, d});
          const auto h_in = torch::randn({rows, d}), y = torch::randn({rows, d}).to(y_type);
          const auto w = torch::randn({d}), b = torch::randn({d});
          auto gh = torch::randn({rows, d}), gx = torch::randn({rows, d});
          if (x_bf16) gx = bf16_round(gx);  // x's gradient comes in x's type
          const bool with_gh = grads & 1, with_gx = grads & 2;
          Guarded g_h_in(h_in), g_y(y), g_w(w), g_b(b), g_gh(gh), g_gx(gx.to(x_type));
          auto h = Guarded::nan({rows, d}, torch::kFloat32), x = Guarded::nan({rows, d}, x_type);
          auto mean = Guarded::nan({rows}, torch::kFloat32), rstd = Guarded::nan({rows}, torch::kFloat32);
          auto dh_in = Guarded::nan({rows, d}, torch::kFloat32), dy = Guarded::nan({rows, d}, y_type);
          const int64_t parts = blocks * kWarpsPerBlock;
          auto dw = Guarded::nan({parts, d}, torch::kFloat32), db = Guarded::nan({parts, d}, torch::kFloat32);
          const bool y_bf16 = y_type == torch::kBFloat16;
          const uint32_t threshold = hsm::dropout_hash::threshold(p);
          const float scale = hsm::dropout_hash::scale(p);
          by_width(d, [&](auto per_lane) {
            constexpr int K = decltype(per_lane)::value;
            simt::launch(blocks, kThreads, [&] {
              add_norm_forward_kernel<K>(g_h_in.f32(), g_y.data(), y_bf16, seed_dev.data(), threshold, scale, g_w.f32(),
                                         g_b.f32(), h.f32(), x.data(), x_bf16, mean.f32(), rstd.f32(), rows,
                                         static_cast<int>(d), 1e-5f);
            });
            simt::launch(blocks, kThreads, [&] {
              add_norm_backward_kernel<K>(with_gx ? g_gx.data() : nullptr, x_bf16, with_gh ? g_gh.f32() : nullptr,
                                          h.f32(), mean.f32(), rstd.f32(), g_w.f32(), seed_dev.data(), threshold,
                                          scale, dh_in.f32(), dy.data(), y_bf16, dw.f32(), db.f32(), rows,
                                          static_cast<int>(d));
            });
          });
          const auto hl = h_in.clone().requires_grad_(true), yl = y.to(torch::kFloat32).requires_grad_(true);
          const auto wl = w.clone().requires_grad_(true), bl = b.clone().requires_grad_(true);
          const auto h_ref = hl + yl * mask;
          const auto x_ref = torch::layer_norm(h_ref, {d}, wl, bl, 1e-5);
          ((with_gh ? (h_ref * gh).sum() : torch::zeros({})) + (with_gx ? (x_ref * gx).sum() : torch::zeros({})))
              .backward();
          EXPECT_TRUE(close(h.tensor(), h_ref.detach(), 1e-6, 1e-6));
          // bf16 x: the fp32 value rounded to nearest even; the two fp32 values (1e-5 apart) may
          // straddle a rounding boundary, one bf16 step (1/128 relative at most)
          if (x_bf16)
            EXPECT_TRUE(close(x.tensor(), bf16_round(x_ref.detach()), 1e-5, 1.0 / 128));
          else
            EXPECT_TRUE(close(x.tensor(), x_ref.detach(), 1e-5, 1e-5));
          if (x_bf16) {  // most values exactly the rounding of LibTorch's
            const auto same = (x.tensor() == bf16_round(x_ref.detach())).to(torch::kFloat64).mean().item<double>();
            EXPECT_GT(same, 0.95);
          }
          EXPECT_TRUE(close(dh_in.tensor(), hl.grad(), 1e-4, 1e-4));
          auto want_dy = yl.grad();
          if (y_bf16) want_dy = bf16_round(want_dy);
          EXPECT_TRUE(close(dy.tensor(), want_dy, 1e-4, y_bf16 ? 1.0 / 128 : 1e-4));
          if (with_gx) {
            EXPECT_TRUE(close(dw.tensor().sum(0), wl.grad(), 1e-4, 1e-4));
            EXPECT_TRUE(close(db.tensor().sum(0), bl.grad(), 1e-4, 1e-4));
          } else {
            EXPECT_TRUE(close(dw.tensor().abs().sum(0), torch::zeros({d}), 0, 0)) << "no x gradient: no LN weight gradient";
          }
          for (Guarded* buf : {&g_h_in, &g_y, &g_w, &g_b, &g_gh, &g_gx, &h, &x, &mean, &rstd, &dh_in, &dy, &dw, &db})
            EXPECT_TRUE(buf->guards_intact());
        }
      }
    }
  }
}

// The emulation itself: a shuffle reads the partner lane's value, and a kernel whose warps each
// take several rows gets them all (the property every row kernel above relies on).
TEST(KernelEmulation, ShufflesExchangeWithThePartnerLane) {
  std::vector<float> out(64, -1.0f);
  simt::launch(1, 64, [&] {
    const unsigned t = threadIdx.x;
    out[t] = __shfl_xor_sync(0xffffffffU, static_cast<float>(t), 5);
  });
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(out[t], static_cast<float>(t ^ 5U)) << "thread " << t;
}

}  // namespace
