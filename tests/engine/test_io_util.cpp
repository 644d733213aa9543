// The small-file readers and writers every command goes through (issue 46): a FIFO, a device or
// a folder where a small file is expected is refused at once, a file over its bound is refused
// before it is read, and an append never writes through a link.
#include "io/io_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("hsm_io_util_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(ReadTextFile, ReadsARegularFileWhole) {
  TempDir d;
  const std::string bytes = std::string("{\"a\": 1}\n") + std::string(100000, 'x');
  { std::ofstream(d.path / "c.json", std::ios::binary) << bytes; }
  EXPECT_EQ(hsm::read_text_file((d.path / "c.json").string(), "config"), bytes);
}

TEST(ReadTextFile, RefusesAFifoAtOnceInsteadOfWaitingForAWriter) {
  TempDir d;
  const std::string fifo = (d.path / "task.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Run on another thread so that a regression (a blocking open) fails the test instead of
  // hanging it: the answer must come long before the deadline.
  // (a detached thread, not std::async, whose future would wait for the stuck call at scope exit)
  std::packaged_task<std::string()> read([fifo] { return error_of([&] { hsm::read_text_file(fifo, "task"); }); });
  auto answer = read.get_future();
  std::thread(std::move(read)).detach();
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "read_text_file waited on a FIFO";
  const std::string e = answer.get();
  EXPECT_NE(e.find("FIFO"), std::string::npos) << e;
  EXPECT_NE(e.find(fifo), std::string::npos) << e;
  EXPECT_NE(e.find("task"), std::string::npos) << e;
}

TEST(ReadTextFile, RefusesADeviceAndAFolder) {
  TempDir d;
  const std::string dev = error_of([] { hsm::read_text_file("/dev/zero", "lab grid"); });
  EXPECT_NE(dev.find("is a device, not a regular file"), std::string::npos) << dev;
  const std::string dir = error_of([&] { hsm::read_text_file(d.path.string(), "config"); });
  EXPECT_NE(dir.find("is a folder, not a regular file"), std::string::npos) << dir;
}

TEST(ReadTextFile, RefusesAFileOverItsBoundBeforeReadingIt) {
  TempDir d;
  { std::ofstream(d.path / "big.json") << std::string(4097, 'x'); }
  { std::ofstream(d.path / "fits.json") << std::string(4096, 'x'); }
  const std::string e = error_of([&] { hsm::read_text_file((d.path / "big.json").string(), "sweep spec", 4096); });
  EXPECT_NE(e.find("4097 bytes, more than the 4096"), std::string::npos) << e;
  EXPECT_EQ(hsm::read_text_file((d.path / "fits.json").string(), "sweep spec", 4096).size(), 4096u);
}

TEST(ReadTextFile, AMissingFileIsNamed) {
  const std::string e = error_of([] { hsm::read_text_file("/nonexistent/hsm/config.json", "config"); });
  EXPECT_NE(e.find("cannot open config file '/nonexistent/hsm/config.json'"), std::string::npos) << e;
}

TEST(AppendFileNoFollow, CreatesThenAppends) {
  TempDir d;
  const std::string f = (d.path / "results.jsonl").string();
  hsm::append_file_no_follow(f, "{\"a\":1}\n");
  hsm::append_file_no_follow(f, "{\"a\":2}\n");
  EXPECT_EQ(slurp(f), "{\"a\":1}\n{\"a\":2}\n");
}

TEST(AppendFileNoFollow, RefusesALinkAndLeavesItsTargetAlone) {
  TempDir d;
  { std::ofstream(d.path / "precious.txt") << "keep me\n"; }
  fs::create_symlink(d.path / "precious.txt", d.path / "results.jsonl");
  const std::string e =
      error_of([&] { hsm::append_file_no_follow((d.path / "results.jsonl").string(), "{\"a\":1}\n"); });
  EXPECT_NE(e.find("symbolic link"), std::string::npos) << e;
  EXPECT_EQ(slurp(d.path / "precious.txt"), "keep me\n");
}

TEST(AppendFileNoFollow, RefusesAFifo) {
  TempDir d;
  const std::string fifo = (d.path / "point.log").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Refused at once, not blocked on, and in words: any error text passed here before (issue 65),
  // and the text was "No such device or address".
  const std::string e = error_of([&] { hsm::append_file_no_follow(fifo, "x\n"); });
  EXPECT_EQ(e, "'" + fifo + "' is not a regular file: refusing to append to it") << e;
}

TEST(WriteFileAtomic, ReplacesALinkItselfNotItsTarget) {
  TempDir d;
  { std::ofstream(d.path / "precious.txt") << "keep me\n"; }
  fs::create_symlink(d.path / "precious.txt", d.path / "table.csv");
  hsm::write_file_atomic((d.path / "table.csv").string(), "a,b\n");
  EXPECT_EQ(slurp(d.path / "precious.txt"), "keep me\n");
  EXPECT_FALSE(fs::is_symlink(d.path / "table.csv"));
  EXPECT_EQ(slurp(d.path / "table.csv"), "a,b\n");
}
