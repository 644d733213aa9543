// Corpus reading and encoding (SPEC §4). Files are streamed in 1 MB chunks: the full
// TinyStories (2 GB of text, or JSON arrays of 50-250 MB) never sits in memory as text,
// and progress / cancellation are checked once per chunk.
#include "hsm/corpus.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "hash_util.h"
#include "hsm/tokenizer.h"

namespace hsm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kChunk = size_t{1} << 20;         // read size: also the progress / cancel granularity
constexpr size_t kBinaryProbe = size_t{64} << 10;  // a NUL in the first 64 KB: a binary file
constexpr std::string_view kBom = "\xEF\xBB\xBF";

struct CorpusFile {
  fs::path path;
  uint64_t size = 0;
};

std::string quote_path(const fs::path& p) { return "'" + p.string() + "'"; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Index of the first byte that does not belong to well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or npos.
size_t find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {  // ASCII fast path, eight bytes at a time
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      len = 3;
    } else if (c == 0xED) {
      len = 3, hi = 0x9F;
    } else if (c == 0xF0) {
      len = 4, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4, hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if ((p[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::string_view::npos;
}

CorpusError invalid_utf8(const fs::path& path, uint64_t offset, unsigned char byte) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", byte);
  return CorpusError("corpus file " + quote_path(path) + " is not valid UTF-8 (byte " + hex + " at offset " +
                     std::to_string(offset) + "); convert it to UTF-8, e.g. `iconv -f LATIN1 -t UTF-8`");
}

bool is_hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

// The files of a corpus, in reading order. A folder is read recursively, sorted by path
// (element by element, so a sub-folder's files stay together), without hidden files or
// folders; `exclude` (the encoded-token cache, when it lies inside the corpus) is skipped.
std::vector<CorpusFile> list_files(const std::string& path, const fs::path& exclude = {}) {
  const fs::path root(path);
  std::error_code ec;
  const fs::file_status st = fs::status(root, ec);
  if (!fs::exists(st)) throw CorpusError("corpus " + quote_path(root) + " does not exist");
  std::vector<CorpusFile> files;
  if (fs::is_regular_file(st)) {
    files.push_back({root, fs::file_size(root)});
    return files;
  }
  if (!fs::is_directory(st)) throw CorpusError("corpus " + quote_path(root) + " is neither a file nor a folder");
  const bool check_exclude = !exclude.empty() && fs::exists(exclude, ec);
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw CorpusError("cannot read corpus folder " + quote_path(root) + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw CorpusError("cannot read corpus folder " + quote_path(root) + ": " + ec.message());
    const fs::path& p = it->path();
    const bool dir = it->is_directory(ec);
    if (is_hidden(p) || (dir && check_exclude && fs::equivalent(p, exclude, ec))) {
      if (dir) it.disable_recursion_pending();
      continue;
    }
    if (!dir && it->is_regular_file(ec)) files.push_back({p, it->file_size(ec)});
  }
  if (ec) throw CorpusError("cannot read corpus folder " + quote_path(root) + ": " + ec.message());
  std::sort(files.begin(), files.end(), [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
  if (files.empty())
    throw CorpusError("corpus folder " + quote_path(root) + " holds no files (hidden ones are skipped)");
  return files;
}

enum class Format { kText, kJsonl, kJson };

Format format_of(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".jsonl") return Format::kJsonl;
  if (ext == ".json") return Format::kJson;
  return Format::kText;
}

// Bytes read over the corpus size, reported (and cancellation checked) once per chunk.
class ReadTracker {
 public:
  ReadTracker(uint64_t total, std::string stage, const ProgressFn& progress, const CancelFlag* cancel)
      : total_(total), stage_(std::move(stage)), progress_(progress), cancel_(cancel) {}
  void advance(uint64_t n) {
    done_ += n;
    check();
  }
  void check() const {
    if (cancel_ && cancel_->load()) throw Cancelled();
    if (progress_) progress_(stage_, fraction());
  }
  void finish() const {
    if (progress_) progress_(stage_, 1.0);
  }

 private:
  double fraction() const { return total_ == 0 ? 1.0 : std::min(1.0, static_cast<double>(done_) / total_); }
  uint64_t total_;
  uint64_t done_ = 0;
  std::string stage_;
  const ProgressFn& progress_;
  const CancelFlag* cancel_;
};

// A file as a stream buffer with a 1 MB get area: lines are cut out of the buffer directly,
// and nlohmann's SAX parser reads it through an std::istream. The first chunk is checked for
// NUL bytes (a binary file) and loses its UTF-8 byte-order mark.
class FileReader : public std::streambuf {
 public:
  FileReader(const fs::path& path, ReadTracker& tracker) : path_(path), tracker_(tracker), buf_(kChunk) {
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) throw CorpusError("cannot open corpus file " + quote_path(path) + ": " + std::strerror(errno));
    setg(buf_.data(), buf_.data(), buf_.data());
  }

  // The next line without its '\n', and without a final '\r' so CRLF files read like LF
  // ones. False at the end of the file.
  bool next_line(std::string& line) {
    line.clear();
    bool any = false;
    while (true) {
      if (gptr() == egptr() && underflow() == traits_type::eof()) break;
      any = true;
      char* b = gptr();
      char* e = egptr();
      char* nl = static_cast<char*>(std::memchr(b, '\n', static_cast<size_t>(e - b)));
      if (nl) {
        line.append(b, nl);
        setg(eback(), nl + 1, e);
        break;
      }
      line.append(b, e);
      setg(eback(), e, e);
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return any;
  }

  // File offset of the next unread byte.
  uint64_t offset() const { return read_ - static_cast<uint64_t>(egptr() - gptr()); }
  // Offset of what a parser sees as its byte 0 (after a byte-order mark).
  uint64_t start() const { return bom_ ? kBom.size() : 0; }
  const fs::path& path() const { return path_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const size_t n = std::fread(buf_.data(), 1, buf_.size(), file_.get());
    if (n == 0) {
      if (std::ferror(file_.get())) throw CorpusError("error reading corpus file " + quote_path(path_));
      return traits_type::eof();
    }
    const bool first = read_ == 0;
    read_ += n;
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    if (first) {
      check_binary(n);
      if (std::string_view(buf_.data(), n).substr(0, kBom.size()) == kBom) {
        bom_ = true;
        gbump(static_cast<int>(kBom.size()));
      }
    }
    tracker_.advance(n);
    if (gptr() == egptr()) return underflow();  // the chunk held only the byte-order mark
    return traits_type::to_int_type(*gptr());
  }

 private:
  void check_binary(size_t n) const {
    const void* nul = std::memchr(buf_.data(), '\0', std::min(n, kBinaryProbe));
    if (!nul) return;
    const auto at = static_cast<const char*>(nul) - buf_.data();
    const auto b0 = static_cast<unsigned char>(buf_[0]);
    const bool utf16 = n >= 2 && ((b0 == 0xFF && static_cast<unsigned char>(buf_[1]) == 0xFE) ||
                                  (b0 == 0xFE && static_cast<unsigned char>(buf_[1]) == 0xFF));
    throw CorpusError("corpus file " + quote_path(path_) + " looks binary (NUL byte at offset " + std::to_string(at) +
                      "); a corpus must be UTF-8 text" +
                      (utf16 ? " (this one looks like UTF-16: `iconv -f UTF-16 -t UTF-8` converts it)" : ""));
  }

  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  fs::path path_;
  ReadTracker& tracker_;
  std::vector<char> buf_;
  std::unique_ptr<std::FILE, Closer> file_;
  uint64_t read_ = 0;
  bool bom_ = false;
};

using DocumentFn = std::function<bool(std::string_view document)>;

// Trims documents, drops empty ones and counts the rest.
struct Emitter {
  const DocumentFn& fn;
  int64_t count = 0;
  bool operator()(std::string_view doc) {
    doc = trim(doc);
    if (doc.empty()) return true;
    ++count;
    return fn(doc);
  }
};

// TinyStories text: stories separated by lines that are exactly <|endoftext|> (surrounding
// whitespace aside). A file without such a line is one document, so a plain text file
// needs no separate reader (and no pass to find out which kind it is).
bool read_text(FileReader& r, Emitter& emit) {
  std::string line, doc;
  while (true) {
    const uint64_t at = r.offset();
    if (!r.next_line(line)) break;
    const size_t bad = find_invalid_utf8(line);
    if (bad != std::string::npos) throw invalid_utf8(r.path(), at + bad, static_cast<unsigned char>(line[bad]));
    if (trim(line) == Tokenizer::kEndOfText) {
      if (!emit(doc)) return false;
      doc.clear();
      continue;
    }
    if (!doc.empty()) doc += '\n';
    doc += line;
  }
  return emit(doc);
}

const json* story_field(const json& record) {
  for (const char* key : {"story", "text"}) {
    auto it = record.find(key);
    if (it != record.end()) return &*it;
  }
  return nullptr;
}

// JSONL: one JSON object per line with a "story" (TinyStories) or "text" field.
bool read_jsonl(FileReader& r, Emitter& emit) {
  std::string line;
  int64_t lineno = 0;
  while (true) {
    const uint64_t at = r.offset();
    if (!r.next_line(line)) break;
    ++lineno;
    const size_t bad = find_invalid_utf8(line);
    if (bad != std::string::npos) throw invalid_utf8(r.path(), at + bad, static_cast<unsigned char>(line[bad]));
    if (trim(line).empty()) continue;
    const std::string where = "corpus file " + quote_path(r.path()) + ", line " + std::to_string(lineno);
    json record;
    try {
      record = json::parse(line);
    } catch (const json::parse_error& e) {
      throw CorpusError(where + ": not valid JSON (" + e.what() + ")");
    }
    if (!record.is_object()) throw CorpusError(where + ": expected a JSON object with a \"story\" or \"text\" field");
    const json* field = story_field(record);
    if (!field) throw CorpusError(where + ": the object has no \"story\" or \"text\" field");
    if (!field->is_string()) throw CorpusError(where + ": the \"story\"/\"text\" field is not a string");
    if (!emit(field->get_ref<const std::string&>())) return false;
  }
  return true;
}

// A JSON array of records, read with nlohmann's SAX interface: TinyStories' JSON files are
// 50-250 MB arrays and the DOM would take several times that in memory. Only the
// records' own "story" (or else "text") fields are kept; nested objects such as
// "instruction" are skipped.
class StoryReader : public nlohmann::json_sax<json> {
 public:
  StoryReader(const FileReader& r, Emitter& emit) : reader_(r), emit_(emit) {}
  bool stopped() const { return stopped_; }

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool string(string_t& s) override {
    if (depth_ == 2 && is_field()) {
      (key_ == "story" ? story_ : text_) = std::move(s);
      (key_ == "story" ? has_story_ : has_text_) = true;
      return true;
    }
    return scalar();
  }
  bool start_object(std::size_t) override {
    if (depth_ == 0) throw not_an_array();
    if (depth_ == 1) {
      has_story_ = has_text_ = false;
      key_.clear();
    } else if (depth_ == 2 && is_field()) {
      throw field_not_string();
    }
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 2) key_ = k;
    return true;
  }
  bool end_object() override {
    if (--depth_ != 1) return true;
    ++record_;
    if (!has_story_ && !has_text_)
      throw CorpusError(where() + ": record " + std::to_string(record_ - 1) +
                        " has no \"story\" or \"text\" field (expected an array of TinyStories records)");
    if (!emit_(has_story_ ? story_ : text_)) {
      stopped_ = true;
      return false;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 1) throw not_an_object();
    if (depth_ == 2 && is_field()) throw field_not_string();
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // `position` counts the bytes the parser has read, the offending one included.
    const uint64_t at = reader_.start() + (position > 0 ? position - 1 : 0);
    throw CorpusError(where() + ": invalid JSON at offset " + std::to_string(at) + " (" + e.what() + ")");
  }

 private:
  bool is_field() const { return key_ == "story" || key_ == "text"; }
  bool scalar() {
    if (depth_ == 0) throw not_an_array();
    if (depth_ == 1) throw not_an_object();
    if (depth_ == 2 && is_field()) throw field_not_string();
    return true;
  }
  std::string where() const { return "corpus file " + quote_path(reader_.path()); }
  CorpusError not_an_array() const {
    return CorpusError(where() + ": expected a JSON array of objects with a \"story\" or \"text\" field");
  }
  CorpusError not_an_object() const {
    return CorpusError(where() + ": record " + std::to_string(record_) + " is not a JSON object");
  }
  CorpusError field_not_string() const {
    return CorpusError(where() + ": record " + std::to_string(record_) + ": the \"" + key_ +
                       "\" field is not a string");
  }

  const FileReader& reader_;
  Emitter& emit_;
  int depth_ = 0;  // 1 inside the top-level array, 2 inside a record
  int64_t record_ = 0;
  std::string key_, story_, text_;
  bool has_story_ = false, has_text_ = false, stopped_ = false;
};

bool read_json(FileReader& r, Emitter& emit) {
  std::istream in(&r);
  StoryReader sax(r, emit);
  json::sax_parse(in, &sax);
  return !sax.stopped();
}

// Reads the files in order. Throws CorpusError when not one non-empty document was found.
void read_documents(const std::string& corpus, const std::vector<CorpusFile>& files, const DocumentFn& fn,
                    const std::string& stage, const ProgressFn& progress, const CancelFlag* cancel) {
  uint64_t total = 0;
  for (const auto& f : files) total += f.size;
  ReadTracker tracker(total, stage, progress, cancel);
  tracker.check();
  Emitter emit{fn};
  for (const auto& f : files) {
    FileReader reader(f.path, tracker);
    bool go = true;
    switch (format_of(f.path)) {
      case Format::kText:
        go = read_text(reader, emit);
        break;
      case Format::kJsonl:
        go = read_jsonl(reader, emit);
        break;
      case Format::kJson:
        go = read_json(reader, emit);
        break;
    }
    if (!go) return;
  }
  tracker.finish();
  if (emit.count == 0) {
    if (files.size() == 1 && files[0].path == fs::path(corpus))
      throw CorpusError("corpus file " + quote_path(corpus) + " is empty: it holds no text");
    throw CorpusError("corpus folder " + quote_path(corpus) + " holds no text: its " + std::to_string(files.size()) +
                      " file(s) are empty");
  }
}

// ---- Encoded-corpus cache ---------------------------------------------------------------

// Bump when the reading, splitting or encoding changes what a corpus turns into.
constexpr const char* kCacheFormat = "hsm-token-cache/1";
constexpr char kMagic[8] = {'H', 'S', 'M', 'T', 'O', 'K', 'S', '\0'};
constexpr uint32_t kCacheVersion = 1;
constexpr size_t kKeySize = 16;
constexpr size_t kHeaderSize = 8 + 4 + 4 + kKeySize + 8 * 7;

// The files' absolute paths, sizes and modification times: changes whenever the corpus
// changes, without reading it.
void hash_files(Fnv1a64& h, const std::vector<CorpusFile>& files) {
  h.number(files.size());
  for (const auto& f : files) {
    std::error_code ec;
    const auto mtime = fs::last_write_time(f.path, ec);
    h.field(fs::absolute(f.path).lexically_normal().string())
        .number(f.size)
        .number(static_cast<uint64_t>(ec ? 0 : mtime.time_since_epoch().count()));
  }
}

std::string cache_key(const Tokenizer& tok, const std::vector<CorpusFile>& files, const DatasetOptions& o) {
  Fnv1a64 h;
  h.field(kCacheFormat).field(tok.hash());
  hash_files(h, files);
  uint64_t frac_bits;
  std::memcpy(&frac_bits, &o.val_fraction, 8);
  h.number(static_cast<uint64_t>(o.context)).number(frac_bits).number(o.seed);
  return h.hex();
}

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

// Fills `d` from a cache file; false when it is missing, from another version or key,
// truncated or corrupt (the caller then rebuilds it).
bool read_cache(const fs::path& file, const std::string& key, TokenDataset& d) {
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

void write_cache(const fs::path& file, const std::string& key, const TokenDataset& d) {
  std::string header;
  header.append(kMagic, 8);
  put<uint32_t>(header, kCacheVersion);
  put<uint32_t>(header, sizeof(uint16_t));
  header += key;
  for (int64_t v : {d.documents, d.train_documents, d.val_documents, d.dropped_short}) put<int64_t>(header, v);
  put<uint64_t>(header, d.train.size());
  put<uint64_t>(header, d.val.size());
  put<uint64_t>(header, tokens_checksum(d));
  // A per-process temporary name: two runs filling the same cache never write one file.
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

// ---- Encoding -----------------------------------------------------------------------

// Whether document `index` goes to validation: a function of (seed, index) only, so a
// document keeps its split whatever the context, the tokenizer or the thread count.
bool in_validation(uint64_t seed, int64_t index, double val_fraction) {
  const uint64_t h = mix64(mix64(seed) ^ static_cast<uint64_t>(index));
  return static_cast<double>(h >> 11) * 0x1.0p-53 < val_fraction;
}

// Encodes documents on a fixed pool of worker threads, in batches, handing the results back
// in document order. The threads live as long as the encoder: each keeps its tokenizer
// word cache warm (std::async would start a fresh thread, and an empty cache, per batch).
// With one thread it encodes inline.
class BatchEncoder {
 public:
  using Sink = std::function<void(int64_t index, const std::vector<int32_t>& ids)>;
  BatchEncoder(const Tokenizer& tok, int threads, Sink sink) : tok_(tok), threads_(threads), sink_(std::move(sink)) {
    for (int i = 0; threads_ > 1 && i < threads_; ++i) workers_.emplace_back([this] { work(); });
  }
  ~BatchEncoder() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;  // after an error or a cancel, queued batches are dropped
    }
    work_cv_.notify_all();
    for (auto& w : workers_) w.join();
  }

  void add(std::string_view doc) {
    if (threads_ <= 1) {
      sink_(next_index_++, tok_.encode(std::string(doc)));
      return;
    }
    if (!batch_) batch_ = std::make_shared<Job>();
    batch_->docs.emplace_back(doc);
    batch_bytes_ += doc.size();
    if (batch_bytes_ >= kBatchBytes) submit();
  }
  // Waits for every batch and passes the last results on.
  void finish() {
    if (batch_) submit();
    while (!order_.empty()) drain_one();
  }

 private:
  static constexpr size_t kBatchBytes = 256 << 10;
  struct Job {
    int64_t first = 0;
    std::vector<std::string> docs;
    std::vector<std::vector<int32_t>> ids;
    std::exception_ptr error;
    bool done = false;
  };

  void work() {
    while (true) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        job->ids.reserve(job->docs.size());
        for (const auto& d : job->docs) job->ids.push_back(tok_.encode(d));
      } catch (...) {
        job->error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        job->done = true;
      }
      done_cv_.notify_all();
    }
  }
  void submit() {
    // At most two batches per thread in flight: bounded memory, and the workers never idle.
    while (order_.size() >= 2 * static_cast<size_t>(threads_)) drain_one();
    batch_->first = next_index_;
    next_index_ += static_cast<int64_t>(batch_->docs.size());
    order_.push_back(batch_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(batch_));
    }
    work_cv_.notify_one();
    batch_.reset();
    batch_bytes_ = 0;
  }
  void drain_one() {
    std::shared_ptr<Job> job = std::move(order_.front());
    order_.pop_front();
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [&] { return job->done; });
    }
    if (job->error) std::rethrow_exception(job->error);
    for (size_t i = 0; i < job->ids.size(); ++i) sink_(job->first + static_cast<int64_t>(i), job->ids[i]);
  }

  const Tokenizer& tok_;
  int threads_;
  Sink sink_;
  int64_t next_index_ = 0;
  std::shared_ptr<Job> batch_;
  size_t batch_bytes_ = 0;
  std::deque<std::shared_ptr<Job>> order_;  // submitted, in document order (this thread only)
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Job>> queue_;  // waiting for a worker (under mu_)
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

