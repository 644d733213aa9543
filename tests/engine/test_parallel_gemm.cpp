// The engine's own split of matrix products over LibTorch's threads (kernels/parallel_gemm.h,
// the CPU default: LibTorch on every core, OpenBLAS on one) gives what the unsplit path gives:
// the linear layers' values and gradients, the output layer's loss and gradients, the blocked
// attention with dropout, evaluation and training steps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/Parallel.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "model/mixers/blocked_attention.h"
#include "model/model.h"
#include "kernels/parallel_gemm.h"
#include "model_test_util.h"
#include "kernels/blas_threads.h"
#include "eval/evaluation.h"
#include "hsm/cpu_threads.h"

namespace hsm {
namespace {

using test::Backend;
using test::gemm_backends;
using test::Threads;

ModelConfig tiny_config(const std::vector<LayerSpec>& layers, double dropout) {
  ModelConfig c;
  c.vocab_size = 37;
  c.d_model = 16;
  c.context = 40;
  c.dropout = dropout;
  c.layers = layers;
  return c;
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(torch::allclose(a, b, tol, tol)) << what << ": max diff " << (a - b).abs().max().item<double>();
}

TEST(ParallelGemm, SplitModeIsTheOneWithSeveralLibTorchThreadsAndOneBlasThread) {
  {
    Threads t(2, 1);
    EXPECT_TRUE(split_gemms());
  }
  {
    Threads t(1, 2);
    EXPECT_FALSE(split_gemms());
  }
}

TEST(ParallelGemm, RowBlocksCoverEveryRowOnceAndRunOnSeveralThreads) {
  for (int threads : {2, 3}) {
    Threads t(threads, 1);
    for (int64_t rows : {1, 17, 31, 32, 100, 4096}) {
      std::vector<int> seen(static_cast<size_t>(rows), 0);
      std::set<int> workers;
      std::mutex mutex;
      int64_t calls = 0;
      for_row_blocks(rows, [&](int64_t a, int64_t b) {
        std::lock_guard<std::mutex> lock(mutex);
        ++calls;
        workers.insert(at::get_thread_num());
        EXPECT_LT(a, b);
        if (rows >= 32) EXPECT_EQ(a % 16, 0) << "blocks start at multiples of 16 rows";
        for (int64_t r = a; r < b; ++r) ++seen[static_cast<size_t>(r)];
      });
      for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)], 1) << rows << " rows, row " << r;
      // Large enough to split: one block per thread. Which thread takes which block is not
      // fixed (a free thread takes the next one), so that they run on distinct threads is
      // checked below, where each block waits for the others.
      if (rows >= 16 * threads) EXPECT_EQ(calls, threads) << rows;
    }
  }
}

TEST(ParallelGemm, RowBlocksRunAtTheSameTimeOnDistinctThreads) {
  for (int threads : {2, 3}) {
    Threads t(threads, 1);
    std::set<int> workers;
    std::mutex mutex;
    std::condition_variable all_started;
    int started = 0;
    for_row_blocks(16 * threads, [&](int64_t, int64_t) {
      std::unique_lock<std::mutex> lock(mutex);
      workers.insert(at::get_thread_num());
      ++started;
      all_started.notify_all();
      // A block's thread cannot take another block while it waits here, so every block needs
      // a thread of its own (a build without OpenMP, or one running the blocks one after another
      // on the caller, times out with one worker).
      all_started.wait_for(lock, std::chrono::seconds(10), [&] { return started == threads; });
    });
    EXPECT_EQ(started, threads);
    EXPECT_EQ(static_cast<int>(workers.size()), threads);
  }
}

