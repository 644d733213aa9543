// Safetensors reader/writer: exact round trips, the byte layout the spec prescribes, and a
// SafetensorsError naming the problem for every malformed file.
#include <gtest/gtest.h>
#include <unistd.h>  // getpid

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hsm/safetensors.h"

using namespace hsm;
namespace fs = std::filesystem;

namespace {

template <typename T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  size_t i = 0;
  for (T v : values) std::memcpy(&s[sizeof(T) * i++], &v, sizeof(T));
  return s;
}

std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file as the spec describes it, from a header written by hand (padded to 8 bytes).
std::string raw_file(const std::string& header_json, const std::string& data) {
  std::string h = header_json;
  h.append((8 - h.size() % 8) % 8, ' ');
  return u64_le(h.size()) + h + data;
}

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // The pid keeps parallel ctest runs (one process per test) out of each other's way.
    dir_ = fs::temp_directory_path() / ("hsm_st_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name = "model.safetensors") const { return (dir_ / name).string(); }

  // Reads `bytes` written to a file; returns the error message, or "" if accepted.
  std::string problem(const std::string& bytes) const {
    write_all(path("bad.safetensors"), bytes);
    try {
      read_safetensors(path("bad.safetensors"));
    } catch (const SafetensorsError& e) {
      return e.what();
    }
    return "";
  }

  std::string valid_file() const {
    write_safetensors(path("valid.safetensors"),
                      {{"w", "F32", {2, 2}, bytes_of<float>({1, 2, 3, 4})}, {"b", "F32", {2}, bytes_of<float>({5, 6})}},
                      {{"format", "test"}});
    return read_all(path("valid.safetensors"));
  }

  fs::path dir_;
};

std::vector<TensorBlob> sample_tensors() {
  return {
      {"tok_emb.weight", "F32", {3, 2}, bytes_of<float>({0.5f, -1.25f, 3e-8f, 1e30f, -0.0f, 7.0f})},
      {"blocks.0.mixer.a", "F32", {}, bytes_of<float>({0.75f})},  // 0-dim scalar
      {"empty", "F32", {0, 4}, ""},                               // no elements
      {"double", "F64", {2}, bytes_of<double>({3.141592653589793, -2.5e-300})},
      {"half", "F16", {3}, bytes_of<uint16_t>({0x3c00, 0xc000, 0x7bff})},
      {"bf", "BF16", {1, 2}, bytes_of<uint16_t>({0x3f80, 0x4049})},
      {"ids", "I64", {2}, bytes_of<int64_t>({-1, INT64_MAX})},
      {"i32", "I32", {1}, bytes_of<int32_t>({-7})},
      {"small", "I8", {3}, bytes_of<int8_t>({-128, 0, 127})},
      {"bytes", "U8", {2}, bytes_of<uint8_t>({0, 255})},
      {"mask", "BOOL", {2}, bytes_of<uint8_t>({1, 0})},
      {"i16", "I16", {1}, bytes_of<int16_t>({-300})},
  };
}

}  // namespace

