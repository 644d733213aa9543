#pragma once
// Small non-cryptographic hashes (internal header). They key caches and check files for
// corruption, so they must give the same value on every run, machine and build: no
// std::hash, no seeds from the environment.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace hsm {

// FNV-1a, 64 bits. Byte-wise, so it is endianness-independent; fast enough for the
// few hundred KB it hashes (tokenizer models, cache-key inputs).
class Fnv1a64 {
 public:
  Fnv1a64& update(std::string_view bytes) {
    for (unsigned char c : bytes) {
      h_ ^= c;
      h_ *= kPrime;
    }
    return *this;
  }
  // A field followed by its length, so ("ab","c") and ("a","bc") hash differently.
  Fnv1a64& field(std::string_view bytes) {
    update(bytes);
    return number(bytes.size());
  }
  // Little-endian bytes, whatever the machine.
  Fnv1a64& number(uint64_t v) {
    char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    return update(std::string_view(le, 8));
  }
  uint64_t value() const { return h_; }
  std::string hex() const { return to_hex(h_); }

  static std::string to_hex(uint64_t v) {
    static const char* digits = "0123456789abcdef";
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 0xF];
    return s;
  }

 private:
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// A word-at-a-time checksum for large buffers (encoded-corpus caches, up to ~1 GB): eight
// bytes per multiply instead of one. Only compared against itself on the same machine
// (the cache holds native-endian tokens anyway).
inline uint64_t checksum_words(const void* data, size_t size, uint64_t h = 0x9e3779b97f4a7c15ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h ^ (h >> 32);
}

// SplitMix64's finaliser: a well-mixed 64-bit function of a 64-bit input.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace hsm