TEST(CpuThreads, EveryCoreOnAQuietMachineAndOnlyTheFreeOnesOnABusyOne) {
  EXPECT_EQ(choose_threads(2, 2, 0.0), 2);
  EXPECT_EQ(choose_threads(2, 2, -1.0), 2) << "load unknown: the pool";
  EXPECT_EQ(choose_threads(2, 2, 0.4), 2) << "a passing process is not a busy core";
  EXPECT_EQ(choose_threads(2, 2, 0.6), 1) << "one busy loop beside two cores";
  EXPECT_EQ(choose_threads(2, 2, 1.0), 1);
  EXPECT_EQ(choose_threads(2, 2, 9.0), 1) << "never fewer than one";
  EXPECT_EQ(choose_threads(8, 8, 3.0), 5);
  EXPECT_EQ(choose_threads(4, 8, 1.0), 4) << "never more than the pool";
  EXPECT_EQ(choose_threads(0, 8, 0.0), 1);
  EXPECT_EQ(choose_threads(4, 0, 0.0), 4) << "cores unknown: the pool";
}

TEST(CpuThreads, DecodingSplitsOnlyALargeTokenOnFreeCores) {
  EXPECT_EQ(choose_decode_threads(kDecodeSplitMinWeights - 1, 2, 2, 0.0), 1) << "a small model: one thread";
  EXPECT_EQ(choose_decode_threads(kDecodeSplitMinWeights, 2, 2, 0.0), 2);
  EXPECT_EQ(choose_decode_threads(5'000'000, 2, 2, 1.0), 1) << "another program on a core: one thread";
  EXPECT_EQ(choose_decode_threads(5'000'000, 16, 16, 2.0), 14);
}