TEST_F(Safetensors, RoundTripIsExact) {
  const auto tensors = sample_tensors();
  const std::map<std::string, std::string> meta = {{"format", "hsm-studio/1"}, {"config", "{\"d\": 2}\n"}, {"é", "ü"}};
  write_safetensors(path(), tensors, meta);
  const SafetensorsFile f = read_safetensors(path());
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (const auto& t : tensors) {
    const TensorBlob* r = f.find(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(r->dtype, t.dtype) << t.name;
    EXPECT_EQ(r->shape, t.shape) << t.name;
    EXPECT_EQ(r->data, t.data) << t.name;
  }
  EXPECT_EQ(f.find("missing"), nullptr);
  // File order is the writer's: sorted by name.
  for (size_t i = 1; i < f.tensors.size(); ++i) EXPECT_LT(f.tensors[i - 1].name, f.tensors[i].name);
}

TEST_F(Safetensors, EmptyFileRoundTrips) {
  write_safetensors(path(), {});
  EXPECT_EQ(read_all(path()), u64_le(8) + "{}      ");
  const auto f = read_safetensors(path());
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_TRUE(f.metadata.empty());
}

TEST_F(Safetensors, ByteLayoutFollowsTheSpec) {
  // Given out of order: the writer sorts by name, so "a" (I8) comes first at offset 0.
  write_safetensors(path(), {{"b", "F32", {2}, bytes_of<float>({1.0f, 2.0f})}, {"a", "I8", {}, std::string(1, '\x07')}},
                    {{"format", "x"}});
  const std::string json = R"({"__metadata__":{"format":"x"},)"
                           R"("a":{"dtype":"I8","shape":[],"data_offsets":[0,1]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  ASSERT_EQ(json.size(), 135u);  // padded with 1 space to 136, so the data starts at byte 144
  std::string expected = u64_le(136) + json + " ";
  expected += '\x07';
  expected += std::string("\x00\x00\x80\x3f", 4);  // 1.0f little-endian
  expected += std::string("\x00\x00\x00\x40", 4);  // 2.0f little-endian
  const std::string actual = read_all(path());
  EXPECT_EQ(actual, expected);
  ASSERT_GE(actual.size(), 8u);
  EXPECT_EQ(static_cast<unsigned char>(actual[0]), 136);
  for (int i = 1; i < 8; ++i) EXPECT_EQ(actual[i], '\0');
}

TEST_F(Safetensors, ReadsAFileWrittenByHandInAnyKeyOrder) {
  // Header keys in another order than ours, tensors not in offset order, no metadata:
  // the reader goes by data_offsets and returns the tensors in file order.
  const std::string f = raw_file(R"({"second":{"data_offsets":[4,8],"shape":[1],"dtype":"I32"},)"
                                 R"("first":{"shape":[],"dtype":"F32","data_offsets":[0,4]}})",
                                 bytes_of<float>({2.5f}) + bytes_of<int32_t>({-9}));
  write_all(path(), f);
  const auto st = read_safetensors(path());
  ASSERT_EQ(st.tensors.size(), 2u);
  EXPECT_EQ(st.tensors[0].name, "first");
  EXPECT_EQ(st.tensors[1].name, "second");
  EXPECT_EQ(st.tensors[1].data, bytes_of<int32_t>({-9}));
  EXPECT_TRUE(st.metadata.empty());
}

TEST_F(Safetensors, AtomicWriteLeavesNoTempFile) {
  write_safetensors(path(), sample_tensors());
  write_safetensors(path(), {{"x", "F32", {1}, bytes_of<float>({1.0f})}});  // overwrites
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(read_safetensors(path()).tensors.size(), 1u);
}

TEST_F(Safetensors, FailedWriteKeepsTheOldFile) {
  write_safetensors(path(), {{"x", "F32", {1}, bytes_of<float>({1.0f})}});
  const std::string before = read_all(path());
  EXPECT_THROW(write_safetensors(path(), {{"x", "F32", {2}, bytes_of<float>({1.0f})}}), SafetensorsError);
  EXPECT_EQ(read_all(path()), before);
  EXPECT_FALSE(fs::exists(path() + ".tmp"));
}

TEST_F(Safetensors, WriterNamesTheUnwritableDirectory) {
  try {
    write_safetensors((dir_ / "no_such_dir" / "m.safetensors").string(), {});
    FAIL() << "expected SafetensorsError";
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dir"), std::string::npos) << e.what();
  }
}

// ---- the writer refuses what it cannot describe -------------------------------------

std::string write_problem(const std::string& p, const std::vector<TensorBlob>& tensors,
                          const std::map<std::string, std::string>& meta = {}) {
  try {
    write_safetensors(p, tensors, meta);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

TEST_F(Safetensors, WriterRefusesSizeMismatch) {
  const auto msg = write_problem(path(), {{"w", "F32", {2, 3}, bytes_of<float>({1, 2, 3, 4, 5})}});
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs 24 bytes but its data has 20"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path()), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path()));
  EXPECT_FALSE(fs::exists(path() + ".tmp"));
}

TEST_F(Safetensors, WriterRefusesBadBlobs) {
  EXPECT_NE(write_problem(path(), {{"w", "F33", {1}, "1234"}}).find("unknown dtype 'F33'"), std::string::npos);
  EXPECT_NE(write_problem(path(), {{"w", "F32", {-1}, ""}}).find("negative dimension"), std::string::npos);
  EXPECT_NE(write_problem(path(), {{"w", "U8", {1}, "a"}, {"w", "U8", {1}, "b"}}).find("'w' given twice"),
            std::string::npos);
  EXPECT_NE(write_problem(path(), {{"", "U8", {1}, "a"}}).find("empty name"), std::string::npos);
  EXPECT_NE(write_problem(path(), {{"__metadata__", "U8", {1}, "a"}}).find("reserved"), std::string::npos);
  EXPECT_NE(write_problem(path(), {{"w", "U8", {1}, "a"}}, {{"k", "\xff"}}).find("UTF-8"), std::string::npos);
  EXPECT_FALSE(fs::exists(path()));
}

TEST(SafetensorsDtype, Sizes) {
  EXPECT_EQ(dtype_size("F32"), 4u);
  EXPECT_EQ(dtype_size("F16"), 2u);
  EXPECT_EQ(dtype_size("BF16"), 2u);
  EXPECT_EQ(dtype_size("F64"), 8u);
  EXPECT_EQ(dtype_size("I64"), 8u);
  EXPECT_EQ(dtype_size("I32"), 4u);
  EXPECT_EQ(dtype_size("I16"), 2u);
  EXPECT_EQ(dtype_size("I8"), 1u);
  EXPECT_EQ(dtype_size("U8"), 1u);
  EXPECT_EQ(dtype_size("BOOL"), 1u);
  try {
    dtype_size("f32");
    FAIL() << "lower-case dtype accepted";
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'f32' (known: "), std::string::npos) << e.what();
  }
}

// ---- the reader refuses malformed files, naming the problem --------------------------

#define EXPECT_PROBLEM(bytes, fragment)                                               \
  do {                                                                                \
    const std::string msg_ = problem(bytes);                                          \
    EXPECT_NE(msg_.find(fragment), std::string::npos) << "message: '" << msg_ << "'"; \
    EXPECT_NE(msg_.find("bad.safetensors"), std::string::npos) << msg_;               \
  } while (0)

TEST_F(Safetensors, ValidFileIsAccepted) { EXPECT_EQ(problem(valid_file()), ""); }

TEST_F(Safetensors, RejectsMissingFile) {
  try {
    read_safetensors(path("nothing.safetensors"));
    FAIL();
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing.safetensors': cannot open"), std::string::npos) << e.what();
  }
}

TEST_F(Safetensors, RejectsFileShorterThanLengthField) {
  EXPECT_PROBLEM("", "file has 0 bytes, fewer than the 8-byte header length");
  EXPECT_PROBLEM(std::string(5, '\0'), "file has 5 bytes");
}

TEST_F(Safetensors, RejectsTruncatedByOneByte) {
  std::string f = valid_file();
  f.pop_back();
  EXPECT_PROBLEM(f, "truncated: expected 24 bytes of tensor data, file has 23");
}

TEST_F(Safetensors, RejectsTrailingByte) {
  EXPECT_PROBLEM(valid_file() + "x", "oversized: expected 24 bytes of tensor data, file has 25");
}

TEST_F(Safetensors, RejectsTruncatedInsideHeader) {
  const std::string f = valid_file();
  EXPECT_PROBLEM(f.substr(0, 20), "is larger than the 12 bytes after the length field");
}

TEST_F(Safetensors, RejectsCorruptHeaderLength) {
  std::string f = valid_file();
  const uint64_t size = f.size();
  EXPECT_PROBLEM(u64_le(size) + f.substr(8), "header length " + std::to_string(size) + " is larger than the " +
                                                 std::to_string(size - 8) + " bytes");
  EXPECT_PROBLEM(u64_le(uint64_t{1} << 40) + f.substr(8), "exceeds the 100000000-byte limit");
  EXPECT_PROBLEM(u64_le(~uint64_t{0}) + f.substr(8), "exceeds the 100000000-byte limit");
  // A length that is plausible but wrong cuts the JSON short.
  EXPECT_PROBLEM(u64_le(16) + f.substr(8), "header is not valid JSON");
}

TEST_F(Safetensors, RejectsCorruptJson) {
  std::string f = valid_file();
  f[8] = 'x';  // the opening brace
  EXPECT_PROBLEM(f, "header is not valid JSON");
  EXPECT_PROBLEM(raw_file("{\"a\":", ""), "header is not valid JSON");
  EXPECT_PROBLEM(raw_file("[1, 2]", ""), "header is JSON but not an object (got array)");
  EXPECT_PROBLEM(raw_file("\"str\"", ""), "not an object (got string)");
  EXPECT_PROBLEM(raw_file("{\"k\":\"\xff\"}", ""), "header is not valid JSON");  // not UTF-8
}

TEST_F(Safetensors, RejectsBadEntries) {
  const std::string four = bytes_of<float>({1.0f});
  EXPECT_PROBLEM(raw_file(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", four), "tensor 't': missing 'dtype'");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", four), "tensor 't': missing 'shape'");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[1]}})", four), "tensor 't': missing 'data_offsets'");
  EXPECT_PROBLEM(raw_file(R"({"t":[1,2]})", four), "tensor 't': expected an object");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", four), "dtype must be a string");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", four),
                 "shape must be an array of integers");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", four),
                 "shape[0] is not an integer");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", four),
                 "data_offsets must be [begin, end]");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", four),
                 "data_offsets must be [begin, end]");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", four), "end before begin");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})", four),
                 "unknown key 'extra'");
}

