#pragma once
// One generation from a shared Model (hsm/model.h): the decoding state of one sequence,
// made for the call and gone with it. The fast fp32 path (inference/fast_decoder.h) and
// LibTorch's cached or uncached steps sit behind one decoder interface (generator.cpp), so
// the loop that samples, streams and slides the window is written once. Plain C++.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hsm/sampling.h"

namespace hsm {

class Model;

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
  bool sentence_end = false;  // stopped at a sentence end (SampleSettings::end_at_sentence_after)
  uint64_t seed = 0;   // the seed used (reproduces the run)
  double seconds = 0;       // the whole call: decoder made, prompt encoded, every token
  double tokens_per_s = 0;  // tokens / seconds
  // Seconds until the first token could be sampled: the decoder made (on CUDA the step recorded as
  // a graph, setup_seconds) and the prompt encoded. On a GPU this holds a process's first use of
  // each kernel; what follows is the decoding rate proper.
  double first_token_seconds = 0;
  double setup_seconds = 0;  // of first_token_seconds, making the decoder (CPU paths: ~0)
  // Which decoding path ran: "fast" (hand-written fp32, cached), "cuda-graph" (CUDA: the cached
  // step recorded once as a CUDA graph and replayed per token), "libtorch" (cached steps) or
  // "libtorch-uncached" (the window recomputed for every token).
  std::string decoder;
  // Why a CUDA model's decoding is not "cuda-graph" (a mixer without a static-shape step, a
  // recording that failed); empty otherwise, and when HSM_CUDA_GRAPH=0 turned the graph off.
  std::string decoder_note;
  // CPU threads the decoder used for the last token: the cached paths choose 1, or more when the
  // model is large and the machine has cores free, before every token (choose_decode_threads in
  // hsm/cpu_threads.h); the uncached path uses LibTorch's pool. 0 on a GPU.
  int decode_threads = 0;
};

class Generator {
 public:
  explicit Generator(std::shared_ptr<const Model> model);
  // Streams tokens through on_token (return false to stop); returns the whole result.
  GenerationResult run(const std::string& prompt, const GenerateOptions& options,
                       const std::function<bool(const GeneratedToken&)>& on_token = {});

 private:
  std::shared_ptr<const Model> model_;
};

}  // namespace hsm
