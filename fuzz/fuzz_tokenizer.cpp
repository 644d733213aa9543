// libFuzzer target: the tokenizer model loader (hsm::Tokenizer::from_bytes, what load() and
// a checkpoint's tokenizer.model go through) on any bytes. Its promise: bytes are either
// refused with an exception that says why, or give a tokenizer that encodes, decodes and
// shows its pieces without crashing. Sentencepiece itself runs in the plugin
// (libhsm_sentencepiece.so from this build tree), so its parsing is fuzzed too.
#include <stdexcept>

#include "fuzz_util.h"
#include "hsm/tokenizer.h"

namespace {

// Text that touches the tokenizer's special paths: spaces (word cache), the end-of-text
// token, a literal U+2581 (escaped to byte tokens), multi-byte characters (byte fallback).
const std::string kSample = "Once upon a  time<|endoftext|>\n\xE2\x96\x81 caf\xC3\xA9 \xF0\x9F\x99\x82 1234";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hsm::Tokenizer tokenizer;
  try {
    tokenizer = hsm::Tokenizer::from_bytes(std::string(hsm::fuzz::as_text(data, size)));
  } catch (const std::runtime_error&) {
    return 0;  // not a model we can use, and the message says why
  }
  const int32_t vocab = tokenizer.vocab_size();
  if (vocab <= 0) hsm::fuzz::broken("a loaded tokenizer has " + std::to_string(vocab) + " tokens");
  if (tokenizer.end_of_text_id() < 0 || tokenizer.end_of_text_id() >= vocab)
    hsm::fuzz::broken("the end-of-text id is outside the vocabulary");
  for (int32_t id = 0; id < vocab; ++id) tokenizer.piece(id);
  try {
    const std::vector<int32_t> ids = tokenizer.encode(kSample);
    for (int32_t id : ids)
      if (id < 0 || id >= vocab) hsm::fuzz::broken("encode gave id " + std::to_string(id) + " outside the vocabulary");
    tokenizer.decode(ids);
  } catch (const std::runtime_error&) {
    // sentencepiece refused the text or the ids, with its reason
  }
  return 0;
}
