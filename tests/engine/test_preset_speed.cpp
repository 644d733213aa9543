// A guard against speed cliffs (issue 26): every bundled preset, at its real size, trains a
// short step at an arithmetic rate (6 × the MACs `hsm inspect` prints × tokens/s) against
// hsm_ab's, measured in the same run, of at least a third of what the table in
// docs/performance.md says. The Extractors' SHE once trained at 0.02 of hsm_ab's tokens/s (a
// [B·T, K·d] intermediate faulted in page by page, rate 0.19) where it now reaches 1.48; a
// margin of 3 fails on such a cliff, not on noise. About a minute on 2 cores.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "hsm/bench.h"
#include "hsm/cost.h"
#include "hsm/presets.h"

namespace hsm {
namespace {

// Training FLOP/s against hsm_ab's, batch 16 at each preset's context, from `hsm bench --all`
// on a 2-core AMD EPYC (Zen 3, AVX2), the table in docs/performance.md ("Every preset").
const std::map<std::string, double> kTableRate = {
    {"hsm_ab", 1.00},
    {"gpt", 0.87},
    {"hsm_ab_vec", 1.01},
    {"hsm_AB", 1.01},
    {"hsm_gate1", 0.98},
    {"hsm_gate2", 0.90},
    {"hsm_fusion", 0.86},
    {"hsm_ab_mh", 0.91},
    {"hsm_ab_mh_ext", 0.93},
    {"hybrid_0_6", 0.84},
    {"hybrid_mh_0_6", 0.85},
    {"hsm_0_1_2_4_5_6", 0.93},
    {"da_mlp", 0.89},
    {"da_hybrid_mlp", 0.90},
    {"da_taylor", 0.96},
    {"da_hybrid_taylor", 0.89},
    {"da_nonapprox", 0.76},
    {"da_hybrid_nonapprox", 0.81},
    {"da_rnd_emb_qk", 0.80},
    {"da_hybrid_rnd_emb_qk", 0.80},
    {"da_fixed_seq_qk", 0.72},
    {"da_hybrid_fixed_seq_qk", 0.69},
    {"da_static_emb_qk", 0.85},
    {"da_hybrid_static_emb_qk", 0.85},
    {"ex_she", 1.48},
    {"ex_he", 0.77},
    {"ex_we", 0.69},
    {"ex_me", 0.76},
    {"ex_attn1", 0.72},
    {"ex_attn32", 0.27},
    // Not the papers': the studio's small model (1.2M parameters, d 128), measured apart on a
    // 2-core AVX-512 Intel machine beside two compiles (docs/performance.md, "Every preset").
    {"starter", 0.76},
};
constexpr double kMargin = 3;  // a preset fails under table rate / kMargin

TEST(PresetSpeed, EveryPresetTrainsNearItsRateInThePerformanceTable) {
  std::vector<ModelConfig> configs = {load_preset("hsm_ab")};
  for (const auto& name : preset_names())
    if (name != "hsm_ab") configs.push_back(load_preset(name));
  ASSERT_GT(configs.size(), 20u) << "the bundled presets were not found";

  BenchOptions options;
  options.device = "cpu";
  // One timed step after a warm-up, at the real size and context and the table's batch: a cliff
  // may grow with the batch (SHE's [B·T, K·d] product did not show at batch 2).
  options.batch_size = BenchOptions{}.batch_size;  // 16, as the table in docs/performance.md
  options.train_steps = 1;
  options.evaluate = false;
  options.decode = false;
  options.measure_peak = false;
  const BenchReport report = run_bench(configs, options);
  ASSERT_EQ(report.results.size(), configs.size());

  // A cliff repeats; a moment of load on a shared machine does not: a preset under its floor
  // is measured again (beside hsm_ab again) up to twice, and its best rate counts.
  for (size_t i = 0; i < report.results.size(); ++i) {
    const BenchResult& r = report.results[i];
    const auto expected = kTableRate.find(r.name);
    if (expected == kTableRate.end()) {
      ADD_FAILURE() << "preset " << r.name << " has no rate in the table: run `hsm bench --all`, add its row to "
                    << "docs/performance.md and to kTableRate here";
      continue;
    }
    const double floor = expected->second / kMargin;
    double rate = r.train_rate_vs_baseline;
    for (int retry = 0; retry < 2 && rate < floor; ++retry)
      rate = std::max(rate, run_bench({configs.front(), configs[i]}, options).results.back().train_rate_vs_baseline);
    const double step_s = static_cast<double>(r.batch * r.context) / r.train_tokens_per_s;
    std::printf("%-24s %5.2f s a step of %lld x %lld tokens, rate %.2f of hsm_ab's (table %.2f)\n", r.name.c_str(),
                step_s, static_cast<long long>(r.batch), static_cast<long long>(r.context), rate, expected->second);
    EXPECT_GE(rate, floor) << r.name << " trains at " << rate << " of hsm_ab's arithmetic rate (" << step_s
                           << " s a step), the table says " << expected->second
                           << ": a cliff; compare `hsm bench hsm_ab " << r.name << "` with docs/performance.md";
  }
}

// The measure the guard rests on: FLOP/s against the baseline's, with FLOPs from the MACs
// `hsm inspect` prints.
TEST(PresetSpeed, TheRateIsFlopsPerSecondAgainstTheBaselines) {
  const ModelConfig small = load_preset("hsm_ab");
  BenchOptions options;
  options.device = "cpu";
  options.batch_size = 1;
  options.train_steps = 1;
  options.evaluate = false;
  options.decode = false;
  options.measure_peak = false;
  const BenchReport report = run_bench({small, small}, options);
  ASSERT_EQ(report.results.size(), 2u);
  EXPECT_DOUBLE_EQ(report.results[0].train_rate_vs_baseline, 1.0);
  const auto& b = report.results[0];
  const auto& r = report.results[1];
  EXPECT_NEAR(r.train_rate_vs_baseline,
              r.train_tokens_per_s * r.train_flops_per_token / (b.train_tokens_per_s * b.train_flops_per_token), 1e-12);
  // The FLOPs are `hsm inspect`'s MACs: 2 for the forward product, 4 for the gradients.
  EXPECT_DOUBLE_EQ(r.train_flops_per_token, 6.0 * static_cast<double>(model_macs_per_token(small, small.context)));
}

}  // namespace
}  // namespace hsm
