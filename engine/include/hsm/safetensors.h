#pragma once
// Reading and writing the safetensors format (https://huggingface.co/docs/safetensors):
// 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the raw little-endian
// tensor bytes. Nothing in the file is executed; every header field is checked.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace hsm {

// Thrown for a file that is not a valid safetensors file; the message names the path and
// what is wrong (truncated, oversized, overlapping offsets, bad dtype ...).
struct SafetensorsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TensorBlob {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;  // [] for a scalar
  std::string data;            // raw little-endian bytes, size == numel × dtype size
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<TensorBlob> tensors;  // in file order (ascending data offsets)
  const TensorBlob* find(const std::string& name) const;
};

// Bytes per element of a dtype; throws SafetensorsError for an unknown dtype.
size_t dtype_size(const std::string& dtype);

// Writes tensors (sorted by name, as the reference implementation does) atomically:
// temp file + rename. Throws SafetensorsError if a blob's size does not match its shape.
void write_safetensors(const std::string& path, const std::vector<TensorBlob>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Reads and validates the whole file: header length within the file, header JSON,
// dtypes, shapes × dtype size == byte ranges, ranges contiguous from 0 with no gaps or
// overlaps, and the data section ending exactly at end of file.
SafetensorsFile read_safetensors(const std::string& path);
// The same checks without reading the tensor data: names, dtypes and shapes (each blob's
// data empty). What a loader compares a config with before it allocates anything.
SafetensorsFile read_safetensors_header(const std::string& path);

}  // namespace hsm
