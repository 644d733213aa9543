// Sentencepiece BPE tokenizer (docs/architecture.md). Settings follow llama2.c's custom TinyStories
// vocabularies, changed for an exact round trip (docs/architecture.md): identity normalisation,
// no whitespace clean-up, no dummy prefix, byte fallback for anything not in the vocabulary.
#include "hsm/tokenizer.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <random>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "io/hash_util.h"
#include "hsm/corpus.h"
#include "io/io_util.h"
#include "data/sentencepiece_plugin.h"

namespace hsm {

struct Tokenizer::Impl {
  std::string bytes;
  std::string hash;
  std::unique_ptr<spm::Processor> sp;  // from the sentencepiece plugin
  int32_t vocab = 0;
  int32_t eot = -1;
  // Byte-fallback ids of U+2581's three UTF-8 bytes; see Tokenizer::encode.
  std::array<int, 3> lower_block_ids{};
  bool escape_lower_block = false;
  // Whether encode() may cut text into words and cache their ids (see pieces_start_words).
  bool word_cache = false;
  uint64_t id = 0;  // tells the per-thread word caches apart
};

namespace {

namespace fs = std::filesystem;

// Sentencepiece writes spaces as U+2581 "▁" inside pieces and turns every ▁ back into a
// space when decoding, so a ▁ in the text itself would come back as a space.
constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";

// 256 byte tokens + <unk> + <|endoftext|>, and at least one learned piece.
constexpr int kMinVocab = 259;
// Datasets store token ids as uint16 (corpus.h).
constexpr int kMaxVocab = 65536;

// Reads the few NormalizerSpec fields that decide whether encoding is local (no dummy
// prefix, no whitespace clean-up, no normalisation rules) from a serialized ModelProto.
// The installed sentencepiece ships no .proto headers, so this walks the protobuf wire
// format itself: ModelProto.normalizer_spec = 3; NormalizerSpec.precompiled_charmap = 2,
// add_dummy_prefix = 3, remove_extra_whitespaces = 4, escape_whitespaces = 5 (the bools
// default to true when absent).
class WireReader {
 public:
  explicit WireReader(std::string_view s) : s_(s) {}
  bool done() const { return s_.empty() || bad_; }
  bool bad() const { return bad_; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (s_.empty()) break;
      const auto b = static_cast<unsigned char>(s_.front());
      s_.remove_prefix(1);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    bad_ = true;
    return 0;
  }
  // Reads one field; returns its number, the varint value or the length-delimited bytes.
  uint32_t next(uint64_t* value, std::string_view* bytes) {
    const uint64_t key = varint();
    switch (key & 7) {
      case 0:
        *value = varint();
        break;
      case 1:
        skip(8);
        break;
      case 5:
        skip(4);
        break;
      case 2: {
        const uint64_t n = varint();
        if (n > s_.size()) {
          bad_ = true;
          return 0;
        }
        *bytes = s_.substr(0, n);
        s_.remove_prefix(n);
        break;
      }
      default:
        bad_ = true;
        return 0;
    }
    return static_cast<uint32_t>(key >> 3);
  }

