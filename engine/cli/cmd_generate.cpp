// `hsm generate RUN_DIR --prompt TEXT [...]`: streams a continuation token by token;
// --json gives every token with its probability and the top alternatives. --samples N makes N
// stories in one process (one model load; on a GPU the kernels' first use paid once).
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/trainer.h"

namespace hsm::cli {

namespace {

// One generation as `hsm generate --json` prints it: every token with its probability and the top
// alternatives, the decoder that ran and its timings.
nlohmann::json generation_json(const GenerationResult& r, bool cached) {
  nlohmann::json tokens = nlohmann::json::array();
  for (const auto& t : r.tokens) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& alt : t.top) top.push_back({{"id", alt.id}, {"piece", alt.piece}, {"prob", alt.prob}});
    tokens.push_back({{"id", t.id}, {"piece", t.piece}, {"text", t.text}, {"prob", t.prob}, {"top", top}});
  }
  return {{"prompt", r.prompt},
          {"text", r.text},
          {"seed", r.seed},
          {"prompt_tokens", r.prompt_tokens},
          {"prompt_tokens_cut", r.prompt_tokens_cut},
          {"ended", r.ended},
          {"cached", cached},
          {"decoder", r.decoder},
          {"decoder_note", r.decoder_note},
          {"decode_threads", r.decode_threads},
          {"seconds", r.seconds},
          {"tokens_per_s", r.tokens_per_s},
          {"first_token_seconds", r.first_token_seconds},
          {"setup_seconds", r.setup_seconds},
          {"tokens", tokens}};
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate text from a trained run");
  struct Args {
    std::string run, prompt, device = "auto";
    GenerateOptions options;
    int threads = 0, samples = 1;
    bool no_cache = false, no_fast_path = false, no_stop = false, json = false;
  };
  auto a = std::make_shared<Args>();
  SampleSettings& s = a->options.sampling;
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--prompt", a->prompt, "Text to continue (default: empty, a new story)");
  cmd->add_option("--temperature", s.temperature, "0 = greedy (default 0.8)")->check(number_in(0, 1e6));
  cmd->add_option("--top-p", s.top_p, "Nucleus sampling mass in (0, 1] (default 0.95)")->check(number_in(0, 1, true));
  cmd->add_option("--top-k", s.top_k, "Keep the k most likely tokens, 0 = off (default)")
      ->check(whole_in(0, 65536));
  // At most 2^63 - 1, so that --samples' seeds S+i never wrap round to 0 (random; issue 65).
  cmd->add_option("--seed", s.seed, "Random seed; 0 = random (default), reported with --json")
      ->check(whole_in(0, std::numeric_limits<int64_t>::max(), "use 0 (random) to 9223372036854775807"));
  cmd->add_option("--max-tokens", s.max_new_tokens, "Tokens to generate at most (default 256)")
      ->check(whole_in(1, int64_t{1} << 30));
  cmd->add_option("--samples", a->samples,
                  "Stories to generate from the prompt, one after another (default 1); with --seed S the i-th "
                  "uses seed S+i. --json prints {\"samples\": [...]} when more than one")
      ->check(whole_in(1, 10000));
  cmd->add_flag("--no-stop", a->no_stop, "Keep going past <|endoftext|>");
  cmd->add_flag("--no-cache", a->no_cache, "Recompute the window for every token (for comparison)");
  cmd->add_flag("--no-fast-path", a->no_fast_path,
                "Decode with LibTorch's cached steps instead of the hand-written fp32 path (for comparison)");
  cmd->add_option("--device", a->device, "cpu, cuda, cuda:N or auto");
  add_threads_option(cmd, a->threads,
                     "CPU threads (default: every core, and a token on one thread unless the machine has cores free)");
  cmd->add_flag("--json", a->json, "Print JSON: tokens with probabilities and alternatives");
  return {cmd, [a]() {
            set_cpu_threads(a->threads);
            const std::shared_ptr<const Model> model = Model::load(a->run, a->device);
            GenerateOptions options = a->options;
            options.use_cache = !a->no_cache;
            options.fast_path = !a->no_fast_path;
            options.sampling.stop_at_end = !a->no_stop;
            Generator generator(model);
            nlohmann::json samples = nlohmann::json::array();
            for (int i = 0; i < a->samples; ++i) {
              // Sample i from seed + i, so each story of a seeded call is reproduced alone (--seed S+i).
              if (a->options.sampling.seed != 0) options.sampling.seed = a->options.sampling.seed + i;
              // The prompt is echoed with the first token, so that a refusal (a task run, a prompt
              // of no tokens) is the only output (issue 65: "Once" came before the error).
              bool echoed = false;
              auto echo = [&] {
                if (!a->json && !echoed) std::cout << (i > 0 ? "\n" : "") << a->prompt << std::flush;
                echoed = true;
              };
              const GenerationResult r = generator.run(a->prompt, options, [&](const GeneratedToken& t) {
                echo();
                if (!a->json) std::cout << t.text << std::flush;
                return true;
              });
              echo();
              if (r.prompt_tokens_cut > 0 && i == 0)
                std::fprintf(stderr,
                             "hsm: note: the prompt is %lld tokens; the model saw only its last %lld (its context)\n",
                             static_cast<long long>(r.prompt_tokens),
                             static_cast<long long>(r.prompt_tokens - r.prompt_tokens_cut));
              if (a->json) {
                samples.push_back(generation_json(r, options.use_cache));
                continue;
              }
              std::cout << std::endl;  // before the summary on stderr, also through a pipe
              const std::string threads = r.decode_threads > 0 ? " on " + std::to_string(r.decode_threads) +
                                                                     (r.decode_threads == 1 ? " thread" : " threads")
                                                               : "";
              if (!r.decoder_note.empty() && i == 0) std::fprintf(stderr, "[no CUDA graph: %s]\n", r.decoder_note.c_str());
              const double first = r.first_token_seconds;
              std::fprintf(stderr, "[%zu tokens, %.1f tokens/s, the first after %.*f %s, seed %llu, %s decoder%s%s]\n",
                           r.tokens.size(), r.tokens_per_s, first < 1 ? 0 : 2, first < 1 ? first * 1000 : first,
                           first < 1 ? "ms" : "s", static_cast<unsigned long long>(r.seed), r.decoder.c_str(),
                           threads.c_str(), r.ended ? ", end of story" : "");
            }
            if (a->json) {
              // One sample: its object, as always; several: {"samples": [...]}, in the order made.
              const nlohmann::json out = a->samples == 1 ? samples[0] : nlohmann::json{{"samples", samples}};
              std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
            }
            return 0;
          }};
}

}  // namespace hsm::cli
