// The engine's one entry point for CPU matrix products (kernels/gemm.h): every layout the model
// hands it (plain, transposed views, row and column slices) and both betas give LibTorch's
// product on each backend; a model trains and evaluates alike on both; a bad HSM_GEMM is
// refused with the accepted values.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <limits>

#include "kernels/gemm.h"
#include "model/model.h"
#include "kernels/parallel_gemm.h"
#include "model_test_util.h"
#include "kernels/blas_threads.h"
#include "eval/evaluation.h"

namespace hsm {
namespace {

using test::Backend;
using test::gemm_backends;
using test::Threads;

// a [M, K] as a plain matrix or as the transpose of a [K, M] one, optionally a slice of a wider
// matrix (leading dimension larger than the row).
torch::Tensor operand(int64_t rows, int64_t cols, bool transposed, bool sliced) {
  const int64_t pad = sliced ? 5 : 0;
  if (transposed) return torch::randn({cols, rows + pad}).narrow(1, pad, rows).t();
  return torch::randn({rows, cols + pad}).narrow(1, pad, cols);
}

TEST(Gemm, EveryLayoutAndBetaGivesLibTorchsProductOnEveryBackend) {
  torch::manual_seed(3);
  const std::vector<std::array<int64_t, 3>> shapes = {{37, 53, 29}, {130, 257, 70}, {1, 16, 5000}, {64, 1024, 1}};
  for (const GemmBackend backend : gemm_backends()) {
    Backend scope(backend);
    for (const auto& [M, K, N] : shapes)
      for (const bool ta : {false, true})
        for (const bool tb : {false, true})
          for (const bool sliced : {false, true})
            for (const float beta : {0.0f, 1.0f}) {
              const auto a = operand(M, K, ta, sliced), b = operand(K, N, tb, sliced);
              // out: rows of a wider matrix when sliced (its leading dimension is not N).
              auto storage = torch::randn({M, N + (sliced ? 3 : 0)});
              auto out = storage.narrow(1, sliced ? 3 : 0, N);
              if (beta == 0.0f) out.fill_(std::numeric_limits<float>::quiet_NaN());  // must not leak in
              const auto before = out.clone();
              const auto expected = beta == 0.0f ? torch::mm(a, b) : before + torch::mm(a, b);
              gemm(out, a, b, beta);
              const std::string what = gemm_backend_name(backend) + " " + std::to_string(M) + "x" +
                                       std::to_string(K) + "x" + std::to_string(N) + (ta ? " aT" : "") +
                                       (tb ? " bT" : "") + (sliced ? " sliced" : "") + " beta " +
                                       std::to_string(beta);
              ASSERT_FALSE(out.isnan().any().item<bool>()) << what;
              EXPECT_TRUE(torch::allclose(out, expected, 1e-4, 1e-4))
                  << what << ": max diff " << (out - expected).abs().max().item<double>();
              if (sliced)  // the columns beside the slice are untouched
                EXPECT_TRUE(storage.narrow(1, 0, 3).isfinite().all().item<bool>()) << what;
            }
  }
}

TEST(Gemm, OtherTypesAndStridesGoToLibTorch) {
  torch::manual_seed(4);
  for (const GemmBackend backend : gemm_backends()) {
    Backend scope(backend);
    const auto a = torch::randn({20, 30}, torch::kFloat64), b = torch::randn({30, 10}, torch::kFloat64);
    auto out = torch::empty({20, 10}, torch::kFloat64);
    gemm(out, a, b);
    EXPECT_TRUE(torch::equal(out, torch::mm(a, b)));
    // Neither rows nor columns contiguous: every second row and column of a bigger matrix.
    const auto big = torch::randn({40, 60});
    const auto strided = big.slice(0, 0, 40, 2).slice(1, 0, 60, 2);  // [20, 30], strides (120, 2)
    const auto bf = torch::randn({30, 10});
    auto outf = torch::empty({20, 10});
    gemm(outf, strided, bf);
    EXPECT_TRUE(torch::allclose(outf, torch::mm(strided, bf), 1e-5, 1e-5));
  }
  auto out = torch::empty({3, 3});
  EXPECT_THROW(gemm(out, torch::randn({3, 4}), torch::randn({5, 3})), c10::Error);
}

TEST(Gemm, BackendNamesParseAndABadNameIsRefusedWithTheAcceptedOnes) {
  EXPECT_EQ(parse_gemm_backend("libtorch"), GemmBackend::kLibTorch);
  EXPECT_EQ(parse_gemm_backend("openblas"), GemmBackend::kLibTorch);
  EXPECT_EQ(gemm_backend_name(GemmBackend::kOneDnn), "onednn");
  EXPECT_EQ(gemm_backend_name(GemmBackend::kLibTorch), "libtorch");
  if (onednn_available()) {
    EXPECT_EQ(parse_gemm_backend("onednn"), GemmBackend::kOneDnn);
  } else {
    EXPECT_THROW(parse_gemm_backend("onednn"), std::invalid_argument);
  }
  try {
    parse_gemm_backend("mkl");
    FAIL() << "mkl accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("HSM_GEMM='mkl'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("onednn or libtorch"), std::string::npos) << e.what();
  }
  // The note names the backend in use.
  Backend scope(GemmBackend::kLibTorch);
  EXPECT_NE(gemm_backend_note().find("LibTorch's mm"), std::string::npos) << gemm_backend_note();
}

// Every product of a training step and of evaluation goes through gemm(): the same tiny model
// trained four steps and evaluated on each backend ends within rounding of the other, on one
// thread and split over two.
TEST(Gemm, AModelTrainsAndEvaluatesAlikeOnEveryBackend) {
  if (!onednn_available()) GTEST_SKIP() << "built without oneDNN: one backend only";
  ModelConfig c;
  c.vocab_size = 37;
  c.d_model = 16;
  c.context = 40;
  c.dropout = 0.1;
  c.layers = {{"hsm_ab", 48, 1}, {"attn", 32, 2}, {"hsm_ab", 48, 1}};
  torch::manual_seed(6);
  const auto batch = torch::randint(0, c.vocab_size, {12, c.context + 1}, torch::kLong);
  const auto x = batch.narrow(1, 0, c.context), y = batch.narrow(1, 1, c.context);
  auto run = [&](GemmBackend backend, int threads) {
    Backend scope(backend);
    const int torch_threads = torch::get_num_threads(), blas = blas_threads();
    torch::set_num_threads(threads);
    set_blas_threads(1);
    torch::manual_seed(7);  // weights and dropout
    Gpt model(c);
    const auto [first, last] = test::train_steps(model, x, y, 4, 3e-3);
    model->eval();
    BatchEval e;
    {
      c10::InferenceMode inference;
      e = evaluate_batch(model, x, y);
    }
    torch::set_num_threads(torch_threads);
    if (blas > 0) set_blas_threads(blas);
    return std::vector<double>{first, last, e.loss_sum, static_cast<double>(e.correct)};
  };
  for (const int threads : {1, 2}) {
    const auto ref = run(GemmBackend::kLibTorch, threads), got = run(GemmBackend::kOneDnn, threads);
    EXPECT_LT(ref[1], ref[0]) << "the loss falls";
    for (size_t i = 0; i < ref.size(); ++i)
      EXPECT_NEAR(got[i], ref[i], 1e-4 * std::abs(ref[i]) + 1e-6) << threads << " thread(s), value " << i;
  }
}

}  // namespace
}  // namespace hsm