 private:
  void skip(size_t n) {
    if (n > s_.size()) bad_ = true;
    s_.remove_prefix(std::min(n, s_.size()));
  }
  std::string_view s_;
  bool bad_ = false;
};

bool normalizer_is_local(std::string_view model) {
  std::string_view spec;
  bool found = false;
  for (WireReader r(model); !r.done();) {
    uint64_t v = 0;
    std::string_view b;
    if (r.next(&v, &b) == 3) spec = b, found = true;
    if (r.bad()) return false;
  }
  if (!found) return false;
  bool charmap = false, dummy_prefix = true, remove_ws = true, escape_ws = true;
  for (WireReader r(spec); !r.done();) {
    uint64_t v = 0;
    std::string_view b;
    switch (r.next(&v, &b)) {
      case 2:
        charmap = !b.empty();
        break;
      case 3:
        dummy_prefix = v != 0;
        break;
      case 4:
        remove_ws = v != 0;
        break;
      case 5:
        escape_ws = v != 0;
        break;
      default:
        break;
    }
    if (r.bad()) return false;
  }
  return !charmap && !dummy_prefix && !remove_ws && escape_ws;
}

// True when no piece holds a ▁ right after another character: then no piece spans the
// point before a space that follows a non-space, and text cut there encodes part by part
// exactly as it does whole (BPE merges only adjacent symbols inside a piece). Our models
// always pass (sentencepiece puts spaces only at the start of pieces, or makes
// whitespace-only pieces); anything else falls back to whole-text encoding.
bool pieces_start_words(const spm::Processor& sp) {
  for (int id = 0; id < sp.piece_size(); ++id) {
    if (sp.is_byte(id) || sp.is_control(id) || sp.is_unknown(id)) continue;
    const std::string p = sp.id_to_piece(id);
    for (size_t at = p.find(kSpaceSymbol, 1); at != std::string::npos; at = p.find(kSpaceSymbol, at + 1))
      if (at < kSpaceSymbol.size() || p.compare(at - kSpaceSymbol.size(), kSpaceSymbol.size(), kSpaceSymbol) != 0)
        return false;
  }
  return true;
}

// Ids of recently seen words, one cache per thread so encoding on several threads needs no
// lock. Sentencepiece's BPE costs ~0.5 µs per byte; most words of a corpus repeat.
struct WordCache {
  uint64_t owner = 0;
  std::unordered_map<std::string, std::vector<int>> ids;
};
constexpr size_t kMaxCachedWord = 64;  // longer "words" (CJK runs, URLs) are encoded directly
constexpr size_t kMaxCacheEntries = 1 << 18;

std::atomic<uint64_t> next_tokenizer_id{1};

template <typename T>
const T& checked(const std::shared_ptr<const T>& p) {
  if (!p) throw std::logic_error("hsm::Tokenizer used before it was trained or loaded");
  return *p;
}

void report(const ProgressFn& progress, const std::string& stage, double fraction) {
  if (progress) progress(stage, fraction);
}

void check_cancel(const CancelFlag* cancel) {
  if (cancel && cancel->load()) throw Cancelled();
}

// Calls f for each line of a document, cutting lines longer than max_len bytes: sentencepiece
// skips such lines without a word. Cuts go before a space when there is one in the second
// half of the piece (words stay whole), otherwise at a UTF-8 character boundary.
template <typename F>
void for_each_training_line(std::string_view doc, size_t max_len, F&& f) {
  while (!doc.empty()) {
    const size_t nl = doc.find('\n');
    std::string_view line = doc.substr(0, nl);
    doc = nl == std::string_view::npos ? std::string_view() : doc.substr(nl + 1);
    while (line.size() > max_len) {
      size_t cut = line.rfind(' ', max_len);
      if (cut == std::string_view::npos || cut < max_len / 2) {
        cut = max_len;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
        if (cut == 0) cut = max_len;  // not UTF-8 after all; any cut will do
      }
      f(line.substr(0, cut));
      line.remove_prefix(cut);
    }
    if (!line.empty()) f(line);
  }
}

// Keeps a uniform sample of at most `capacity` lines (reservoir sampling, Algorithm R), so
// memory stays bounded on the full 2 GB TinyStories. mt19937_64's output is fixed by the
// standard (std::uniform_int_distribution's is not), so a seed gives the same sample on
// every platform.
class LineSample {
 public:
  LineSample(int64_t capacity, uint64_t seed) : capacity_(capacity), rng_(seed) {}
  void add(std::string_view line) {
    ++seen_;
    if (capacity_ <= 0 || static_cast<int64_t>(lines_.size()) < capacity_) {
      lines_.emplace_back(line);
      return;
    }
    const uint64_t j = rng_() % seen_;
    if (j < static_cast<uint64_t>(capacity_)) lines_[j].assign(line);
  }
  std::vector<std::string>& lines() { return lines_; }
  uint64_t seen() const { return seen_; }

