// `hsm eval RUN_DIR [--data PATH] [--split val|train|all] [--skip-layers 0,2,4,6 | --skip-replaced] [--json]`:
// validation loss, top-1 accuracy and token count of a trained model on a corpus.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "hsm/session.h"
#include "hsm/trainer.h"

namespace hsm::cli {

Command add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate a trained run on a corpus (loss, accuracy)");
  struct Args {
    std::string run, data, device = "auto", cache_dir;
    EvalOptions options;
    int threads = 0;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--data", a->data, "Corpus (default: the run's training corpus)")->check(CLI::ExistingPath);
  cmd->add_option("--split", a->options.split, "val (default; the documents held out in training), train or all")
      ->check(CLI::IsMember({"val", "train", "all"}));
  cmd->add_option("--windows", a->options.windows,
                  "packed (default) or story_start: the same windows for every model compared")
      ->check(CLI::IsMember({"packed", "story_start"}));
  cmd->add_option("--batch", a->options.batch_size, "Sequences per batch (default 64)")->check(CLI::PositiveNumber);
  cmd->add_option("--max-batches", a->options.max_batches, "Stop after this many batches (default: all)");
  cmd->add_option("--skip-layers", a->options.skip_layers,
                  "Evaluate with these layers (0-based, e.g. 0,2,4,6) removed, without retraining (DA's skip)")
      ->delimiter(',');
  cmd->add_flag("--skip-replaced", a->options.skip_replaced,
                "Remove every non-attention layer (a DA hybrid's replaced layers)");
  cmd->add_option("--device", a->device, "cpu, cuda, cuda:N or auto");
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores)");
  cmd->add_option("--cache-dir", a->cache_dir, "Encoded-corpus cache folder");
  cmd->add_flag("--json", a->json, "Print JSON");
  return {cmd, [a]() {
            set_cpu_threads(a->threads);
            auto session = Session::open(a->run, a->device);
            std::string data = a->data;
            if (data.empty()) data = stored_data_path(a->run);
            EvalOptions options = a->options;
            options.cache_dir = a->cache_dir;
            const bool tty = ::isatty(STDERR_FILENO);
            if (tty)
              options.progress = [](const std::string& stage, double f) {
                std::fprintf(stderr, "\r\033[K%s %d%%", stage.c_str(), static_cast<int>(f * 100));
              };
            const EvalResult r = session->evaluate(data, options);
            if (tty) std::fprintf(stderr, "\r\033[K");
            if (a->json) {
              std::cout << nlohmann::json{{"run", a->run},
                                          {"data", data},
                                          {"split", r.split},
                                          {"loss", r.loss},
                                          {"accuracy", r.accuracy},
                                          {"tokens", r.tokens},
                                          {"documents", r.documents},
                                          {"unigram_loss", r.unigram_loss},
                                          {"seconds", r.seconds},
                                          {"skipped_layers", r.skipped_layers}}
                               .dump(2)
                        << "\n";
            } else {
              std::printf(
                  "%s split of %s: loss %.4f, accuracy %.4f over %lld tokens (%lld documents); unigram baseline "
                  "loss %.4f; %.1f s\n",
                  r.split.c_str(), data.c_str(), r.loss, r.accuracy, static_cast<long long>(r.tokens),
                  static_cast<long long>(r.documents), r.unigram_loss, r.seconds);
              if (!r.skipped_layers.empty()) {
                std::printf("layers skipped:");
                for (int64_t l : r.skipped_layers) std::printf(" %lld", static_cast<long long>(l));
                std::printf("\n");
              }
            }
            return 0;
          }};
}

}  // namespace hsm::cli