void for_each_document(const std::string& path, const std::function<bool(std::string_view document)>& fn,
                       const ProgressFn& progress, const CancelFlag* cancel) {
  read_documents(path, list_files(path), fn, "reading corpus", progress, cancel);
}

std::string corpus_fingerprint(const std::string& path) {
  Fnv1a64 h;
  hash_files(h, list_files(path));
  return h.hex();
}

TokenDataset load_dataset(const std::string& path, const Tokenizer& tokenizer, const DatasetOptions& options) {
  if (tokenizer.vocab_size() > 65536)
    throw std::invalid_argument("tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                                " tokens; encoded corpora store ids as 16 bits, so at most 65536");
  if (options.context < 1)
    throw std::invalid_argument("context " + std::to_string(options.context) + " must be positive");
  if (!(options.val_fraction > 0.0 && options.val_fraction < 1.0))
    throw std::invalid_argument("val_fraction " + std::to_string(options.val_fraction) + " must be between 0 and 1");

  fs::path cache_dir, cache_file;
  if (!options.cache_dir.empty()) {
    cache_dir = fs::absolute(options.cache_dir);
    std::error_code ec;
    fs::create_directories(cache_dir, ec);
    if (ec)
      throw std::runtime_error("cannot create the token cache folder " + quote_path(cache_dir) + ": " + ec.message());
  }
  const std::vector<CorpusFile> files = list_files(path, cache_dir);
  TokenDataset d;
  d.cache_key = cache_key(tokenizer, files, options);
  if (!cache_dir.empty()) {
    cache_file = cache_dir / ("tokens-" + d.cache_key + ".bin");
    if (read_cache(cache_file, d.cache_key, d)) {
      if (options.progress) options.progress("loading cached tokens", 1.0);
      return d;
    }
  }

  const auto eot = static_cast<uint16_t>(tokenizer.end_of_text_id());
  BatchEncoder encoder(tokenizer,
                       options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency()),
                       [&](int64_t index, const std::vector<int32_t>& ids) {
                         if (static_cast<int64_t>(ids.size()) < options.context) {
                           ++d.dropped_short;
                           return;
                         }
                         const bool val = in_validation(options.seed, index, options.val_fraction);
                         auto& dst = val ? d.val : d.train;
                         ++(val ? d.val_documents : d.train_documents);
                         dst.insert(dst.end(), ids.begin(), ids.end());
                         dst.push_back(eot);
                       });
  read_documents(
      path, files,
      [&](std::string_view doc) {
        ++d.documents;
        encoder.add(doc);
        return true;
      },
      "encoding corpus", options.progress, options.cancel);
  encoder.finish();

  const std::string ctx = std::to_string(options.context);
  const int64_t kept = d.train_documents + d.val_documents;
  if (kept == 0)
    throw CorpusError("corpus '" + path + "': none of its " + std::to_string(d.documents) +
                      " document(s) has at least " + ctx + " tokens (" + std::to_string(d.dropped_short) +
                      " too short for context " + ctx + "); use a shorter context or a corpus of longer documents");
  if (d.train_documents == 0 || d.val_documents == 0)
    throw CorpusError("corpus '" + path + "': the " + std::string(d.val_documents == 0 ? "validation" : "training") +
                      " split is empty (" + std::to_string(kept) + " document(s) of at least " + ctx + " tokens, " +
                      std::to_string(d.dropped_short) + " shorter ones dropped, val_fraction " +
                      std::to_string(options.val_fraction) + "); add more documents or change val_fraction");
  if (!cache_file.empty()) write_cache(cache_file, d.cache_key, d);
  return d;
}

}  // namespace hsm
