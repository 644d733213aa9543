// `hsm generate RUN_DIR --prompt TEXT [...]`: streams a continuation token by token;
// --json gives every token with its probability and the top alternatives.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/trainer.h"

namespace hsm::cli {

Command add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate text from a trained run");
  struct Args {
    std::string run, prompt, device = "auto";
    GenerateOptions options;
    int threads = 0;
    bool no_cache = false, no_fast_path = false, no_stop = false, json = false;
  };
  auto a = std::make_shared<Args>();
  SampleSettings& s = a->options.sampling;
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--prompt", a->prompt, "Text to continue (default: empty, a new story)");
  cmd->add_option("--temperature", s.temperature, "0 = greedy (default 0.8)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", s.top_p, "Nucleus sampling mass in (0, 1] (default 0.95)")->check(CLI::Range(1e-9, 1.0));
  cmd->add_option("--top-k", s.top_k, "Keep the k most likely tokens, 0 = off (default)")
      ->check(CLI::Range(0, 65536));
  cmd->add_option("--seed", s.seed, "Random seed; 0 = random (default), reported with --json");
  cmd->add_option("--max-tokens", s.max_new_tokens, "Tokens to generate at most (default 256)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-stop", a->no_stop, "Keep going past <|endoftext|>");
  cmd->add_flag("--no-cache", a->no_cache, "Recompute the window for every token (for comparison)");
  cmd->add_flag("--no-fast-path", a->no_fast_path,
                "Decode with LibTorch's cached steps instead of the hand-written fp32 path (for comparison)");
  cmd->add_option("--device", a->device, "cpu, cuda, cuda:N or auto");
  cmd->add_option("--threads", a->threads, "CPU threads (default: every core, and a token on one thread unless the machine has cores free)")->check(CLI::Range(0, kMaxThreads));
  cmd->add_flag("--json", a->json, "Print JSON: tokens with probabilities and alternatives");
  return {cmd, [a]() {
            set_cpu_threads(a->threads);
            const std::shared_ptr<const Model> model = Model::load(a->run, a->device);
            GenerateOptions options = a->options;
            options.use_cache = !a->no_cache;
            options.fast_path = !a->no_fast_path;
            options.sampling.stop_at_end = !a->no_stop;
            if (!a->json) {
              std::cout << a->prompt << std::flush;
            }
            const GenerationResult r = Generator(model).run(a->prompt, options, [&](const GeneratedToken& t) {
              if (!a->json) std::cout << t.text << std::flush;
              return true;
            });
            if (r.prompt_tokens_cut > 0)
              std::fprintf(stderr, "hsm: note: the prompt is %lld tokens; the model saw only its last %lld (its context)\n",
                           static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.prompt_tokens - r.prompt_tokens_cut));
            if (a->json) {
              nlohmann::json tokens = nlohmann::json::array();
              for (const auto& t : r.tokens) {
                nlohmann::json top = nlohmann::json::array();
                for (const auto& alt : t.top) top.push_back({{"id", alt.id}, {"piece", alt.piece}, {"prob", alt.prob}});
                tokens.push_back({{"id", t.id}, {"piece", t.piece}, {"text", t.text}, {"prob", t.prob}, {"top", top}});
              }
              std::cout << nlohmann::json{{"prompt", r.prompt},
                                          {"text", r.text},
                                          {"seed", r.seed},
                                          {"prompt_tokens", r.prompt_tokens},
                                          {"prompt_tokens_cut", r.prompt_tokens_cut},
                                          {"ended", r.ended},
                                          {"cached", options.use_cache},
                                          {"decoder", r.decoder},
                                          {"decoder_note", r.decoder_note},
                                          {"decode_threads", r.decode_threads},
                                          {"seconds", r.seconds},
                                          {"tokens_per_s", r.tokens_per_s},
                                          {"first_token_seconds", r.first_token_seconds},
                                          {"setup_seconds", r.setup_seconds},
                                          {"tokens", tokens}}
                               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                        << "\n";
            } else {
              std::cout << std::endl;  // before the summary on stderr, also through a pipe
              const std::string threads = r.decode_threads > 0 ? " on " + std::to_string(r.decode_threads) +
                                                                     (r.decode_threads == 1 ? " thread" : " threads")
                                                               : "";
              if (!r.decoder_note.empty()) std::fprintf(stderr, "[no CUDA graph: %s]\n", r.decoder_note.c_str());
              const double first = r.first_token_seconds;
              std::fprintf(stderr, "[%zu tokens, %.1f tokens/s, the first after %.*f %s, seed %llu, %s decoder%s%s]\n",
                           r.tokens.size(), r.tokens_per_s, first < 1 ? 0 : 2, first < 1 ? first * 1000 : first,
                           first < 1 ? "ms" : "s",
                           static_cast<unsigned long long>(r.seed), r.decoder.c_str(),
                           threads.c_str(), r.ended ? ", end of story" : "");
            }
            return 0;
          }};
}

}  // namespace hsm::cli
