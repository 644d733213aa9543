#pragma once
// Sentencepiece BPE tokenizer (docs/architecture.md): byte_fallback, identity normalisation, no extra
// whitespace handling and no dummy prefix, so decode(encode(text)) == text for any UTF-8.
// "<|endoftext|>" is one special token (the end of a story).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hsm/corpus.h"
#include "hsm/progress.h"

namespace hsm {

struct TokenizerTrainOptions {
  int vocab_size = 5000;
  // Sentences (lines) sampled from big corpora for training (sentencepiece's
  // input_sentence_size); 0 = use every line.
  int64_t input_sentence_size = 2'000'000;
  // Lines longer than this many bytes are split before training (sentencepiece silently
  // skips longer ones).
  int max_sentence_length = 4192;
  int threads = 2;
  uint64_t seed = 1234;
  ProgressFn progress;                  // optional
  const CancelFlag* cancel = nullptr;   // optional
};

class Tokenizer {
 public:
  static constexpr const char* kEndOfText = kStorySeparator;

  // Trains on a corpus (any format corpus.h reads: file or folder) and writes the model
  // file to out_path (atomically). Returns the loaded tokenizer.
  static Tokenizer train(const std::string& corpus_path, const std::string& out_path,
                         const TokenizerTrainOptions& options = {});
  // Loads a tokenizer.model; throws std::runtime_error naming the path on failure.
  static Tokenizer load(const std::string& path);
  // From the bytes of a tokenizer.model (e.g. read from a checkpoint).
  static Tokenizer from_bytes(const std::string& model_bytes);

  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  // The text one token stands for, for display (a byte-fallback piece shows as "<0xE2>").
  std::string piece(int32_t id) const;

  int32_t vocab_size() const;
  int32_t end_of_text_id() const;
  // The serialized model (what tokenizer.model holds) and a stable hex digest of it, used
  // to key encoded-corpus caches.
  const std::string& bytes() const;
  const std::string& hash() const;
  void save(const std::string& path) const;  // atomic write

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace hsm
