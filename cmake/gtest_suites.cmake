# One ctest test per GoogleTest suite: `<prefix><Suite>.*` runs the executable once with
# --gtest_filter=<Suite>.*, so every test of the suite runs, in its order, in one process.
#
# Why (CI time): a LibTorch test executable spends ~0.85-1.0 s of CPU starting (the dynamic loader
# binding LibTorch's ~290 libraries, then its operator registrations) before it runs a test;
# gtest_discover_tests starts it once per test: 896 times for the engine suites that use this (the
# median test_model test takes 1.0 s), 136 times per suite. A suite whose SetUpTestSuite trains a
# run (Hostile, HostileFiles, Distributed) trains it once instead of once per test.
#
# Only for suites whose tests do not need a fresh process each: the studio's do (LabView's tests
# failed in one process, the form remembering an earlier test's settings), so they keep
# gtest_discover_tests.
#
#   hsm_add_gtest_suites(<target> [PREFIX <prefix>] [PROPERTIES <name> <value> ...]
#                        [ENVIRONMENT <var>=<value> ...])
#
# The suites are listed after each build (--gtest_list_tests, as gtest_discover_tests does), so a
# new suite needs no CMake change. A test that fails fails its suite's ctest test; the output names
# it. A suite with a skipped test (GTEST_SKIP) and no failure is shown as skipped: the test
# programs' main (tests/test_run_guard.h) ends such a run with the line HSM_GTEST_SKIPPED_REGEX
# matches, and only such a run (GoogleTest's own "[  SKIPPED ]" would mark a suite with a failure in
# it skipped too).
# `ctest -R Mixers` runs a suite, `<executable> --gtest_filter=Suite.Test` one test.
if(CMAKE_SCRIPT_MODE_FILE)
  # After a build: EXE, OUT (the ctest file to write), PREFIX, LIST (the variable it fills with the
  # tests' names), WORKDIR.
  execute_process(COMMAND "${EXE}" --gtest_list_tests WORKING_DIRECTORY "${WORKDIR}" TIMEOUT 120
                  OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc}):\n${listing}")
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(script "")
  set(names "")
  foreach(line IN LISTS lines)
    # A suite's line: its name and a dot, maybe "  # TypeParam = ..."; a test's line is indented.
    if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( +#.*)?$")
      set(name "${PREFIX}${CMAKE_MATCH_1}.*")
      string(APPEND script "add_test([==[${name}]==] [==[${EXE}]==] [==[--gtest_filter=${CMAKE_MATCH_1}.*]==])\n"
                           "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKDIR}]==])\n")
      list(APPEND names "${name}")
    endif()
  endforeach()
  if(names STREQUAL "")
    message(FATAL_ERROR "${EXE} --gtest_list_tests listed no test suite:\n${listing}")
  endif()
  string(APPEND script "set(${LIST} [==[${names}]==])\n")
  file(WRITE "${OUT}.tmp" "${script}")
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()

set(HSM_GTEST_SUITES_SCRIPT "${CMAKE_CURRENT_LIST_FILE}")
# The line tests/test_run_guard.h prints after a run with skipped tests and none failed (keep alike).
set(HSM_GTEST_SKIPPED_REGEX "hsm-gtest: [0-9]+ of [0-9]+ tests? skipped, none failed")

function(hsm_add_gtest_suites target)
  cmake_parse_arguments(ARG "" "PREFIX" "PROPERTIES;ENVIRONMENT" ${ARGN})
  set(id ${target})
  if(ARG_PREFIX)
    string(MAKE_C_IDENTIFIER "${target}_${ARG_PREFIX}" id)  # test_model_avx2_
    string(REGEX REPLACE "_+$" "" id "${id}")
  endif()
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${id}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${id}_suites_include.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" -D "EXE=$<TARGET_FILE:${target}>" -D "OUT=${ctest_file}" -D "PREFIX=${ARG_PREFIX}"
            -D "LIST=${id}_SUITES" -D "WORKDIR=${CMAKE_CURRENT_BINARY_DIR}" -P "${HSM_GTEST_SUITES_SCRIPT}"
    BYPRODUCTS "${ctest_file}" VERBATIM)
  # The properties are set on the listed names when ctest reads the list.
  set(props "")
  set(i 0)
  list(LENGTH ARG_PROPERTIES n)
  while(i LESS n)
    list(GET ARG_PROPERTIES ${i} key)
    math(EXPR i "${i} + 1")
    list(GET ARG_PROPERTIES ${i} value)
    math(EXPR i "${i} + 1")
    string(APPEND props " ${key} [==[${value}]==]")
  endwhile()
  if(ARG_ENVIRONMENT)
    string(APPEND props " ENVIRONMENT [==[${ARG_ENVIRONMENT}]==]")  # one argument: a list
  endif()
  string(APPEND props " SKIP_REGULAR_EXPRESSION [==[${HSM_GTEST_SKIPPED_REGEX}]==]")
  file(WRITE "${include_file}"
       "if(EXISTS [==[${ctest_file}]==])\n"
       "  include([==[${ctest_file}]==])\n"
       "  set_tests_properties(\${${id}_SUITES} PROPERTIES${props})\n"
       "else()\n"
       "  add_test([==[${id}_NOT_BUILT]==] [==[${id}_NOT_BUILT]==])\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
