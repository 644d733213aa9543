// libFuzzer target: the safetensors reader (hsm/safetensors.h) on any bytes. Its promise:
// a file is either read, every tensor's bytes matching its shape and dtype and all of them
// together no larger than the file, or refused with a SafetensorsError. Never a crash,
// another exception, or an allocation of what a header claims rather than what the file holds.
#include "fuzz_util.h"
#include "hsm/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hsm::fuzz::ScratchDir scratch("safetensors");
  const std::string path = scratch.write("model.safetensors", hsm::fuzz::as_text(data, size));
  try {
    const hsm::SafetensorsFile file = hsm::read_safetensors(path);
    uint64_t total = 0;
    for (const hsm::TensorBlob& t : file.tensors) {
      uint64_t bytes = hsm::dtype_size(t.dtype);
      for (int64_t dim : t.shape) bytes *= static_cast<uint64_t>(dim);
      if (bytes != t.data.size())
        hsm::fuzz::broken("tensor '" + t.name + "' holds " + std::to_string(t.data.size()) +
                          " bytes, its shape needs " + std::to_string(bytes));
      total += t.data.size();
    }
    if (total > size) hsm::fuzz::broken("the tensors hold more bytes than the file");
  } catch (const hsm::SafetensorsError&) {
    // a refusal with a message: what a damaged file should get
  }
  return 0;
}
