#pragma once
// Corpora (docs/architecture.md): TinyStories text (stories separated by "<|endoftext|>" lines),
// TinyStories JSON / JSONL (a "story" field per record), plain text files, or folders of
// any of these (each plain file one document). Read as a stream: the full TinyStories
// (2 GB) never sits in memory as text.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "hsm/progress.h"

namespace hsm {

// The line between two TinyStories stories; the tokenizer has it as one token, its
// end-of-text (Tokenizer::kEndOfText).
inline constexpr const char* kStorySeparator = "<|endoftext|>";

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

}  // namespace hsm
