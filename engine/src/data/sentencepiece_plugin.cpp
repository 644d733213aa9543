// libhsm_sentencepiece.so: the only code that includes sentencepiece (see sentencepiece_plugin.h).
#include "data/sentencepiece_plugin.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <new>
#include <system_error>

namespace hsm::spm {
namespace {

// Sentencepiece reports most errors as a Status, but not all: a damaged model can make it
// throw (its Darts trie builder throws on an empty piece, found by fuzz/fuzz_tokenizer.cpp),
// and nothing may throw across the plugin boundary. So every call that can is made here,
// and an exception comes back as an error text like a Status would.
template <typename Call>
std::string guarded(Call&& call) {
  try {
    return call();
  } catch (const std::bad_alloc&) {
    return "sentencepiece ran out of memory (the machine's, or a limit such as ulimit -v): raise the limit or "
           "free memory";
  } catch (const std::system_error& e) {  // its trainer's threads under an address-space limit (issue 46)
    if (e.code() == std::errc::resource_unavailable_try_again)
      return std::string("sentencepiece could not start a thread (") + e.what() +
             "): out of memory or processes; raise the memory limit (ulimit -v) or the process limit (ulimit -u)";
    return std::string("sentencepiece failed: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("sentencepiece failed: ") + e.what();
  } catch (...) {
    return "sentencepiece failed with an unknown exception";
  }
}

class SpProcessor final : public Processor {
 public:
  std::string load(const std::string& bytes) override {
    return guarded([&] { return text(sp_.LoadFromSerializedProto(bytes)); });
  }
  std::string encode(std::string_view t, std::vector<int>* ids) const override {
    return guarded([&] { return text(sp_.Encode(t, ids)); });
  }
  std::string decode(const std::vector<int>& ids, std::string* out) const override {
    return guarded([&] { return text(sp_.Decode(ids, out)); });
  }
  int piece_size() const override { return sp_.GetPieceSize(); }
  int piece_to_id(const std::string& piece) const override { return sp_.PieceToId(piece); }
  std::string id_to_piece(int id) const override { return sp_.IdToPiece(id); }
  bool is_byte(int id) const override { return sp_.IsByte(id); }
  bool is_control(int id) const override { return sp_.IsControl(id); }
  bool is_unknown(int id) const override { return sp_.IsUnknown(id); }

 private:
  static std::string text(const sentencepiece::util::Status& s) {
    return s.ok() ? std::string() : (s.ToString().empty() ? "unknown sentencepiece error" : s.ToString());
  }
  sentencepiece::SentencePieceProcessor sp_;
};

// Feeds the lines to the trainer, freeing each once sentencepiece has copied it, so the
// sample is not held twice.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::vector<std::string>& lines) : lines_(lines) {}
  bool done() const override { return i_ >= lines_.size(); }
  void Next() override { std::string().swap(lines_[i_++]); }
  const std::string& value() const override { return lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string>& lines_;
  size_t i_ = 0;
};

class SpLibrary final : public Library {
 public:
  std::unique_ptr<Processor> new_processor() const override { return std::make_unique<SpProcessor>(); }
  std::string train(const std::unordered_map<std::string, std::string>& args, std::vector<std::string>& lines,
                    unsigned seed, std::string* model_bytes) const override {
    return guarded([&] {
      sentencepiece::SetRandomGeneratorSeed(seed);
      LineIterator it(lines);
      const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, model_bytes);
      return status.ok() ? std::string() : status.ToString();
    });
  }
};

}  // namespace
}  // namespace hsm::spm

extern "C" __attribute__((visibility("default"))) const hsm::spm::Library* hsm_sentencepiece_library() {
  static const hsm::spm::SpLibrary library;
  return &library;
}
