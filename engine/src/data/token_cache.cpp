// The encoded-token cache (token_cache.h). Layout of a cache file, little-endian on the
// machines we run on (the file is only read back where it was written):
//   magic "HSMTOKS\0" | version u32 | bytes per token u32 | key (16 hex chars)
//   documents, train_documents, val_documents, dropped_short (i64 each)
//   train tokens, val tokens (u64 each) | checksum u64 | train ids | val ids (u16 each)
#include "data/token_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "hsm/tokenizer.h"
#include "io/hash_util.h"
#include "io/io_util.h"

namespace hsm {
namespace {

namespace fs = std::filesystem;

// Bump when the reading, splitting or encoding changes what a corpus turns into.
constexpr const char* kCacheFormat = "hsm-token-cache/1";
constexpr char kMagic[8] = {'H', 'S', 'M', 'T', 'O', 'K', 'S', '\0'};
constexpr uint32_t kCacheVersion = 1;
constexpr size_t kKeySize = 16;
constexpr size_t kHeaderSize = 8 + 4 + 4 + kKeySize + 8 * 7;

uint64_t tokens_checksum(const TokenDataset& d) {
  const uint64_t h = checksum_words(d.train.data(), d.train.size() * sizeof(uint16_t));
  return checksum_words(d.val.data(), d.val.size() * sizeof(uint16_t), h);
}

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T get(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

}  // namespace

std::string token_cache_key(const Tokenizer& tok, const std::vector<CorpusFile>& files, const DatasetOptions& o) {
  Fnv1a64 h;
  h.field(kCacheFormat).field(tok.hash());
  hash_files(h, files);
  uint64_t frac_bits;
  std::memcpy(&frac_bits, &o.val_fraction, 8);
  h.number(static_cast<uint64_t>(o.context)).number(frac_bits).number(o.seed);
  return h.hex();
}

bool read_token_cache(const fs::path& file, const std::string& key, TokenDataset& d) {
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  if (ec || size < kHeaderSize) return false;
  std::ifstream in(file, std::ios::binary);
  char header[kHeaderSize];
  if (!in.read(header, kHeaderSize)) return false;
  const char* p = header;
  if (std::memcmp(p, kMagic, 8) != 0) return false;
  p += 8;
  if (get<uint32_t>(p) != kCacheVersion || get<uint32_t>(p) != sizeof(uint16_t)) return false;
  if (std::string(p, kKeySize) != key) return false;
  p += kKeySize;
  TokenDataset r;
  r.documents = get<int64_t>(p);
  r.train_documents = get<int64_t>(p);
  r.val_documents = get<int64_t>(p);
  r.dropped_short = get<int64_t>(p);
  const auto n_train = get<uint64_t>(p);
  const auto n_val = get<uint64_t>(p);
  const auto checksum = get<uint64_t>(p);
  if (n_train > size || n_val > size || size != kHeaderSize + 2 * (n_train + n_val)) return false;
  r.train.resize(n_train);
  r.val.resize(n_val);
  if (!in.read(reinterpret_cast<char*>(r.train.data()), static_cast<std::streamsize>(2 * n_train)) ||
      !in.read(reinterpret_cast<char*>(r.val.data()), static_cast<std::streamsize>(2 * n_val)))
    return false;
  if (tokens_checksum(r) != checksum) return false;
  r.from_cache = true;
  r.cache_key = key;
  d = std::move(r);
  return true;
}

void write_token_cache(const fs::path& file, const std::string& key, const TokenDataset& d) {
  std::string header;
  header.append(kMagic, 8);
  put<uint32_t>(header, kCacheVersion);
  put<uint32_t>(header, sizeof(uint16_t));
  header += key;
  for (int64_t v : {d.documents, d.train_documents, d.val_documents, d.dropped_short}) put<int64_t>(header, v);
  put<uint64_t>(header, d.train.size());
  put<uint64_t>(header, d.val.size());
  put<uint64_t>(header, tokens_checksum(d));
  // A per-process temporary name: two runs filling the same cache never write one file; those
  // of writers killed mid-write (a corpus-sized file each) go first.
  remove_dead_temporaries(file.parent_path().string());
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write token cache " + quote_path(tmp) + ": " + std::strerror(errno));
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(d.train.data()), static_cast<std::streamsize>(2 * d.train.size()));
    out.write(reinterpret_cast<const char*>(d.val.data()), static_cast<std::streamsize>(2 * d.val.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error("writing token cache " + quote_path(tmp) + " failed (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec)
    throw std::runtime_error("cannot rename " + quote_path(tmp) + " to " + quote_path(file) + ": " + ec.message());
}

}  // namespace hsm
