#pragma once
// OpenBLAS's thread count, read and set through the symbols it exports (looked up at run
// time, so a build against another BLAS still links and runs; then both do nothing).

namespace hsm {

// OpenBLAS's current thread count; 0 when no OpenBLAS is loaded.
int blas_threads();
// Sets it (n >= 1); nothing without OpenBLAS.
void set_blas_threads(int n);

}  // namespace hsm
