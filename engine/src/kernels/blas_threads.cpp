#include "kernels/blas_threads.h"

#include <dlfcn.h>

namespace hsm {

namespace {
// Looked up once: dlsym(RTLD_DEFAULT) walks every loaded library's symbol table, and
// evaluation sets the count twice per batch.
using Get = int (*)();
using Set = void (*)(int);
Get get_fn() {
  static const auto f = reinterpret_cast<Get>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return f;
}
Set set_fn() {
  static const auto f = reinterpret_cast<Set>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  return f;
}
}  // namespace

int blas_threads() { return get_fn() ? get_fn()() : 0; }

void set_blas_threads(int n) {
  if (set_fn()) set_fn()(n);
}

}  // namespace hsm
