#pragma once
// Helpers shared by the engine test suites.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace hsm::test {

// A fresh, empty folder under the test temp dir, unique per process: ctest runs the tests of
// one suite in parallel processes, which must not share (or delete) each other's files.
inline std::string fresh_temp_dir(const std::string& prefix, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / (prefix + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace hsm::test
