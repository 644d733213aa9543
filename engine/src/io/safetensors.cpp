#include "hsm/safetensors.h"

#include "hsm/errors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "io/json_brief.h"

#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>  // fsync
#endif

// Tensor bytes are stored little-endian and the engine fills TensorBlob::data by copying
// tensor memory as is, so a big-endian host would silently write byte-swapped weights.
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian tensor bytes; big-endian hosts are not supported");
#endif

namespace hsm {
namespace {

using nlohmann::json;

// The reference implementation refuses headers above 100 MB, so a corrupt length field
// cannot make a reader allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

struct DtypeInfo {
  const char* name;
  size_t size;
};

// The dtypes of the safetensors spec with a whole number of bytes per element.
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
    {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}, {"C64", 8},
};

std::string known_dtypes() {
  std::string list;
  for (const auto& d : kDtypes) list += std::string(list.empty() ? "" : ", ") + d.name;
  return list;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// numel × element size, or false when it overflows 64 bits (only a corrupt or hostile
// header gets there; real tensors are far smaller).
bool byte_size(const std::vector<int64_t>& shape, size_t elem, uint64_t* out) {
  uint64_t n = elem;
  for (int64_t dim : shape) {
    const auto d = static_cast<uint64_t>(dim);
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / d) return false;
    n *= d;
  }
  *out = n;
  return true;
}

void put_u64_le(uint64_t v, char out[8]) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_u64_le(const unsigned char in[8]) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | in[i];
  return v;
}