TEST_F(Safetensors, RejectsUnknownDtype) {
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F128","shape":[1],"data_offsets":[0,4]}})", "1234"),
                 "tensor 't': unknown dtype 'F128'");
}

TEST_F(Safetensors, RejectsNegativeDimension) {
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,0]}})", ""),
                 "shape[1] is negative: -1");
}

TEST_F(Safetensors, RejectsShapeOffsetMismatch) {
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", std::string(20, '\0')),
                 "shape [2, 3] of F32 needs 24 bytes but data_offsets [0, 20] hold 20");
  // A shape whose byte size overflows 64 bits cannot wrap around to match.
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", ""),
                 "overflows 64 bits");
}

TEST_F(Safetensors, RejectsOverlappingOffsets) {
  EXPECT_PROBLEM(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          std::string(8, '\0')),
                 "tensor 'b' data_offsets [4, 8] overlap tensor 'a', which ends at 8");
  EXPECT_PROBLEM(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                          std::string(4, '\0')),
                 "overlap tensor 'a'");
}

TEST_F(Safetensors, RejectsGapsAndNonZeroStart) {
  EXPECT_PROBLEM(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                          std::string(12, '\0')),
                 "tensor 'b' data_offsets [8, 12] leave a gap of 4 bytes after tensor 'a'");
  EXPECT_PROBLEM(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')),
                 "tensor 'a' data_offsets [4, 8] do not start at 0");
}

