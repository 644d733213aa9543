// `hsm bench [MODEL ...]`: training, inference and decoding throughput of presets or
// configs, measured in one run, with ratios to the first model (by default gpt).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hsm/bench.h"
#include "hsm/presets.h"
#include "hsm/trainer.h"

namespace hsm::cli {

Command add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure training and decoding speed (ratios taken in one run)");
  struct Args {
    std::vector<std::string> models = {"gpt", "hsm_ab", "hybrid_0_6"};
    BenchOptions options;
    int threads = 0;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("models", a->models, "Presets or config files; the first is the baseline (default: gpt hsm_ab hybrid_0_6)");
  cmd->add_option("--batch", a->options.batch_size, "Sequences per training step (default 16)")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", a->options.train_steps, "Timed training steps (default 4)")->check(CLI::PositiveNumber);
  cmd->add_option("--tokens", a->options.decode_tokens, "Tokens decoded per measurement (default 100)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--device", a->options.device, "cpu, cuda, cuda:N or auto");
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores)");
  cmd->add_flag("--json", a->json, "Print JSON");
  return {cmd, [a]() {
            const int threads = set_cpu_threads(a->threads);
            std::vector<ModelConfig> configs;
            for (const auto& m : a->models) configs.push_back(load_preset_or_config(m));
            BenchOptions options = a->options;
            options.on_progress = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
            const auto results = run_bench(configs, options);
            const BenchResult& base = results.front();
            if (a->json) {
              nlohmann::json out = {{"threads", threads}, {"device", options.device}, {"baseline", base.name}};
              for (const auto& r : results)
                out["models"].push_back({{"name", r.name},
                                         {"params", r.params},
                                         {"train_tokens_per_s", r.train_tokens_per_s},
                                         {"forward_tokens_per_s", r.forward_tokens_per_s},
                                         {"decode_cached_tokens_per_s", r.decode_cached_tokens_per_s},
                                         {"decode_uncached_tokens_per_s", r.decode_uncached_tokens_per_s},
                                         {"train_vs_baseline", r.train_tokens_per_s / base.train_tokens_per_s},
                                         {"cached_vs_uncached",
                                          r.decode_cached_tokens_per_s / r.decode_uncached_tokens_per_s}});
              std::cout << out.dump(2) << "\n";
              return 0;
            }
            std::printf("%-18s %10s %12s %8s %12s %12s %12s %8s\n", "model", "params", "train tok/s", "vs base",
                        "fwd tok/s", "cached tok/s", "uncached", "speedup");
            for (const auto& r : results)
              std::printf("%-18s %10lld %12.0f %7.2fx %12.0f %12.1f %12.1f %7.2fx\n", r.name.c_str(),
                          static_cast<long long>(r.params), r.train_tokens_per_s,
                          r.train_tokens_per_s / base.train_tokens_per_s, r.forward_tokens_per_s,
                          r.decode_cached_tokens_per_s, r.decode_uncached_tokens_per_s,
                          r.decode_cached_tokens_per_s / r.decode_uncached_tokens_per_s);
            std::printf("(%d CPU threads; batch %lld; decoding %lld tokens greedily; all in one run)\n", threads,
                        static_cast<long long>(options.batch_size), static_cast<long long>(options.decode_tokens));
            return 0;
          }};
}

}  // namespace hsm::cli
