#pragma once
// OpenBLAS's thread count, read and set through the symbols it exports (looked up at run
// time, so a build against another BLAS still links and runs; then both do nothing).

namespace hsm {

// OpenBLAS's current thread count; 0 when no OpenBLAS is loaded.
int blas_threads();
// Sets it (n >= 1); nothing without OpenBLAS.
void set_blas_threads(int n);

// Under an address-space limit (ulimit -v), checks that `callers` threads can each map the
// buffer OpenBLAS takes for a matrix product (128 MiB in this build) besides what the process
// maps already. OpenBLAS retries a failed map forever (blas_memory_alloc), so a limit just too
// low hangs the first product; this throws std::runtime_error with the numbers and the fix
// instead (issue 34). Nothing without OpenBLAS or without a limit.
void check_blas_address_space(int callers);
// Makes OpenBLAS map the calling thread's buffer now (one product), while the check above
// holds: it keeps the buffer for the thread's later products, so memory LibTorch takes
// afterwards can no longer leave OpenBLAS spinning. Once per thread.
void warm_blas_buffer();

}  // namespace hsm
