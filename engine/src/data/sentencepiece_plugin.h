#pragma once
// Sentencepiece behind a plugin boundary.
//
// Debian's libsentencepiece embeds its own copy of protobuf-lite and exports its symbols;
// LibTorch links the system libprotobuf. Linked into one executable, the two copies
// interpose each other's symbols and the process crashes while starting up (measured:
// SIGSEGV in protobuf's static initialisers). So sentencepiece lives in a small plugin,
// libhsm_sentencepiece.so, opened with RTLD_LOCAL | RTLD_DEEPBIND: its protobuf symbols
// stay private to it. The interface is only virtual functions and standard types, so no
// symbol has to be resolved across the boundary, and nothing throws across it (errors come
// back as strings).
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hsm::spm {

struct Processor {
  virtual ~Processor() = default;
  // Each returns "" on success, else sentencepiece's error text.
  virtual std::string load(const std::string& model_bytes) = 0;
  virtual std::string encode(std::string_view text, std::vector<int>* ids) const = 0;
  virtual std::string decode(const std::vector<int>& ids, std::string* text) const = 0;
  virtual int piece_size() const = 0;
  virtual int piece_to_id(const std::string& piece) const = 0;
  virtual std::string id_to_piece(int id) const = 0;
  virtual bool is_byte(int id) const = 0;
  virtual bool is_control(int id) const = 0;
  virtual bool is_unknown(int id) const = 0;
};

struct Library {
  virtual ~Library() = default;
  virtual std::unique_ptr<Processor> new_processor() const = 0;
  // Trains on `lines` (each freed once sentencepiece has copied it); "" on success.
  virtual std::string train(const std::unordered_map<std::string, std::string>& args, std::vector<std::string>& lines,
                            unsigned seed, std::string* model_bytes) const = 0;
};

// The plugin, opened on first use. Looked for in $HSM_PLUGIN_DIR, next to the executable,
// in <executable>/../lib/hsm-studio, and in the build tree. Throws std::runtime_error
// saying where it looked when it is not found.
const Library& library();

}  // namespace hsm::spm

// The plugin's one exported symbol.
extern "C" const hsm::spm::Library* hsm_sentencepiece_library();
