#pragma once
// What every test program's main() does around RUN_ALL_TESTS (issue 65), so that ctest's verdict
// is what the tests did:
//  - a test that ends the process early (exit(0) in a test, or in code it calls) fails the
//    program: GoogleTest's premature-exit file (TEST_PREMATURE_EXIT_FILE, made while its tests run
//    and removed when they all ended) is set to a private path, and a check at exit finds it still
//    there, says so and exits 1, instead of the process "passing" with the later tests unrun;
//  - a run in which tests were skipped and none failed ends with the line "hsm-gtest: N of M tests
//    skipped, none failed", which ctest reads with SKIP_REGULAR_EXPRESSION (HSM_GTEST_SKIPPED_REGEX,
//    cmake/gtest_suites.cmake: keep the two alike) on every suite's test: a suite whose tests were
//    skipped is shown as skipped in ctest's summary, not as passed (tests/check_test_runs.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace hsm::test {

namespace detail {
inline std::string& premature_exit_file() {
  static std::string path;
  return path;
}
inline pid_t& guarded_pid() {
  static pid_t pid = 0;
  return pid;
}
inline void check_premature_exit() {
  // A child forked by a test that calls exit() is not the test program ending.
  if (::getpid() != guarded_pid() || premature_exit_file().empty()) return;
  if (std::FILE* f = std::fopen(premature_exit_file().c_str(), "r")) {
    std::fclose(f);
    std::remove(premature_exit_file().c_str());
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr,
                 "hsm-gtest: the test program ended before its tests finished (exit() called%s%s%s%s); the tests "
                 "after it did not run: failed\n",
                 t ? " in " : "", t ? t->test_suite_name() : "", t ? "." : "", t ? t->name() : "");
    std::fflush(stderr);
    ::_exit(1);
  }
}
}  // namespace detail

// Before RUN_ALL_TESTS. Keeps a path the test runner set in TEST_PREMATURE_EXIT_FILE.
inline void guard_premature_exit() {
  std::string path;
  if (const char* set = std::getenv("TEST_PREMATURE_EXIT_FILE"); set && *set) {
    path = set;
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hsm-gtest-running.XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) return;  // no check rather than no tests
    ::close(fd);
    path = pattern;
    ::setenv("TEST_PREMATURE_EXIT_FILE", path.c_str(), 1);
  }
  detail::premature_exit_file() = path;
  detail::guarded_pid() = ::getpid();
  std::atexit(detail::check_premature_exit);
}

// After RUN_ALL_TESTS, with its result: prints the skipped line where it applies; returns rc.
inline int finish(int rc) {
  const ::testing::UnitTest* u = ::testing::UnitTest::GetInstance();
  if (rc == 0 && u->skipped_test_count() > 0 && u->failed_test_count() == 0) {
    std::printf("hsm-gtest: %d of %d test%s skipped, none failed\n", u->skipped_test_count(),
                u->test_to_run_count(), u->test_to_run_count() == 1 ? "" : "s");
    std::fflush(stdout);
  }
  return rc;
}

}  // namespace hsm::test
