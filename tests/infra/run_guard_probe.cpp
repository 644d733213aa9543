// A test program that misbehaves on purpose, for tests/check_test_runs.sh: a test that calls exit(0)
// in the middle of the run, one that skips, one that fails, one whose forked child exits. Linked
// with the test programs' main (tests/gtest_main.cpp); not a suite of ctest's itself.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

TEST(Probe, Passes) { SUCCEED(); }

TEST(Probe, Skips) { GTEST_SKIP() << "skipped on purpose"; }

TEST(Probe, Fails) { ADD_FAILURE() << "failed on purpose"; }

TEST(Probe, ExitsEarly) { std::exit(0); }

TEST(Probe, RunsAfterTheExit) { SUCCEED(); }

// A child that ends with exit() is not the test program ending.
TEST(Probe, AForkedChildExits) {
  const pid_t child = ::fork();
  if (child == 0) std::exit(3);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
}
