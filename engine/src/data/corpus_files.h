#pragma once
// The file level of corpus reading (internal header): which files a corpus is, how their
// documents are read in order, and a hash that changes whenever they do. Shared by the
// reader (corpus_reader.cpp), the encoded-token cache and the dataset builder.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hsm/progress.h"

namespace hsm {

class Fnv1a64;

struct CorpusFile {
  std::filesystem::path path;
  uint64_t size = 0;
};

inline std::string quote_path(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

// The files of a corpus, in reading order. A folder is read recursively, sorted by path,
// without hidden files; `exclude` (a folder inside the corpus, e.g. the token cache) is
// skipped. Throws CorpusError for a missing path or an empty folder.
std::vector<CorpusFile> list_files(const std::string& path, const std::filesystem::path& exclude = {});

using DocumentFn = std::function<bool(std::string_view document)>;

// Reads the files in order, calling fn per non-empty (trimmed) document; fn returns false
// to stop. Progress is bytes read over the total, reported under `stage`. Throws
// CorpusError when not one document was found, Cancelled when `cancel` was raised.
void read_documents(const std::string& corpus, const std::vector<CorpusFile>& files, const DocumentFn& fn,
                    const std::string& stage, const ProgressFn& progress, const CancelFlag* cancel);

// Adds the files' absolute paths, sizes and modification times to h: a digest that changes
// whenever the corpus changes, without reading it.
void hash_files(Fnv1a64& h, const std::vector<CorpusFile>& files);

}  // namespace hsm