 private:
  int64_t capacity_;
  std::mt19937_64 rng_;
  uint64_t seen_ = 0;
  std::vector<std::string> lines_;
};

// Fails before a long training run rather than after it when the output cannot be written.
void check_writable(const std::string& out_path) {
  const fs::path out(out_path);
  if (out.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(out.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create folder '" + out.parent_path().string() + "': " + ec.message());
  }
  const std::string probe = out_path + ".probe.tmp." + std::to_string(::getpid());  // its own: see save()
  {
    std::ofstream f(probe, std::ios::binary | std::ios::trunc);
    if (!f)
      throw std::runtime_error("cannot write the tokenizer to '" + out_path +
                               "': check the folder exists and is writable");
  }
  std::error_code ec;
  fs::remove(probe, ec);
}

}  // namespace

Tokenizer Tokenizer::train(const std::string& corpus_path, const std::string& out_path,
                           const TokenizerTrainOptions& options) {
  if (options.vocab_size < kMinVocab || options.vocab_size > kMaxVocab)
    throw std::invalid_argument("tokenizer vocabulary size " + std::to_string(options.vocab_size) + " must be in " +
                                std::to_string(kMinVocab) + ".." + std::to_string(kMaxVocab) +
                                " (256 byte tokens, <unk> and <|endoftext|> come first; ids are stored as 16 bits)");
  if (options.max_sentence_length < 16)
    throw std::invalid_argument("max_sentence_length " + std::to_string(options.max_sentence_length) +
                                " is too short: use at least 16 bytes");
  if (options.input_sentence_size < 0)
    throw std::invalid_argument("input_sentence_size must be 0 (every line) or positive");
  check_writable(out_path);

  // 1. Lines of the corpus, sampled.
  LineSample sample(options.input_sentence_size, options.seed);
  for_each_document(
      corpus_path,
      [&](std::string_view doc) {
        for_each_training_line(doc, static_cast<size_t>(options.max_sentence_length),
                               [&](std::string_view line) { sample.add(line); });
        return true;
      },
      [&](const std::string&, double f) { report(options.progress, "reading corpus", f); }, options.cancel);
  check_cancel(options.cancel);

  // 2. Training. Sentencepiece cannot be interrupted or asked for progress, so this stage
  // reports an unknown fraction and cancellation takes effect when it ends.
  report(options.progress, "training tokenizer", -1.0);
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      // Digits one by one (as llama2.c): numbers then share pieces instead of each frequent
      // number taking a slot.
      {"split_digits", "true"},
      // Runs of spaces (indentation, double spaces after a full stop) may become pieces.
      {"allow_whitespace_only_pieces", "true"},
      {"user_defined_symbols", kEndOfText},
      {"unk_id", "0"},
      {"bos_id", "-1"},  // encode() adds nothing: documents are delimited by <|endoftext|>
      {"eos_id", "-1"},
      {"pad_id", "-1"},
      // Rare characters are left to byte fallback instead of taking vocabulary slots.
      {"character_coverage", "0.9995"},
      {"max_sentence_length", std::to_string(options.max_sentence_length)},
      {"input_sentence_size", "0"},  // already sampled above
      {"num_threads", std::to_string(std::max(1, options.threads))},
      // With a hard limit sentencepiece fails on a small corpus with a bare "Vocabulary size
      // too high"; without it, it trains what the corpus supports and we say so below.
      {"hard_vocab_limit", "false"},
      {"minloglevel", "2"},  // its INFO/WARNING lines would flood the CLI and the app's log
  };
  std::string model;
  const uint64_t lines = sample.seen();
  const std::string error =
      spm::library().train(args, sample.lines(), static_cast<unsigned int>(options.seed & 0x7fffffff), &model);
  if (!error.empty()) {
    // Every character kept by character_coverage needs a slot besides the 258 fixed ones.
    const std::string& msg = error;
    const size_t at = msg.find("smaller than required_chars.");
    int asked = 0, needed = 0;
    if (at != std::string::npos &&
        std::sscanf(msg.c_str() + at, "smaller than required_chars. %d vs %d", &asked, &needed) == 2)
      throw CorpusError("a vocabulary of " + std::to_string(asked) + " tokens is too small for corpus '" + corpus_path +
                        "': it needs at least " + std::to_string(needed) +
                        " (256 byte tokens, <unk>, <|endoftext|> and one per common character); choose a larger "
                        "vocabulary size");
    throw CorpusError("training the tokenizer on '" + corpus_path + "' (" + std::to_string(lines) +
                      " lines) failed: " + msg);
  }
  check_cancel(options.cancel);

