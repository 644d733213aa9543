#pragma once
// A trained model loaded from a run folder: generate text, evaluate on a corpus.
// Plain C++ API for the CLI and the studio.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "hsm/knock_out.h"
#include "hsm/probe.h"
#include "hsm/progress.h"
#include "hsm/sampling.h"
#include "hsm/what_if.h"

namespace hsm {

class Tokenizer;

struct GenerateOptions {
  SampleSettings sampling;
  bool use_cache = true;  // incremental decoding (KV cache / shift ring); false recomputes the window
  // With the cache on a CPU: decode with the hand-written fp32 path (inference/fast_decoder.h)
  // when it supports every layer's mixer; false (or any other case) uses LibTorch's step().
  bool fast_path = true;
  // When the context is full the window slides by this many tokens and is re-encoded;
  // 0 = a quarter of the context.
  int64_t slide = 0;
};

struct TokenAlternative {
  int32_t id = 0;
  std::string piece;
  float prob = 0;
};

struct GeneratedToken {
  int32_t id = 0;
  std::string piece;  // the token's own text (byte pieces shown as <0xNN>)
  std::string text;   // what this token adds to the decoded output (may be empty mid-character)
  float prob = 0;     // probability under the tempered distribution
  std::vector<TokenAlternative> top;
};

struct GenerationResult {
  std::string prompt;
  std::string text;  // the generated continuation (without the prompt)
  std::vector<GeneratedToken> tokens;
  int64_t prompt_tokens = 0;
  // Prompt tokens the model never saw: a prompt longer than the context is cut to its last
  // `context` tokens (0 when it fits). Callers say so.
  int64_t prompt_tokens_cut = 0;
  bool ended = false;  // stopped at <|endoftext|>
  uint64_t seed = 0;   // the seed used (reproduces the run)
  double seconds = 0;
  double tokens_per_s = 0;
  // Which decoding path ran: "fast" (hand-written fp32, cached), "libtorch" (cached steps) or
  // "libtorch-uncached" (the window recomputed for every token).
  std::string decoder;
};

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t tokens = 0;     // predicted tokens
  int64_t documents = 0;  // documents in the evaluated split
  // Baseline: cross-entropy of the same targets under the training split's unigram
  // frequencies (add-one smoothed). A model that learned anything is well below it.
  double unigram_loss = 0;
  std::string split;
  double seconds = 0;
  std::vector<int64_t> skipped_layers;  // the layers left out (EvalOptions::skip_layers)
  std::vector<KnockOut> knock_out;      // EvalOptions::knock_out
};

struct EvalOptions {
  std::string split = "val";       // "val", "train" or "all" (split as in training: same seed)
  std::string windows = "packed";  // "packed" or "story_start" (see TrainSettings::windows)
  int64_t batch_size = 64;
  int64_t max_batches = 0;    // 0 = the whole split
  int64_t max_windows = 0;    // 0 = every window; else the first this many (before max_batches)
  // DA's "skip" configuration (DA §4.2): evaluate with these layers (0-based) removed, without
  // retraining; a skipped layer is the identity on the residual stream. skip_replaced: every
  // layer whose mixer is not attention (a DA hybrid's replaced layers), added to the list.
  std::vector<int64_t> skip_layers;
  bool skip_replaced = false;
  // Layers' mixers or single heads replaced by zero for this evaluation (hsm/knock_out.h).
  std::vector<KnockOut> knock_out;
  std::string cache_dir;
  ProgressFn progress;
  const CancelFlag* cancel = nullptr;
};

// The windows an evaluation scores, read from a corpus once (Session::eval_set) and then
// scored as often as wanted: the studio scores every what-if edit and every ablation on one set
// instead of reading the corpus (or its token cache) again for each. It holds a copy of the
// split's tokens, so it outlives the session that made it, and it fits every session with the
// same tokenizer and context (an edited copy, a later checkpoint of the run, another run
// trained with that tokenizer); Session::evaluate refuses one that does not fit.
class EvalSet {
 public:
  EvalSet();  // empty: fits no session
  ~EvalSet();
  EvalSet(const EvalSet&);
  EvalSet& operator=(const EvalSet&);
  bool empty() const;
  int64_t windows() const;            // after EvalOptions::max_windows
  const std::string& split() const;   // "val", "train" or "all"
  const std::string& layout() const;  // "packed" or "story_start"
  // The corpus's tokens the set holds (a measure of the memory it takes).
  int64_t tokens() const;

