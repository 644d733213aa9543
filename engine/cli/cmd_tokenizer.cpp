// `hsm tokenizer train --data PATH --vocab 5000 --out FILE [--input-sentence-size N] [--json]`:
// trains a sentencepiece BPE tokenizer on a corpus (docs/architecture.md). Progress goes to stderr so
// stdout holds only the summary (or the JSON object).
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "number_options.h"
#include "output_file.h"
#include "hsm/tokenizer.h"

namespace hsm::cli {
namespace {

// One stderr line per stage and per 10% of it: readable in a terminal and in a log file.
class ProgressLines {
 public:
  void operator()(const std::string& stage, double fraction) {
    const int step = fraction < 0 ? -1 : static_cast<int>(std::floor(fraction * 10 + 1e-9));
    if (stage == stage_ && step <= step_) return;
    if (stage != stage_ && fraction < 0) {
      std::cerr << stage << "...\n";
    } else if (fraction >= 0) {
      std::cerr << stage << ": " << step * 10 << "%\n";
    }
    stage_ = stage;
    step_ = step;
  }

 private:
  std::string stage_;
  int step_ = -2;
};

}  // namespace

Command add_tokenizer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenizer", "Train sentencepiece BPE tokenizers");
  cmd->require_subcommand(1);
  auto* train = cmd->add_subcommand("train", "Train a tokenizer on a corpus (file or folder) and save it");
  struct Args {
    std::string data, out;
    int vocab = 5000;
    int64_t input_sentence_size = TokenizerTrainOptions{}.input_sentence_size;
    int max_sentence_length = TokenizerTrainOptions{}.max_sentence_length;
    int threads = std::max(1u, std::thread::hardware_concurrency());
    uint64_t seed = TokenizerTrainOptions{}.seed;
    bool json = false, force = false;
  };
  auto args = std::make_shared<Args>();
  train->add_option("--data", args->data, "Corpus: TinyStories .txt, .json, .jsonl, a plain text file or a folder")
      ->required();
  train->add_option("--out", args->out, "Where to write the tokenizer model (e.g. tokenizer.model)")->required();
  train->add_option("--vocab", args->vocab, "Vocabulary size")->capture_default_str()->check(whole_in(1, 1000000));
  train
      ->add_option("--input-sentence-size", args->input_sentence_size,
                   "Lines sampled from the corpus for training (0 = every line)")
      ->capture_default_str()
      ->check(whole_in(0));
  train
      ->add_option("--max-sentence-length", args->max_sentence_length,
                   "Longer lines are split into pieces of at most this many bytes")
      ->capture_default_str()
      ->check(whole_in(1, 1 << 30));
  train->add_option("--threads", args->threads, "Training threads")->capture_default_str()->check(whole_in(1, machine_cores()));
  train->add_option("--seed", args->seed, "Seed of the line sample")
      ->capture_default_str()
      ->check(whole_in(0, std::numeric_limits<int64_t>::max(), "use 0 to 9223372036854775807"));
  train->add_flag("--json", args->json, "Print the result as JSON");
  train->add_flag("--force", args->force,
                  "Replace an existing --out file (never one in a run folder, nor the corpus)");

  return {cmd, [args]() {
            check_output_file("--out", args->out, {args->data}, args->force);  // before the training
            TokenizerTrainOptions o;
            o.vocab_size = args->vocab;
            o.input_sentence_size = args->input_sentence_size;
            o.max_sentence_length = args->max_sentence_length;
            o.threads = args->threads;
            o.seed = args->seed;
            o.progress = ProgressLines();
            const auto start = std::chrono::steady_clock::now();
            const Tokenizer t = Tokenizer::train(args->data, args->out, o);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (args->json) {
              const nlohmann::json out = {{"vocab_size", t.vocab_size()},
                                          {"end_of_text_id", t.end_of_text_id()},
                                          {"path", args->out},
                                          {"hash", t.hash()},
                                          {"corpus", args->data},
                                          {"seconds", std::round(seconds * 100) / 100}};
              std::cout << out.dump(2) << "\n";
              return 0;
            }
            std::cout << "tokenizer: " << t.vocab_size() << " tokens (" << Tokenizer::kEndOfText << " = "
                      << t.end_of_text_id() << "), hash " << t.hash() << "\n"
                      << "  saved to " << args->out << "\n"
                      << "  trained on " << args->data << " in " << std::fixed << std::setprecision(1) << seconds
                      << " s\n";
            return 0;
          }};
}

}  // namespace hsm::cli
