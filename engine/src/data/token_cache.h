#pragma once
// The encoded-token cache (internal header): a corpus encoded once is reloaded in
// milliseconds. One binary file per (tokenizer, corpus files, split options), checked by
// a key and a checksum; anything that does not match is rebuilt, never trusted.
#include <filesystem>
#include <string>
#include <vector>

#include "data/corpus_files.h"
#include "hsm/dataset.h"

namespace hsm {

class Tokenizer;

// Hex digest of the tokenizer's hash, the corpus files and the options that change what
// the corpus turns into (context, validation fraction, seed).
std::string token_cache_key(const Tokenizer& tokenizer, const std::vector<CorpusFile>& files,
                            const DatasetOptions& options);

// Fills `d` from a cache file; false when it is missing, from another version or key,
// truncated or corrupt (the caller then rebuilds it).
bool read_token_cache(const std::filesystem::path& file, const std::string& key, TokenDataset& d);

// Writes atomically (per-process temporary file, then rename); throws naming the file.
void write_token_cache(const std::filesystem::path& file, const std::string& key, const TokenDataset& d);

}  // namespace hsm
