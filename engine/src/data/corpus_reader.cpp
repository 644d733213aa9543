// Corpus reading (docs/architecture.md): the formats, the file list, and the documents in order. Files
// are streamed in 1 MB chunks: the full TinyStories (2 GB of text, or JSON arrays of
// 50-250 MB) never sits in memory as text, and progress / cancellation are checked once
// per chunk.
#include "hsm/corpus.h"

#include "hsm/errors.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>

#include "data/corpus_files.h"
#include "io/hash_util.h"

namespace hsm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kChunk = size_t{1} << 20;         // read size: also the progress / cancel granularity
constexpr size_t kBinaryProbe = size_t{64} << 10;  // a NUL in the first 64 KB: a binary file
constexpr std::string_view kBom = "\xEF\xBB\xBF";

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

}  // namespace

// The files of a corpus, in reading order. A folder is read recursively, sorted by path
// (element by element, so a sub-folder's files stay together), without hidden files or
// folders; `exclude` (the encoded-token cache, when it lies inside the corpus) is skipped.
std::vector<CorpusFile> list_files(const std::string& path, const fs::path& exclude) {
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
  // An unreadable sub-folder is refused, as an unreadable file is (issue 34): skipping it would
  // train on part of the corpus without a word.
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  if (ec) throw CorpusError("cannot read corpus folder " + quote_path(root) + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw CorpusError("cannot read corpus folder " + quote_path(root) + ": " + ec.message());
    const fs::path& p = it->path();
    const bool dir = it->is_directory(ec);
    if (is_hidden(p) || (dir && check_exclude && fs::equivalent(p, exclude, ec))) {
      if (dir) it.disable_recursion_pending();
      continue;
    }
    if (dir) {
      std::error_code open_error;
      fs::directory_iterator probe(p, open_error);
      if (open_error)
        throw CorpusError("cannot read the corpus sub-folder " + quote_path(p) + " (" + open_error.message() +
                          "): make it readable, or move it out of the corpus (its files would be left out)");
      continue;
    }
    if (it->is_regular_file(ec)) files.push_back({p, it->file_size(ec)});
  }
  if (ec) throw CorpusError("cannot read corpus folder " + quote_path(root) + ": " + ec.message());
  std::sort(files.begin(), files.end(), [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
  if (files.empty())
    throw CorpusError("corpus folder " + quote_path(root) + " holds no files (hidden ones are skipped)");
  return files;
}

namespace {

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
  // The buffer is sized to the file when that is under a chunk: a folder of short stories
  // (or a fuzzer's small inputs) would otherwise zero a fresh 1 MB per file.
  FileReader(const fs::path& path, uint64_t size, ReadTracker& tracker)
      : path_(path), tracker_(tracker), buf_(static_cast<size_t>(std::min<uint64_t>(kChunk, size + 1))) {
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
    if (trim(line) == kStorySeparator) {
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
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
      throw CorpusError(where + ": not valid JSON (" + json_error_text(e.what()) + ")");
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
    throw CorpusError(where() + ": invalid JSON at offset " + std::to_string(at) + " (" + json_error_text(e.what()) + ")");
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

}  // namespace

// Reads the files in order. Throws CorpusError when not one non-empty document was found.
void read_documents(const std::string& corpus, const std::vector<CorpusFile>& files, const DocumentFn& fn,
                    const std::string& stage, const ProgressFn& progress, const CancelFlag* cancel) {
  uint64_t total = 0;
  for (const auto& f : files) total += f.size;
  ReadTracker tracker(total, stage, progress, cancel);
  tracker.check();
  Emitter emit{fn};
  for (const auto& f : files) {
    FileReader reader(f.path, f.size, tracker);
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

void for_each_document(const std::string& path, const std::function<bool(std::string_view document)>& fn,
                       const ProgressFn& progress, const CancelFlag* cancel) {
  read_documents(path, list_files(path), fn, "reading corpus", progress, cancel);
}

std::string corpus_fingerprint(const std::string& path) {
  Fnv1a64 h;
  hash_files(h, list_files(path));
  return h.hex();
}

}  // namespace hsm
