// A stand-in for a LibTorch that exports its own copy of a libstdc++ function (issue 49): this
// library defines std::filesystem::remove_all(const path&) under its mangled name, unversioned as
// PyTorch's copies are, and aborts when called. A program that binds to it has the crash's cause.
#include <cstdio>
#include <cstdlib>

extern "C" unsigned long hsm_fake_remove_all(const void*) __asm__("_ZNSt10filesystem10remove_allERKNS_7__cxx114pathE");
extern "C" __attribute__((visibility("default"))) unsigned long hsm_fake_remove_all(const void*) {
  std::fputs("fake_std: the copy of std::filesystem::remove_all outside libstdc++ was called\n", stderr);
  std::abort();
}
