#pragma once
// Loss and accuracy of a shared Model (hsm/model.h) on a corpus, and importance by ablation.
// Skipped layers and knock-outs are arguments of the call (EvalOptions), never set on the
// shared model: an Evaluator that needs them works on a view of the model of its own that
// shares every weight (docs/architecture.md, "Threads"). Plain C++.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hsm/knock_out.h"
#include "hsm/probe.h"
#include "hsm/progress.h"
#include "hsm/task_run.h"

namespace hsm {

class Model;
struct TokenScores;  // hsm/token_scores.h

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t tokens = 0;     // predicted tokens
  int64_t documents = 0;  // documents in the evaluated split
  // Baseline: cross-entropy of the same targets under the training split's unigram
  // frequencies (add-one smoothed). A model that learned anything is well below it.
  double unigram_loss = 0;
  std::string split;
  // The windows scored: their layout ("packed" or "story_start") and how many (after
  // max_windows and max_batches), so that every loss shown can say what it is a loss of.
  std::string windows;
  int64_t window_count = 0;
  double seconds = 0;
  std::vector<int64_t> skipped_layers;  // the layers left out (EvalOptions::skip_layers)
  std::vector<KnockOut> knock_out;      // the model's own knock-outs, then EvalOptions::knock_out
};

struct EvalOptions {
  std::string split = "val";       // "val", "train" or "all" (split as in training: same seed)
  // "packed" or "story_start" (see TrainSettings::windows); empty: the windows the model's run
  // was trained on (Model::trained_windows()), so a run's loss here is the one its curves show.
  std::string windows;
  int64_t batch_size = 64;
  int64_t max_batches = 0;    // 0 = the whole split
  int64_t max_windows = 0;    // 0 = every window; else the first this many (before max_batches)
  // The "skip" configuration of deconstructing-attention.md §4.2: evaluate with these layers
  // (0-based) removed, without retraining; a skipped layer is the identity on the residual
  // stream. skip_replaced: every layer whose mixer is not attention (a hybrid's replaced
  // layers), added to the list.
  std::vector<int64_t> skip_layers;
  bool skip_replaced = false;
  // Layers' mixers or single heads replaced by zero for this evaluation (hsm/knock_out.h).
  std::vector<KnockOut> knock_out;
  std::string cache_dir;
  ProgressFn progress;
  const CancelFlag* cancel = nullptr;
};

// The windows an evaluation scores, read from a corpus once (Evaluator::read) and then scored
// as often as wanted: the studio scores every what-if edit and every ablation on one set
// instead of reading the corpus (or its token cache) again for each. It holds a copy of the
// split's tokens, so it outlives the model that read it, and it fits every model with the
// same tokenizer and context (an edited model, a later checkpoint of the run, another run
// trained with that tokenizer); Evaluator::evaluate refuses one that does not fit.
class EvalSet {
 public:
  EvalSet();  // empty: fits no model
  ~EvalSet();
  EvalSet(const EvalSet&);
  EvalSet& operator=(const EvalSet&);
  bool empty() const;
  int64_t windows() const;            // after EvalOptions::max_windows
  const std::string& split() const;   // "val", "train" or "all"
  const std::string& layout() const;  // "packed" or "story_start"
  // The corpus's tokens the set holds (a measure of the memory it takes).
  int64_t tokens() const;

  struct Data;  // inference/evaluator.cpp

 private:
  friend class Evaluator;
  std::shared_ptr<const Data> data_;
};

class Evaluator {
 public:
  explicit Evaluator(std::shared_ptr<const Model> model);
  ~Evaluator();

  // The windows evaluate(data_path, options) scores, read once: options' split, windows,
  // max_windows, cache_dir, progress and cancel are used.
  EvalSet read(const std::string& data_path, const EvalOptions& options) const;
  EvalResult evaluate(const std::string& data_path, const EvalOptions& options);
  // The same evaluation on windows read before: options' split, windows and max_windows are
  // the set's and not read here; batch_size, max_batches, skipped layers and knock-outs are.
  // Equal to evaluate(data_path, options) when the set was read with the same options.
  // Throws std::invalid_argument for an empty set or one read for another tokenizer or context.
  EvalResult evaluate(const EvalSet& set, const EvalOptions& options);
  // The same evaluation with every predicted token's loss, probability and rank kept
  // (hsm/token_scores.h): the one evaluate() runs, so the result's loss is the mean of the
  // tokens' losses and equal to evaluate()'s on the same windows and options.
  TokenScores score_tokens(const EvalSet& set, const EvalOptions& options);
  TokenScores score_tokens(const std::string& data_path, const EvalOptions& options);
  // Importance by ablation (hsm/probe.h): the loss with nothing knocked out (the base), then
  // with each layer's mixer output zeroed, then with each separable head of each layer zeroed,
  // on the same windows; ranked by the loss's rise. options.knock_out must be empty. On an
  // edited model what it already knocks out is in the base and gets no row. Progress spans the
  // whole; the cancel flag is checked between batches (Cancelled).
  AblationReport ablate(const std::string& data_path, const EvalOptions& options);
  AblationReport ablate(const EvalSet& set, const EvalOptions& options);
  // A task run's model (Model::task()) on test examples [0, examples) of its task (test seeds:
  // never trained on), with the model's own what-if edit: for the trained model what
  // score_task_run and `hsm eval` give. The cancel flag is checked between batches (Cancelled).
  // Throws std::invalid_argument for a corpus run's model or examples < 1.
  TaskScore score_task(int64_t examples, const CancelFlag* cancel = nullptr) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hsm