// ---- reading -----------------------------------------------------------------------

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw SafetensorsError("safetensors file '" + path_ + "': " + problem);
  }

  // Parses the header; nlohmann keeps the last of duplicate keys silently, so a parse
  // callback records the first duplicate (a file with two tensors of one name is ambiguous).
  json parse_header(const std::string& text) const {
    std::vector<std::set<std::string>> keys;  // one set per open object
    std::string duplicate;
    json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) {
        keys.emplace_back();
      } else if (event == json::parse_event_t::object_end) {
        if (!keys.empty()) keys.pop_back();
      } else if (event == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys.back().insert(key).second && duplicate.empty()) duplicate = key;
      }
      return true;
    };
    json header;
    try {
      header = json::parse(text, cb);
    } catch (const json::exception& e) {
      fail("header is not valid JSON (" + json_error_text(e.what()) + "); the file is corrupt or not safetensors");
    }
    if (!duplicate.empty()) fail("header has the key '" + duplicate + "' twice");
    if (!header.is_object()) fail("header is JSON but not an object (got " + std::string(header.type_name()) + ")");
    return header;
  }

  static bool is_nonneg_int(const json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  }

  TensorBlob parse_entry(const std::string& name, const json& entry, uint64_t* begin, uint64_t* end) const {
    const std::string where = "tensor '" + name + "': ";
    if (!entry.is_object()) fail(where + "expected an object {dtype, shape, data_offsets}, got " + json_brief(entry));
    for (const auto& item : entry.items())
      if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data_offsets")
        fail(where + "unknown key '" + item.key() + "' (allowed: dtype, shape, data_offsets)");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) fail(where + "missing '" + key + "'");

    TensorBlob blob;
    blob.name = name;
    const json& dtype = entry.at("dtype");
    if (!dtype.is_string()) fail(where + "dtype must be a string, got " + json_brief(dtype));
    blob.dtype = dtype.get<std::string>();
    size_t elem = 0;
    try {
      elem = dtype_size(blob.dtype);
    } catch (const SafetensorsError& e) {
      fail(where + e.what());
    }

    const json& shape = entry.at("shape");
    if (!shape.is_array()) fail(where + "shape must be an array of integers, got " + json_brief(shape));
    for (size_t i = 0; i < shape.size(); ++i) {
      const json& dim = shape[i];
      if (!dim.is_number_integer())
        fail(where + "shape[" + std::to_string(i) + "] is not an integer: " + json_brief(dim));
      if (!is_nonneg_int(dim)) fail(where + "shape[" + std::to_string(i) + "] is negative: " + json_brief(dim));
      if (dim.is_number_unsigned() && dim.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        fail(where + "shape[" + std::to_string(i) + "] is too large: " + json_brief(dim));
      blob.shape.push_back(dim.get<int64_t>());
    }

    const json& offsets = entry.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !is_nonneg_int(offsets[0]) || !is_nonneg_int(offsets[1]))
      fail(where + "data_offsets must be [begin, end] with non-negative integers, got " + json_brief(offsets));
    *begin = offsets[0].get<uint64_t>();
    *end = offsets[1].get<uint64_t>();
    if (*end < *begin)
      fail(where + "data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) + "] end before begin");

    uint64_t bytes = 0;
    if (!byte_size(blob.shape, elem, &bytes)) fail(where + "shape " + shape_str(blob.shape) + " overflows 64 bits");
    if (bytes != *end - *begin)
      fail(where + "shape " + shape_str(blob.shape) + " of " + blob.dtype + " needs " + std::to_string(bytes) +
           " bytes but data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) + "] hold " +
           std::to_string(*end - *begin));
    return blob;
  }

  SafetensorsFile read(bool header_only = false) {
    std::error_code ec;
    if (std::filesystem::is_directory(path_, ec)) fail("is a directory; expected a .safetensors file");
    // A FIFO would hold the open until a writer came, a device would never end (issue 46).
    if (std::filesystem::exists(path_, ec) && !std::filesystem::is_regular_file(path_, ec))
      fail("is not a regular file (a FIFO, a device or a socket); expected a .safetensors file");
    std::ifstream in(path_, std::ios::binary);
    if (!in) fail(std::string("cannot open: ") + std::strerror(errno));
    in.seekg(0, std::ios::end);
    const auto end_pos = in.tellg();
    if (end_pos < 0) fail("cannot determine the file size");
    const auto file_size = static_cast<uint64_t>(end_pos);
    in.seekg(0, std::ios::beg);
    if (file_size < 8)
      fail("file has " + std::to_string(file_size) +
           " bytes, fewer than the 8-byte header length; it is not safetensors");

    unsigned char prefix[8];
    in.read(reinterpret_cast<char*>(prefix), 8);
    if (!in) fail("cannot read the 8-byte header length");
    const uint64_t header_len = get_u64_le(prefix);
    if (header_len > kMaxHeaderBytes)
      fail("header length " + std::to_string(header_len) + " exceeds the " + std::to_string(kMaxHeaderBytes) +
           "-byte limit; the file is corrupt or not safetensors");
    if (header_len > file_size - 8)
      fail("header length " + std::to_string(header_len) + " is larger than the " + std::to_string(file_size - 8) +
           " bytes after the length field; the file is truncated or not safetensors");

    std::string text(header_len, '\0');
    in.read(text.data(), static_cast<std::streamsize>(header_len));
    if (!in) fail("cannot read the " + std::to_string(header_len) + "-byte header");
    const json header = parse_header(text);

    SafetensorsFile file;
    struct Range {
      uint64_t begin, end;
      size_t index;
    };
    std::vector<Range> ranges;
    std::vector<TensorBlob> blobs;
    for (const auto& item : header.items()) {
      if (item.key() == kMetadataKey) {
        if (!item.value().is_object())
          fail(std::string(kMetadataKey) + " must be an object of strings, got " + json_brief(item.value()));
        for (const auto& m : item.value().items()) {
          if (!m.value().is_string())
            fail(std::string(kMetadataKey) + "['" + m.key() + "'] must be a string, got " + json_brief(m.value()));
          file.metadata[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      Range r{0, 0, blobs.size()};
      blobs.push_back(parse_entry(item.key(), item.value(), &r.begin, &r.end));
      ranges.push_back(r);
    }

    // The tensors must tile the data section exactly: sorted by offset, each starts where
    // the previous ended, the first at 0 and the last at end of file. Anything else means
    // bytes that belong to two tensors, or to none.
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& x, const Range& y) { return x.begin != y.begin ? x.begin < y.begin : x.end < y.end; });
    uint64_t expected = 0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      const Range& r = ranges[i];
      const std::string what = "tensor '" + blobs[r.index].name + "' data_offsets [" + std::to_string(r.begin) + ", " +
                               std::to_string(r.end) + "]";
      if (r.begin < expected)
        fail(what + " overlap" + (i ? " tensor '" + blobs[ranges[i - 1].index].name + "'" : std::string()) +
             ", which ends at " + std::to_string(expected));
      if (r.begin > expected)
        fail(what + (i == 0 ? " do not start at 0"
                            : " leave a gap of " + std::to_string(r.begin - expected) + " bytes after tensor '" +
                                  blobs[ranges[i - 1].index].name + "'"));
      expected = r.end;
    }
    const uint64_t data_size = file_size - 8 - header_len;
    if (expected > data_size)
      fail("truncated: expected " + std::to_string(expected) + " bytes of tensor data, file has " +
           std::to_string(data_size) + " (was the save or the copy interrupted?)");
    if (expected < data_size)
      fail("oversized: expected " + std::to_string(expected) + " bytes of tensor data, file has " +
           std::to_string(data_size) + " (" + std::to_string(data_size - expected) + " trailing bytes)");

    // Offsets are contiguous, so one sequential pass reads every tensor straight into its blob.
    file.tensors.reserve(ranges.size());
    for (const Range& r : ranges) {
      TensorBlob& blob = blobs[r.index];
      if (header_only) {
        file.tensors.push_back(std::move(blob));
        continue;
      }
      blob.data.resize(r.end - r.begin);
      in.read(blob.data.data(), static_cast<std::streamsize>(blob.data.size()));
      if (!in) fail("read error in the data of tensor '" + blob.name + "'");
      file.tensors.push_back(std::move(blob));
    }
    return file;
  }

 private:
  std::string path_;
};