 private:
  friend class Session;
  struct Data;
  std::shared_ptr<const Data> data_;
};

class Session {
 public:
  // Loads config.json, model.safetensors and tokenizer.model from a run folder; every file
  // is checked and a mismatch is refused with a message naming the file.
  static std::unique_ptr<Session> open(const std::string& run_dir, const std::string& device = "auto");
  ~Session();

  // Streams tokens through on_token (return false to stop); returns the whole result.
  GenerationResult generate(const std::string& prompt, const GenerateOptions& options,
                            const std::function<bool(const GeneratedToken&)>& on_token = {});
  // Next-token logits for a token sequence (at most the context), for tests and diagnostics.
  std::vector<float> logits(const std::vector<int32_t>& tokens);
  EvalResult evaluate(const std::string& data_path, const EvalOptions& options);
  // The windows evaluate(data_path, options) scores, read once: options' split, windows,
  // max_windows, cache_dir, progress and cancel are used.
  EvalSet eval_set(const std::string& data_path, const EvalOptions& options) const;
  // The same evaluation on windows read before: options' split, windows and max_windows are
  // the set's and not read here; batch_size, max_batches, skipped layers and knock-outs are.
  // Equal to evaluate(data_path, options) when the set was read with the same options.
  // Throws std::invalid_argument for an empty set or one read for another tokenizer or context.
  EvalResult evaluate(const EvalSet& set, const EvalOptions& options);
  // Importance by ablation (hsm/probe.h): the loss of evaluate(data_path, options) with
  // nothing knocked out (the base), then with each layer's mixer output zeroed, then with each
  // separable head of each layer zeroed, on the same windows; ranked by the loss's rise.
  // options.knock_out must be empty. On an edited copy (edited()) what it already knocks out
  // is in the base and gets no row. Progress spans the whole; the cancel flag is checked
  // between batches (Cancelled).
  AblationReport ablate(const std::string& data_path, const EvalOptions& options);
  AblationReport ablate(const EvalSet& set, const EvalOptions& options);  // as evaluate(set, ...)
  // Attention / effective mixing matrices and indicators of every layer and head for a
  // prompt (SPEC §3.3, diagnostics.h), computed on each mixer's real input LN1(h). The
  // prompt's tokens are used as they are (no <|endoftext|> in front), cut to the first
  // `context` tokens, or max_tokens when that is smaller and > 0. Throws
  // std::invalid_argument on an empty prompt.
  Diagnosis diagnose(const std::string& prompt, int64_t max_tokens = 0);
  // The logit lens and attention rollout (hsm/probe.h) of a prompt, tokenised as diagnose()
  // does; top_k next tokens per position and layer (at least 1).
  Probe probe(const std::string& prompt, int64_t top_k = 5, int64_t max_tokens = 0);
  // The same for token ids as they are (say, <|endoftext|>, a prompt and what generate()
  // added: the Playground's provenance), cut to the last `context` of them.
  Probe probe_tokens(std::vector<int32_t> token_ids, int64_t top_k = 5);
  // The learned mixer weights of every layer (the Weights view).
  std::vector<MixerWeights> mixer_weights() const;

  // What-if (hsm/what_if.h): a copy of this session with `edits` applied, in memory only: the
  // weights are cloned, so this session and its run folder stay as they are. The copy's
  // generate, evaluate, ablate, diagnose, probe and mixer_weights all see the edited model
  // (its knock-outs add to EvalOptions::knock_out). An empty WhatIf gives an exact copy.
  // Throws std::invalid_argument for a layer outside the model, a layer whose mixer has no a
  // and b, a head it cannot knock out, or a and b of the wrong size.
  std::unique_ptr<Session> edited(const WhatIf& edits) const;
  // The edits of a copy made by edited(): empty for a session opened from a folder, except the
  // knock-outs of a folder save_as() wrote (its a/b edits are in its weights).
  const WhatIf& edits() const;
  // "Save as…": writes this (edited) model as a new run folder: config.json (with "what_if"
  // recording the edits and the folder it came from), model.safetensors, tokenizer.model,
  // and the source's metrics.jsonl; open() of it gives the same model, knock-outs included.
  // Refuses a folder that exists and is not empty (so never the source run folder).
  void save_as(const std::string& run_dir) const;

  const ModelConfig& config() const;
  const Tokenizer& tokenizer() const;
  std::string device() const;
  std::string run_dir() const;

 private:
  Session();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hsm