TEST_F(Safetensors, RejectsDuplicateNames) {
  EXPECT_PROBLEM(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                          R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          std::string(8, '\0')),
                 "header has the key 'a' twice");
  EXPECT_PROBLEM(
      raw_file(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
      "header has the key 'dtype' twice");
}

TEST_F(Safetensors, RejectsBadMetadata) {
  EXPECT_PROBLEM(raw_file(R"({"__metadata__":{"steps":100}})", ""), "__metadata__['steps'] must be a string, got 100");
  EXPECT_PROBLEM(raw_file(R"({"__metadata__":["a"]})", ""), "__metadata__ must be an object of strings");
}

TEST_F(Safetensors, EmptyTensorsMayShareAnOffset) {
  write_all(path(), raw_file(R"({"e1":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("e2":{"dtype":"I64","shape":[3,0],"data_offsets":[4,4]}})",
                             bytes_of<float>({1.0f})));
  const auto f = read_safetensors(path());
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].name, "a");
  EXPECT_TRUE(f.find("e2")->data.empty());
  EXPECT_EQ(f.find("e2")->shape, (std::vector<int64_t>{3, 0}));
}

// Found by review while fuzzing (fuzz/corpus/safetensors/regression-deep-nesting, shallower):
// the message for a malformed entry printed the whole entry, recursively, and an entry nested
// a million levels deep overflowed the stack. Messages now show a nested value by kind and size.
TEST_F(Safetensors, DeeplyNestedEntryIsRefusedWithoutPrintingIt) {
  const int depth = 1000000;
  EXPECT_PROBLEM(raw_file(R"({"t":)" + std::string(depth, '[') + std::string(depth, ']') + "}", ""),
                 "tensor 't': expected an object {dtype, shape, data_offsets}, got an array of 1 items");
  EXPECT_PROBLEM(raw_file(R"({"t":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", "1234"),
                 "shape[0] is not an integer: [1]");
}