  Tokenizer t = from_bytes(model);
  if (t.vocab_size() < options.vocab_size)
    throw CorpusError("corpus '" + corpus_path + "' is too small for a vocabulary of " +
                      std::to_string(options.vocab_size) + " tokens: BPE ran out of merges at " +
                      std::to_string(t.vocab_size()) + "; choose a vocabulary size of at most " +
                      std::to_string(t.vocab_size()) + " or train on more text");
  t.save(out_path);
  report(options.progress, "training tokenizer", 1.0);
  return t;
}

Tokenizer Tokenizer::load(const std::string& path) {
  // Refused by its size before it is read: a tokenizer.model of 2 GiB or more aborts inside
  // protobuf after reading it twice (issue 34). Vocabularies are at most kMaxVocab pieces;
  // a sentencepiece model of that size takes a few MB.
  constexpr uintmax_t kMaxTokenizerBytes = 64u << 20;
  std::error_code size_error;
  const uintmax_t size = fs::file_size(path, size_error);
  if (!size_error && size > kMaxTokenizerBytes)
    throw std::runtime_error("tokenizer '" + path + "' is " + std::to_string(size >> 20) +
                             " MiB, larger than any tokenizer (at most " + std::to_string(kMaxTokenizerBytes >> 20) +
                             " MiB for " + std::to_string(kMaxVocab) + " tokens): it is not a tokenizer.model; put "
                             "the run's own back");
  const std::string bytes = read_text_file(path, "tokenizer");
  try {
    return from_bytes(bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot load tokenizer '" + path + "': " + e.what());
  }
}

Tokenizer Tokenizer::from_bytes(const std::string& model_bytes) {
  auto impl = std::make_shared<Impl>();
  // An empty string parses as an empty (but "valid") protobuf; reject it up front.
  if (model_bytes.empty()) throw std::runtime_error("the tokenizer model is empty");
  impl->sp = spm::library().new_processor();
  if (const std::string error = impl->sp->load(model_bytes); !error.empty())
    throw std::runtime_error("not a sentencepiece model (" + error + ")");
  impl->vocab = impl->sp->piece_size();
  impl->eot = impl->sp->piece_to_id(kEndOfText);
  if (impl->eot < 0 || impl->sp->id_to_piece(impl->eot) != kEndOfText)
    throw std::runtime_error(std::string("the model has no ") + kEndOfText +
                             " token: it was not made by `hsm tokenizer train`");
  impl->escape_lower_block = true;
  for (int i = 0; i < 3; ++i) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", static_cast<unsigned char>(kSpaceSymbol[i]));
    const int id = impl->sp->piece_to_id(piece);
    impl->lower_block_ids[i] = id;
    if (id < 0 || !impl->sp->is_byte(id)) impl->escape_lower_block = false;
  }
  impl->word_cache = normalizer_is_local(model_bytes) && pieces_start_words(*impl->sp);
  impl->id = next_tokenizer_id++;
  impl->bytes = model_bytes;
  impl->hash = Fnv1a64().update(model_bytes).hex();
  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
  const Impl& m = checked(impl_);
  static_assert(sizeof(int) == sizeof(int32_t), "sentencepiece ids are int");
  std::vector<int> ids;
  auto encode_whole = [&](std::string_view part) {
    if (const std::string error = m.sp->encode(part, &ids); !error.empty())
      throw std::runtime_error("tokenizer: encoding failed: " + error);
  };
  std::vector<int32_t> out;
  // Text cut before each space that follows a non-space ("Once| upon| a|  time"): see
  // pieces_start_words for why this gives the ids of the whole.
  auto encode_part = [&](std::string_view part) {
    if (!m.word_cache) {
      encode_whole(part);
      out.insert(out.end(), ids.begin(), ids.end());
      return;
    }
    thread_local WordCache cache;
    if (cache.owner != m.id || cache.ids.size() > kMaxCacheEntries) {
      cache.ids.clear();
      cache.owner = m.id;
    }
    size_t start = 0;
    for (size_t i = 1; i <= part.size(); ++i) {
      if (i < part.size() && !(part[i] == ' ' && part[i - 1] != ' ')) continue;
      const std::string_view word = part.substr(start, i - start);
      start = i;
      if (word.size() > kMaxCachedWord) {
        encode_whole(word);
        out.insert(out.end(), ids.begin(), ids.end());
        continue;
      }
      auto [it, inserted] = cache.ids.try_emplace(std::string(word));
      if (inserted) {
        try {
          encode_whole(word);
        } catch (...) {
          cache.ids.erase(it);
          throw;
        }
        it->second = ids;
      }
      out.insert(out.end(), it->second.begin(), it->second.end());
    }
  };
  // A literal U+2581 is sent as its three byte tokens, which decode to the bytes themselves
  // (sentencepiece would otherwise use its ▁ piece and decode it as a space).
  size_t pos = m.escape_lower_block ? text.find(kSpaceSymbol) : std::string::npos;
  std::string_view rest(text);
  while (true) {
    const std::string_view part = rest.substr(0, pos);
    if (!part.empty()) encode_part(part);
    if (pos == std::string_view::npos) break;
    out.insert(out.end(), m.lower_block_ids.begin(), m.lower_block_ids.end());
    rest.remove_prefix(pos + kSpaceSymbol.size());
    pos = rest.find(kSpaceSymbol);
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const Impl& m = checked(impl_);
  for (int32_t id : ids)
    if (id < 0 || id >= m.vocab)
      throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                              std::to_string(m.vocab - 1) + ")");
  std::string text;
  if (const std::string error = m.sp->decode(ids, &text); !error.empty())
    throw std::runtime_error("tokenizer: decoding failed: " + error);
  return text;
}

std::string Tokenizer::piece(int32_t id) const {
  const Impl& m = checked(impl_);
  if (id < 0 || id >= m.vocab)
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                            std::to_string(m.vocab - 1) + ")");
  std::string p = m.sp->id_to_piece(id);
  if (m.sp->is_byte(id)) return p;  // "<0xE2>": one byte of a longer character
  std::string out;
  for (size_t i = 0; i < p.size();) {
    if (p.compare(i, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
      out += ' ';
      i += kSpaceSymbol.size();
    } else {
      out += p[i++];
    }
  }
  return out;
}

int32_t Tokenizer::vocab_size() const { return checked(impl_).vocab; }
int32_t Tokenizer::end_of_text_id() const { return checked(impl_).eot; }
const std::string& Tokenizer::bytes() const { return checked(impl_).bytes; }
const std::string& Tokenizer::hash() const { return checked(impl_).hash; }

void Tokenizer::save(const std::string& path) const {
  const Impl& m = checked(impl_);
  const fs::path p(path);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create folder '" + p.parent_path().string() + "': " + ec.message());
  }
  write_file_atomic(path, m.bytes, /*shared=*/true);  // the tokenizer cache is filled by several trainers at once
}

}  // namespace hsm
