#pragma once
// Corpora (SPEC §4): TinyStories text (stories separated by "<|endoftext|>" lines),
// TinyStories JSON / JSONL (a "story" field per record), plain text files, or folders of
// any of these (each plain file one document). Read as a stream: the full TinyStories
// (2 GB) never sits in memory as text.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hsm/progress.h"

namespace hsm {

class Tokenizer;

// Thrown for unusable input; the message names the file and what is wrong with it.
struct CorpusError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Calls fn for each document in order; fn returns false to stop early. Progress is by
// bytes read over the total size. Throws CorpusError for a missing path, an empty corpus,
// a binary or non-UTF-8 file.
void for_each_document(const std::string& path, const std::function<bool(std::string_view document)>& fn,
                       const ProgressFn& progress = {}, const CancelFlag* cancel = nullptr);

// A hex digest of the files the corpus reader would read (paths, sizes, modification
// times): equal digests mean an unchanged corpus. Keys caches; reads no file contents.
std::string corpus_fingerprint(const std::string& path);

struct DatasetOptions {
  int64_t context = 128;         // documents with fewer tokens are dropped (HSM §6.2, fn. 7)
  double val_fraction = 0.1;     // by document
  uint64_t seed = 1234;          // fixed: the same document always lands in the same split
  std::string cache_dir;         // where encoded tokens are cached; "" = no cache
  int threads = 0;               // encoding threads; 0 = one per core (results do not depend on it)
  ProgressFn progress;
  const CancelFlag* cancel = nullptr;
};

// A corpus encoded with a tokenizer and split by document. Each split is the
// concatenation of its documents' tokens, each document followed by <|endoftext|>.
struct TokenDataset {
  std::vector<uint16_t> train, val;  // vocabularies up to 65,536
  int64_t documents = 0;             // documents read
  int64_t train_documents = 0;
  int64_t val_documents = 0;
  int64_t dropped_short = 0;         // documents shorter than the context, dropped
  bool from_cache = false;
  std::string cache_key;             // hex digest of tokenizer hash, corpus files, options
};

// Encodes (or loads from the cache) a corpus. Throws CorpusError when nothing usable
// remains (no document as long as the context; empty split).
TokenDataset load_dataset(const std::string& path, const Tokenizer& tokenizer, const DatasetOptions& options);

}  // namespace hsm
