// `hsm bench [MODEL ...]`: training, inference and decoding throughput of presets or
// configs, measured in one run, with ratios to the first model (by default gpt).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "hsm/bench.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "hsm/trainer.h"

namespace hsm::cli {

Command add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure training and decoding speed (ratios taken in one run)");
  struct Args {
    std::vector<std::string> models = {"gpt", "hsm_ab", "hybrid_0_6"};
    BenchOptions options;
    int threads = 0;
    bool all = false;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("models", a->models,
                  "Presets or config files; the first is the baseline (default: gpt hsm_ab hybrid_0_6)");
  cmd->add_flag("--all", a->all,
                "Every bundled preset, hsm_ab first as the baseline (instead of the models named); finds the "
                "presets whose arithmetic rate falls far below the others'");
  cmd->add_option("--batch", a->options.batch_size,
                  "Sequences per training step at the first context; longer contexts keep the tokens per step "
                  "(default 16)")
      ->check(whole_in(1, 65536));
  cmd->add_option("--context", a->options.contexts,
                  "Contexts to measure, e.g. 128,512,1024,2048 (default: each model's own)")
      ->delimiter(',')
      ->check(whole_in(1, 1 << 20));
  cmd->add_option("--steps", a->options.train_steps, "Timed training steps (default 4)")->check(whole_in(1, 1000000));
  cmd->add_option("--tokens", a->options.decode_tokens, "Tokens decoded per measurement (default 100)")
      ->check(whole_in(1, 1 << 20));
  cmd->add_option("--profile", a->options.profile_prefix,
                  "Record one training step per model with LibTorch's profiler into PREFIX<model>_<T>.trace.json");
  cmd->add_flag("!--no-decode", a->options.decode, "Skip the decoding measurements");
  cmd->add_option("--device", a->options.device, "cpu, cuda, cuda:N or auto");
  add_threads_option(cmd, a->threads, "CPU threads (default: the measured choice, printed)");
  cmd->add_flag("--json", a->json, "Print JSON");
  return {
      cmd, [a]() {
        const int threads = set_cpu_threads(a->threads);
        std::vector<std::string> names = a->models;
        if (a->all) {
          names = {"hsm_ab"};
          for (const auto& p : preset_names())
            if (p != "hsm_ab") names.push_back(p);
        }
        std::vector<ModelConfig> configs;
        for (const auto& m : names) configs.push_back(load_preset_or_config(m));
        BenchOptions options = a->options;
        options.on_progress = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
        const BenchReport report = run_bench(configs, options);
        // Ratios: against the baseline (first) model at the same context, and against the
        // model's own speed at the first context, beside what its FLOP count allows.
        auto baseline = [&](const BenchResult& r) -> const BenchResult& {
          for (const auto& b : report.results)
            if (b.name == report.results.front().name && b.context == r.context) return b;
          return r;
        };
        auto first = [&](const BenchResult& r) -> const BenchResult& {
          for (const auto& b : report.results)
            if (b.name == r.name) return b;
          return r;
        };
        if (a->json) {
          nlohmann::json out = {{"threads", threads},
                                {"threads_note", cpu_threads_note()},
                                {"device", options.device},
                                {"baseline", report.results.front().name},
                                {"sgemm_peak_gflops", report.sgemm_peak_gflops},
                                {"peak_kind", report.peak_kind},
                                {"cuda_kernels", report.cuda_kernels},
                                {"cuda_kernel_checks", report.cuda_kernel_checks},
                                {"sgemm_peak_by_backend", report.sgemm_peak_by_backend},
                                {"models", nlohmann::json::array()}};
          for (const auto& r : report.results) {
            const auto &b = baseline(r), &f = first(r);
            out["models"].push_back(
                {{"name", r.name},
                 {"params", r.params},
                 {"context", r.context},
                 {"batch", r.batch},
                 {"train_tokens_per_s", r.train_tokens_per_s},
                 {"train_cuda_graph", r.train_cuda_graph},
                 {"train_eager_tokens_per_s", r.train_eager_tokens_per_s},
                 {"graph_vs_eager",
                  r.train_eager_tokens_per_s > 0 ? r.train_tokens_per_s / r.train_eager_tokens_per_s : 0.0},
                 {"eval_tokens_per_s", r.eval_tokens_per_s},
                 {"forward_tokens_per_s", r.forward_tokens_per_s},
                 {"decode_cached_tokens_per_s", r.decode_cached_tokens_per_s},
                 {"decode_uncached_tokens_per_s", r.decode_uncached_tokens_per_s},
                 {"decode_fast_tokens_per_s", r.decode_fast_tokens_per_s},
                 {"decode_graph_tokens_per_s", r.decode_graph_tokens_per_s},
                 {"graph_vs_uncached", r.decode_uncached_tokens_per_s > 0
                                           ? r.decode_graph_tokens_per_s / r.decode_uncached_tokens_per_s
                                           : 0.0},
                 {"graph_vs_cached", r.decode_cached_tokens_per_s > 0
                                         ? r.decode_graph_tokens_per_s / r.decode_cached_tokens_per_s
                                         : 0.0},
                 {"fast_vs_uncached", r.decode_uncached_tokens_per_s > 0
                                          ? r.decode_fast_tokens_per_s / r.decode_uncached_tokens_per_s
                                          : 0.0},
                 {"train_peak_mb", r.train_peak_mb},
                 {"train_flops_per_token", r.train_flops_per_token},
                 {"mfu", r.mfu},
                 {"train_vs_baseline", r.train_tokens_per_s / b.train_tokens_per_s},
                 {"rate_vs_baseline", r.train_rate_vs_baseline},
                 {"train_vs_first_context", r.train_tokens_per_s / f.train_tokens_per_s},
                 {"flops_allow_vs_first_context", f.train_flops_per_token / r.train_flops_per_token},
                 {"cached_vs_uncached", r.decode_uncached_tokens_per_s > 0
                                            ? r.decode_cached_tokens_per_s / r.decode_uncached_tokens_per_s
                                            : 0.0}});
          }
          std::cout << out.dump(2) << "\n";
          return 0;
        }
        size_t name_width = 12;
        for (const auto& r : report.results) name_width = std::max(name_width, r.name.size());
        const int w = static_cast<int>(name_width);
        std::printf("%-*s %5s %5s %9s %7s %7s %6s %8s %6s %9s %8s %9s %8s %7s %7s %7s\n", w, "model", "T", "batch",
                    "train/s", "vs base", "rate vs", "vs T0", "FLOPs ok", "MFU", "eval/s", "peak MB", "cached/s", "uncached", "speedup",
                    "fast/s", "fast/un");
        for (const auto& r : report.results) {
          const auto &b = baseline(r), &f = first(r);
          std::printf(
              "%-*s %5lld %5lld %9.0f %6.2fx %6.2fx %5.2fx %7.2fx %5.1f%% %9.0f %8.0f %9.1f %8.1f %6.1fx %7.0f %6.1fx\n",
              w, r.name.c_str(), static_cast<long long>(r.context), static_cast<long long>(r.batch),
              r.train_tokens_per_s, r.train_tokens_per_s / b.train_tokens_per_s, r.train_rate_vs_baseline,
              r.train_tokens_per_s / f.train_tokens_per_s,
              f.train_flops_per_token / r.train_flops_per_token, 100 * r.mfu, r.eval_tokens_per_s, r.train_peak_mb,
              r.decode_cached_tokens_per_s, r.decode_uncached_tokens_per_s,
              r.decode_uncached_tokens_per_s > 0 ? r.decode_cached_tokens_per_s / r.decode_uncached_tokens_per_s : 0.0,
              r.decode_fast_tokens_per_s,
              r.decode_uncached_tokens_per_s > 0 ? r.decode_fast_tokens_per_s / r.decode_uncached_tokens_per_s : 0.0);
        }
        for (const auto& r : report.results)
          if (r.decode_graph_tokens_per_s > 0)
            std::printf("%s @%lld: decoding as a CUDA graph %.0f tokens/s, eager cached %.0f, uncached %.0f (%.2fx uncached)\n",
                        r.name.c_str(), static_cast<long long>(r.context), r.decode_graph_tokens_per_s,
                        r.decode_cached_tokens_per_s, r.decode_uncached_tokens_per_s,
                        r.decode_uncached_tokens_per_s > 0 ? r.decode_graph_tokens_per_s / r.decode_uncached_tokens_per_s
                                                           : 0.0);
        for (const auto& r : report.results)
          if (r.train_cuda_graph)
            std::printf("%s @%lld: training step as a CUDA graph %.0f tokens/s, its eager step %.0f (%.2fx)\n",
                        r.name.c_str(), static_cast<long long>(r.context), r.train_tokens_per_s,
                        r.train_eager_tokens_per_s, r.train_tokens_per_s / r.train_eager_tokens_per_s);
        if (!report.cuda_kernels.empty())
          std::printf("%s%s%s\n", report.cuda_kernels.c_str(), report.cuda_kernel_checks.empty() ? "" : "; checked: ",
                      report.cuda_kernel_checks.c_str());
        std::string by_backend;
        for (const auto& [name, peak] : report.sgemm_peak_by_backend)
          by_backend += (by_backend.empty() ? " (" : ", ") + name + " " + std::to_string(static_cast<int>(peak + 0.5));
        if (!by_backend.empty()) by_backend += ")";
        std::printf(
            "(%s; %s peak %.1f GFLOP/s%s; rate vs = training FLOP/s against the baseline's, FLOPs = 6 x the MACs "
            "`hsm inspect` prints (context terms at the last position, so a causal step can read above 100%% MFU); "
            "vs T0 = speed at T / speed at the first context, FLOPs ok = what the FLOP count allows; all in one run)\n",
            cpu_threads_note().c_str(), report.peak_kind.c_str(), report.sgemm_peak_gflops, by_backend.c_str());
        return 0;
      }};
}

}  // namespace hsm::cli