// `n` processes of their own, each a busy loop (always runnable), ended with the object.
class BusyProcesses {
 public:
  explicit BusyProcesses(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {  // only async-signal-safe calls after fork in a threaded process
        ::execl("/bin/sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
        ::_exit(127);
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~BusyProcesses() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  int count() const { return static_cast<int>(pids_.size()); }

 private:
  std::vector<pid_t> pids_;
};

// Under real competition (one busy process more than the machine has cores), the count of
// other programs' runnable threads sees them all (other programs may add to it, never take
// away), the averaged watch reaches it, and a large model's decoding takes one thread.
TEST(CpuThreads, LoadWatchSeesRealCompetingProcesses) {
  const int cores = machine_cores();
  BusyProcesses busy(cores + 1);
  ASSERT_EQ(busy.count(), cores + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (others_running_now() < busy.count() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // A sample can miss one of this process's own threads that woke between the two reads of
  // /proc: most samples, not every one, must count every busy process.
  int counted_all = 0, least = 1 << 30;
  for (int i = 0; i < 20; ++i) {
    const int n = others_running_now();
    counted_all += n >= busy.count();
    least = std::min(least, n);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(counted_all, 15) << "the fewest counted: " << least << " of " << busy.count() << " busy processes";
  LoadWatch watch(0);
  double average = 0;
  for (int i = 0; i < 10; ++i) average = watch.others();
  EXPECT_GE(average, busy.count() - 0.5);
  EXPECT_EQ(choose_threads(2, cores, average), 1) << "every core is taken";
  DecodeThreads large(kDecodeSplitMinWeights);
  ASSERT_TRUE(automatic_threads()) << "nothing in this binary names a thread count: the choice is automatic";
  int ones = 0;
  for (int i = 0; i < 10; ++i) {
    ones += large.choose(2) == 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));  // past its 20 ms sampling interval
  }
  EXPECT_GE(ones, 8) << "a large model's decoding split over busy cores";
  DecodeThreads small(1000);
  EXPECT_EQ(small.last(), 0);
  EXPECT_EQ(small.choose(2), 1);
  EXPECT_EQ(small.last(), 1);
}

TEST(ParallelGemm, LinearValuesAndGradientsEqualLibTorch) {
  torch::manual_seed(3);
  auto x0 = torch::randn({3, 37, 24}), w0 = torch::randn({40, 24}), b0 = torch::randn({40});
  auto up = torch::randn({3, 37, 40});
  for (bool with_bias : {true, false}) {
    auto run = [&](bool split) {
      Threads t(split ? 3 : 1, 1);
      EXPECT_EQ(split_gemms(), split);
      auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
      auto y = linear(x, w, with_bias ? b : torch::Tensor());
      (y * up).sum().backward();
      return std::vector<torch::Tensor>{y.detach(), x.grad(), w.grad(), with_bias ? b.grad() : torch::zeros({1})};
    };
    const auto ref = run(false), got = run(true);
    const char* names[] = {"y", "dx", "dw", "db"};
    for (size_t i = 0; i < ref.size(); ++i) expect_close(got[i], ref[i], std::string(names[i]) + (with_bias ? "" : " (no bias)"));
    // Without gradients the same values (the forward alone).
    Threads t(3, 1);
    torch::NoGradGuard no_grad;
    expect_close(linear(x0, w0, with_bias ? b0 : torch::Tensor()), ref[0], "y without gradients");
  }
}

TEST(ParallelGemm, OutputLayerLossAndGradientsEqualUnsplit) {
  torch::manual_seed(4);
  // 2100 rows: more than one of the output layer's 1024-row chunks, split unevenly.
  auto h0 = torch::randn({2100, 16}), w0 = torch::randn({37, 16}) * 0.3;
  auto targets = torch::randint(0, 37, {2100}, torch::kLong);
  auto run = [&](bool split) {
    Threads t(split ? 2 : 1, 1);
    auto h = h0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    auto loss = lm_head_loss(h, w, targets);
    loss.backward();
    torch::NoGradGuard no_grad;
    auto eval_loss = lm_head_loss(h0, w0, targets);
    return std::vector<torch::Tensor>{loss.detach(), h.grad(), w.grad(), eval_loss};
  };
  const auto ref = run(false), got = run(true);
  const auto plain = torch::nn::functional::cross_entropy(torch::mm(h0, w0.t()), targets);
  expect_close(ref[0], plain, "unsplit loss against cross_entropy");
  const char* names[] = {"loss", "dh", "dweight", "loss without gradients"};
  for (size_t i = 0; i < ref.size(); ++i) expect_close(got[i], ref[i], names[i]);
}

TEST(ParallelGemm, BlockedAttentionWithDropoutEqualsUnsplit) {
  auto q0 = torch::randn({4, 10, 50, 8}), k0 = torch::randn({4, 10, 50, 8}), v0 = torch::randn({4, 10, 50, 8});
  auto up = torch::randn({4, 10, 50, 8});
  auto run = [&](bool split) {
    Threads t(split ? 2 : 1, 1);
    torch::manual_seed(5);  // the dropout seed
    auto q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
    auto y = blocked_causal_attention(q, k, v, 0.3, true, {16, 16});
    (y * up).sum().backward();
    return std::vector<torch::Tensor>{y.detach(), q.grad(), k.grad(), v.grad()};
  };
  const auto ref = run(false), got = run(true);
  // BH = 40 rows split in two (32 + 8): the second thread's masks are the rest of the whole
  // mask, so the same weights are dropped.
  const auto no_dropout = blocked_causal_attention(q0, k0, v0, 0.3, false, {16, 16});
  EXPECT_FALSE(torch::allclose(ref[0], no_dropout, 1e-3, 1e-3)) << "dropout was on";
  const char* names[] = {"out", "dq", "dk", "dv"};
  for (size_t i = 0; i < ref.size(); ++i) expect_close(got[i], ref[i], names[i]);
}

TEST(ParallelGemm, TrainingAndEvaluationEqualOneThread) {
  const std::vector<LayerSpec> layers{{"hsm_ab", 48, 1}, {"attn", 32, 2}, {"hsm_ab", 48, 1}};
  torch::manual_seed(6);
  auto batch = torch::randint(0, 37, {12, 41}, torch::kLong);
  auto x = batch.narrow(1, 0, 40), y = batch.narrow(1, 1, 40);
  auto run = [&](bool split) {
    Threads t(split ? 2 : 1, 1);
    torch::manual_seed(7);  // weights and dropout
    Gpt model(tiny_config(layers, 0.1));
    const auto [first, last] = test::train_steps(model, x, y, 4, 3e-3);
    model->eval();
    c10::InferenceMode inference;
    const BatchEval e = evaluate_batch(model, x, y);
    return std::vector<double>{first, last, e.loss_sum, static_cast<double>(e.correct)};
  };
  const auto ref = run(false), got = run(true);
  EXPECT_LT(ref[1], ref[0]) << "the loss falls";
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-4 * std::abs(ref[i]) + 1e-6) << i;
}

}  // namespace
}  // namespace hsm
