# Compiler flags of the fuzz build tree (HSM_BUILD_FUZZ, see fuzz/README.md). Everything it
# builds, hsm_core and the tokenizer plugin included, carries libFuzzer's coverage
# instrumentation and the AddressSanitizer and UndefinedBehaviorSanitizer checks; the
# fuzzers add libFuzzer's main when they link (fuzz/CMakeLists.txt). Undefined behaviour
# aborts (-fno-sanitize-recover), so libFuzzer counts it as a crash instead of a log line.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "HSM_BUILD_FUZZ needs clang for libFuzzer: configure with CC=clang CXX=clang++ "
                      "(fuzz/run.sh does), in a build folder of its own")
endif()
set(HSM_SANITIZERS address,undefined)
add_compile_options(-fsanitize=fuzzer-no-link,${HSM_SANITIZERS} -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=${HSM_SANITIZERS})
