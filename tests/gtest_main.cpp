// The main() of the test programs (in place of GoogleTest's gtest_main): the premature-exit check
// and the skipped line of tests/test_run_guard.h around the tests.
#include <gtest/gtest.h>

#include "test_run_guard.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  hsm::test::guard_premature_exit();
  return hsm::test::finish(RUN_ALL_TESTS());
}
