#include "eval_args.h"

#include "commands.h"
#include "number_options.h"

#include <unistd.h>

#include <cstdio>

#include "hsm/dataset.h"
#include "hsm/run_folder.h"
#include "hsm/trainer.h"

namespace hsm::cli {

void add_eval_args(CLI::App* cmd, EvalArgs& a, bool two_runs) {
  if (two_runs) {
    cmd->add_option("run_a", a.run, "Run folder A (written by `hsm train`)")->required()->check(CLI::ExistingDirectory);
    cmd->add_option("run_b", a.run_b, "Run folder B, trained with A's tokenizer")
        ->required()
        ->check(CLI::ExistingDirectory);
  } else {
    cmd->add_option("run", a.run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  }
  add_eval_options(cmd, a);
}

void add_eval_options(CLI::App* cmd, EvalArgs& a) {
  cmd->add_option("--data", a.data, "Corpus (default: the run's training corpus)")->check(CLI::ExistingPath);
  cmd->add_option("--split", a.options.split, "val (default; the documents held out in training), train or all")
      ->check(CLI::IsMember({"val", "train", "all"}));
  cmd->add_option("--windows", a.options.windows,
                  "packed or story_start (default: the windows the run was trained on, its config.json's "
                  "training.windows; packed for a run that records none)")
      ->check(CLI::IsMember({"packed", "story_start"}));
  cmd->add_option("--batch", a.options.batch_size, "Sequences per batch, 1 to 65536 (default 64)")->check(whole_in(1, kMaxEvalBatch));
  cmd->add_option("--max-windows", a.options.max_windows, "Evaluate the first N windows only (default: all)")
      ->check(whole_in(1, kMaxCount));
  cmd->add_option("--device", a.device, "cpu, cuda, cuda:N or auto");
  add_threads_option(cmd, a.threads);
  cmd->add_option("--cache-dir", a.cache_dir,
                  "Encoded-corpus cache folder (default: the one training fills, $HSM_CACHE_DIR or ~/.cache/hsm-studio)");
  cmd->add_flag("--json", a.json, "Print JSON");
}

EvalSetup open_eval(const EvalArgs& a) {
  set_cpu_threads(a.threads);
  EvalSetup s;
  s.model = Model::load(a.run, a.device);
  if (a.data.empty()) {
    const ScoringCorpus corpus = scoring_corpus(a.run);
    s.data = corpus.path;
    if (!corpus.instead_of.empty())  // a bundled model on a machine without the corpus it was trained on
      std::fprintf(stderr, "hsm: %s was trained on %s, which is not on this machine: scoring it on the starter corpus %s "
                           "(TinyStories, as its own; --data to choose another)\n",
                   a.run.c_str(), corpus.instead_of.c_str(), corpus.path.c_str());
  } else {
    s.data = a.data;
  }
  s.options = a.options;
  s.options.cache_dir = a.cache_dir.empty() ? default_cache_dir() : a.cache_dir;  // training's tokens, not encoded again
  s.progress_line = ::isatty(STDERR_FILENO);
  if (s.progress_line)
    s.options.progress = [](const std::string& stage, double f) {
      std::fprintf(stderr, "\r\033[K%s %d%%", stage.c_str(), static_cast<int>(f * 100));
    };
  return s;
}

std::string common_windows(const std::vector<std::string>& runs,
                           const std::vector<std::shared_ptr<const Model>>& models, const std::string& given) {
  if (!given.empty() || models.empty()) return given;
  const std::string& first = models.front()->trained_windows();
  for (const auto& m : models)
    if (m->trained_windows() != first) {
      std::string each;
      for (size_t i = 0; i < models.size(); ++i)
        each += (i ? ", " : "") + runs[i] + " on " + models[i]->trained_windows();
      throw std::invalid_argument("the runs were trained on different windows (" + each +
                                  "): choose the ones to score them all on with --windows packed or --windows "
                                  "story_start");
    }
  return first;
}

std::string windows_source(const EvalArgs& a) { return a.options.windows.empty() ? "as trained" : "--windows"; }

void end_progress(const EvalSetup& s) {
  if (s.progress_line) std::fprintf(stderr, "\r\033[K");
}

}  // namespace hsm::cli