// ---- writing -------------------------------------------------------------------------

// Streams the file to `tmp`; blobs are written directly rather than concatenated first,
// since weights can be tens of MB. fsync before the rename so that a crash right after
// it cannot leave an empty file under the final name.
void write_tmp(const std::string& tmp, const std::string& header, const std::vector<const TensorBlob*>& blobs) {
  // A new file, never one found there (a planted link would be followed; issue 34).
  (void)::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  std::FILE* f = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
  if (!f) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw SafetensorsError("cannot write '" + tmp + "': " + std::strerror(err));
  }
  int err = 0;  // errno of the first failure
  auto check = [&](bool ok) {
    if (!ok && err == 0) err = errno ? errno : EIO;
  };
  char prefix[8];
  put_u64_le(header.size(), prefix);
  check(std::fwrite(prefix, 1, 8, f) == 8);
  check(std::fwrite(header.data(), 1, header.size(), f) == header.size());
  for (const TensorBlob* b : blobs)
    if (err == 0 && !b->data.empty()) check(std::fwrite(b->data.data(), 1, b->data.size(), f) == b->data.size());
  check(std::fflush(f) == 0);
#ifndef _WIN32
  if (err == 0) check(::fsync(fileno(f)) == 0);
#endif
  check(std::fclose(f) == 0);
  if (err != 0) {
    std::remove(tmp.c_str());
    throw SafetensorsError("writing '" + tmp + "' failed (" + std::strerror(err) + "; disk full?)");
  }
}

}  // namespace

const TensorBlob* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

size_t dtype_size(const std::string& dtype) {
  for (const auto& d : kDtypes)
    if (dtype == d.name) return d.size;
  throw SafetensorsError("unknown dtype '" + dtype + "' (known: " + known_dtypes() + ")");
}

void write_safetensors(const std::string& path, const std::vector<TensorBlob>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string where = "writing safetensors file '" + path + "': ";
  std::vector<const TensorBlob*> sorted;
  sorted.reserve(tensors.size());
  for (const auto& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const TensorBlob* x, const TensorBlob* y) { return x->name < y->name; });

  // ordered_json keeps the reference's key order: __metadata__ first, then the tensors in
  // data order, each as {dtype, shape, data_offsets}.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TensorBlob& t = *sorted[i];
    if (t.name.empty()) throw SafetensorsError(where + "a tensor has an empty name");
    if (t.name == kMetadataKey) throw SafetensorsError(where + "'" + t.name + "' is reserved for metadata");
    if (i > 0 && sorted[i - 1]->name == t.name) throw SafetensorsError(where + "tensor '" + t.name + "' given twice");
    size_t elem = 0;
    try {
      elem = dtype_size(t.dtype);
    } catch (const SafetensorsError& e) {
      throw SafetensorsError(where + "tensor '" + t.name + "': " + e.what());
    }
    for (int64_t dim : t.shape)
      if (dim < 0)
        throw SafetensorsError(where + "tensor '" + t.name + "' has a negative dimension " + shape_str(t.shape));
    uint64_t bytes = 0;
    if (!byte_size(t.shape, elem, &bytes))
      throw SafetensorsError(where + "tensor '" + t.name + "' of shape " + shape_str(t.shape) + " overflows 64 bits");
    if (bytes != t.data.size())
      throw SafetensorsError(where + "tensor '" + t.name + "' of shape " + shape_str(t.shape) + " and dtype " +
                             t.dtype + " needs " + std::to_string(bytes) + " bytes but its data has " +
                             std::to_string(t.data.size()));
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }

  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception& e) {
    throw SafetensorsError(where + "a tensor name or metadata string is not valid UTF-8 (" + e.what() + ")");
  }
  // Pad with spaces so the data section starts 8-byte aligned, as the reference does.
  text.append((8 - text.size() % 8) % 8, ' ');

  const std::string tmp = path + ".tmp";
  write_tmp(tmp, text, sorted);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw SafetensorsError("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
}

SafetensorsFile read_safetensors(const std::string& path) { return Reader(path).read(); }

SafetensorsFile read_safetensors_header(const std::string& path) { return Reader(path).read(true); }

}  // namespace hsm
