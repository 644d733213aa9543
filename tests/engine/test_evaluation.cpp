// Evaluation's sums do not depend on the threads, by construction (eval/evaluation.h): a
// batch is cut into slices of a fixed number of windows, each computed alone by one thread,
// and the sums are added in slice order. A product over another number of rows may round
// differently, so before this any change of thread count could move the loss in its last
// bits on some CPUs (AMD Zen 3 and Zen 5, with either matrix-product backend).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

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

// Large enough that the products take the BLAS libraries' blocked kernels, with ragged edges
// (vocabulary and FFN widths that are not multiples of any vector width).
Gpt eval_model() {
  ModelConfig c;
  c.vocab_size = 301;
  c.d_model = 64;
  c.context = 64;
  c.dropout = 0.0;
  c.layers = {LayerSpec{"hsm_ab", 200, 1}, LayerSpec{"attn", 136, 4}, LayerSpec{"hsm_ab_vec", 72, 1}};
  torch::manual_seed(9);
  Gpt model(c);
  model->eval();
  return model;
}

TEST(Evaluation, SlicesHaveAFixedSizeWhateverTheCores) {
  EXPECT_EQ(eval_slice_windows(128), kEvalSliceTokens / 128);
  EXPECT_EQ(eval_slice_windows(64), kEvalSliceTokens / 64);
  EXPECT_EQ(eval_slice_windows(kEvalSliceTokens * 4), 1);
}

// One, two and three LibTorch threads, OpenBLAS on one or two, the pool or threads of its own,
// on each backend: every sum is bit-identical to one thread's. A SerialScope removed from the
// slices (or a slice size taken from the cores) fails this on AMD Zen 3; a SerialScope whose one
// thread LibTorch's first call in a new thread undoes fails it against LibTorch 2.6 (oneDNN
// backend, LibTorch on 2-3 threads, evaluate_batch on threads of its own).
TEST(Evaluation, ThreadsGiveTheSameLossAsOneThread) {
  Gpt model = eval_model();
  c10::InferenceMode inference;
  auto batch = torch::randint(0, model->config.vocab_size, {70, 65}, torch::kLong);  // 3 slices, the last ragged
  auto x = batch.narrow(1, 0, 64), y = batch.narrow(1, 1, 64);
  for (const GemmBackend backend : gemm_backends()) {
    const Backend use(backend);
    const std::string name = gemm_backend_name(backend);
    BatchEval one;
    {
      const Threads t(1, 1);
      one = evaluate_batch(model, x, y, 1);
    }
    for (int torch_threads : {1, 2, 3})
      for (int blas : {1, 2})
        for (int threads : {0, 1, 2, 3}) {
          const Threads t(torch_threads, blas);
          const BatchEval many = evaluate_batch(model, x, y, threads);
          const std::string what = name + ": LibTorch " + std::to_string(torch_threads) + ", OpenBLAS " +
                                   std::to_string(blas) + ", evaluate_batch threads " + std::to_string(threads);
          EXPECT_EQ(many.loss_sum, one.loss_sum) << what << ": off by " << many.loss_sum - one.loss_sum;
          EXPECT_EQ(many.correct, one.correct) << what;
          EXPECT_EQ(blas_threads() == 0 ? 0 : blas, blas_threads()) << "OpenBLAS's count is restored: " << what;
        }
    // And the sums are the cross-entropy of the model's logits.
    const auto logits = model->forward(x).view({-1, model->config.vocab_size});
    const double plain =
        torch::nn::functional::cross_entropy(logits, y.reshape({-1}),
                                             torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    EXPECT_NEAR(one.loss_sum, plain, 1e-5 * plain) << name;
    EXPECT_EQ(one.correct, logits.argmax(1).eq(y.reshape({-1})).sum().item<int64_t>()) << name;
  }
}

// The loss through Gpt::loss without gradients (lm_head_loss_sums, shared with evaluation)
// inside a SerialScope is the same on any thread.
TEST(Evaluation, ASerialScopeComputesTheSameOnEveryThread) {
  Gpt model = eval_model();
  c10::InferenceMode inference;
  auto batch = torch::randint(0, model->config.vocab_size, {24, 65}, torch::kLong);
  auto x = batch.narrow(1, 0, 64), y = batch.narrow(1, 1, 64);
  const Threads t(2, 1);
  auto serial_loss = [&] {
    const SerialScope serial;
    EXPECT_TRUE(in_serial_scope());
    EXPECT_EQ(at::get_num_threads(), 1) << "OpenMP regions opened here get one thread";
    return model->loss(x, y).item<double>();
  };
  const double here = serial_loss();
  EXPECT_FALSE(in_serial_scope());
  EXPECT_EQ(at::get_num_threads(), 2) << "restored";
  double there = 0;
  std::thread other([&] {
    c10::InferenceMode inference_there;
    there = serial_loss();
  });
  other.join();
  EXPECT_EQ(here, there);
}

}  // namespace
}  // namespace hsm
