#pragma once
// A corpus encoded with a tokenizer and split by document (docs/architecture.md): what the trainer and
// the evaluation read. Encoded corpora are cached as binary token files keyed by the
// tokenizer's hash, the corpus files and the split options.
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/progress.h"

namespace hsm {

class Tokenizer;

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

// A hex digest of a corpus's files (absolute paths, sizes, modification times, as
// load_dataset lists them, without `cache_dir` when it lies inside a corpus folder): it
// changes whenever the corpus does, and costs a directory listing, not a read. Throws
// CorpusError for a missing path or an empty folder.
std::string corpus_digest(const std::string& path, const std::string& cache_dir = "");

// Where encoded corpora (and trained tokenizers) are cached when no folder is given: training
// and evaluation share it, so an evaluation reads the tokens its run's training encoded.
// $HSM_CACHE_DIR, else $XDG_CACHE_HOME/hsm-studio, else ~/.cache/hsm-studio, else ./.hsm-cache.
std::string default_cache_dir();

}  // namespace hsm
