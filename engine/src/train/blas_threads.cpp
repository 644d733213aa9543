#include "train/blas_threads.h"

#include <dlfcn.h>

namespace hsm {

int blas_threads() {
  using Get = int (*)();
  if (auto* f = reinterpret_cast<Get>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"))) return f();
  return 0;
}

void set_blas_threads(int n) {
  using Set = void (*)(int);
  if (auto* f = reinterpret_cast<Set>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
}

}  // namespace hsm
