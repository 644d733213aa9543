// libFuzzer target: the corpus readers (hsm::for_each_document). The first byte of an input
// picks the file's extension, and so the format (TinyStories text, JSONL, a JSON array, a
// plain file), and after how many documents the callback stops reading; the other bytes are
// the file. Its promise: documents are non-empty, trimmed, valid UTF-8, or the file is
// refused with a CorpusError; never a crash or another exception.
#include <cstring>

#include "fuzz_util.h"
#include "hsm/corpus.h"

namespace {

constexpr const char* kNames[] = {"corpus.txt", "corpus.jsonl", "corpus.json", "corpus.md"};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Well-formed UTF-8 as RFC 3629 has it, written independently of the reader's own check.
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0) return false;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);  // the lead byte's payload bits
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hsm::fuzz::ScratchDir scratch("corpus");
  if (size == 0) return 0;
  const char* name = kNames[data[0] % 4];
  const int stop_after = data[0] / 4 % 8;  // 0: read to the end
  const std::string path = scratch.write(name, hsm::fuzz::as_text(data + 1, size - 1));
  int documents = 0;
  try {
    hsm::for_each_document(path, [&](std::string_view doc) {
      if (doc.empty()) hsm::fuzz::broken("an empty document");
      if (is_space(doc.front()) || is_space(doc.back())) hsm::fuzz::broken("a document that is not trimmed");
      if (!valid_utf8(doc)) hsm::fuzz::broken("a document that is not valid UTF-8");
      if (doc.size() > size) hsm::fuzz::broken("a document longer than the file");
      return ++documents != stop_after;
    });
  } catch (const hsm::CorpusError&) {
    // a refusal naming the file and what is wrong
  }
  return 0;
}
