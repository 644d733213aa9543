#pragma once
// Which instruction set the fast kernels run (kernel_set.cpp): the CPU's best, capped by
// HSM_KERNELS for the whole process and by limit_kernel_set for tests. Internal to kernels/;
// the public names (kernel_set, limit_kernel_set, check_kernels_env) are in fast_kernels.h.
#if defined(__x86_64__) || defined(__i386__)
#define HSM_FAST_X86 1
#endif

namespace hsm::fast::detail {

// 2 = AVX-512, 1 = AVX2, 0 = plain loops.
int level();
inline bool have_avx2() { return level() >= 1; }
inline bool have_avx512() { return level() >= 2; }

}  // namespace hsm::fast::detail
