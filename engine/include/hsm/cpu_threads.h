#pragma once
// The CPU thread set-up of every command and of the studio (kernels/cpu_threads.cpp): the
// kernels' own header, so the lowest layer knows nothing of the trainer or the studio
// (docs/architecture.md, "Layers"). Plain C++.
#include <string>

namespace hsm {

// CPU threads for LibTorch (intra-op) and OpenBLAS. n > 0: LibTorch on n threads; n == 0:
// LibTorch on every core. OpenBLAS gets $HSM_BLAS_THREADS or 1 thread: the engine splits the
// matrix products over LibTorch's pool itself, and two pools on the same cores oversubscribe
// them (docs/performance.md). Returns LibTorch's thread count; std::invalid_argument for n
// outside 0..1024.
int set_cpu_threads(int n);

// True unless the latest set_cpu_threads named a count (n > 0): then the count is the user's
// and decoding uses all of it too, else decoding chooses (DecodeThreads).
bool automatic_threads();

// What set_cpu_threads chose, in words, for logs ("LibTorch 2 thread(s), OpenBLAS 1, ...").
std::string cpu_threads_note();

// ---- Threads for the machine as it is (issue 37) ----

// How long LibTorch's OpenMP threads spin before they sleep, which libgomp reads from
// GOMP_SPINCOUNT once, before main. Its default (300,000 spins, ~3 ms) suits a machine of
// one's own; beside another busy program every thread of a region spins out its time slice,
// the program's share of that core, before the region can end: training 137 against 400 tok/s
// with a short spin, one busy loop beside 2 cores (docs/performance.md, "Contention").
constexpr const char* kOpenMpSpinCount = "10000";

// For a program's .preinit_array (HSM_BEFORE_LIBRARIES below): when neither GOMP_SPINCOUNT nor
// OMP_WAIT_POLICY is in `envp`, executes the program again (/proc/self/exe, same arguments)
// with GOMP_SPINCOUNT=kOpenMpSpinCount added, since libgomp reads its settings in its own
// initialiser. Run there, before any library's initialiser, the first start costs the dynamic
// loading alone, not LibTorch's operator registrations too (`hsm eval --help`: 1.21 s of CPU
// against 1.52 s from main(); docs/performance.md, "Contention"). Returns when either is set
// (a user's choice is kept) or the exec fails (libgomp's default then). Touches no C library
// state (it runs before the C library's initialiser, which would drop a setenv): reads envp,
// builds the new list on the stack.
void use_short_openmp_spin(char** argv, char** envp);

// For a program's .preinit_array, as use_short_openmp_spin (which is this with short_spin), and
// for every program under an address-space limit (ulimit -v), spin or not: OpenBLAS maps a
// 128 MiB buffer per thread as it loads (one per core unless OPENBLAS_NUM_THREADS,
// GOTO_NUM_THREADS or OMP_NUM_THREADS says otherwise) and retries a failed map forever, so
// under too low a limit a program hung before main (OpenBLAS 0.3.29, Debian 13). Under a limit,
// OPENBLAS_NUM_THREADS is added (HSM_BLAS_THREADS or 1: what set_cpu_threads gives OpenBLAS)
// when none of those is set, and when the room for its buffers cannot be mapped the program
// ends with exit status 1 and the limit, the need and the fix on stderr.
void start_before_libraries(char** argv, char** envp, bool short_spin);

// Registers `function` (void(int argc, char** argv, char** envp)) in this executable's
// .preinit_array: the dynamic loader calls it after loading and relocating every library and
// before any initialiser runs (glibc's, libgomp's, LibTorch's, this program's). An
// executable's main file only; a library's entry would be ignored.
#define HSM_BEFORE_LIBRARIES(function)                                                              \
  __attribute__((section(".preinit_array"), used)) static void (*const hsm_before_libraries_##function)( \
      int, char**, char**) = function
//
// A parallel region waits at its end for its slowest thread. When another program keeps a
// core busy, the thread that shares that core runs only in the other program's pauses, and a
// batch-1 token (a few hundred microseconds of work cut into ~15 regions) waited a time slice
// per region: 3-130 tok/s on every core against 95-2100 on one (docs/performance.md,
// "Contention"). So work whose regions are that small asks how busy the machine is now.

// Threads for parallel work on a pool of `pool_threads` threads, on a machine with `cores`
// cores where `others_running` threads of other programs (a recent average) want a core: one
// per core nobody else wants (rounding an average above half a thread up to a whole one), at
// least 1, at most pool_threads. Pure: the tested rule.
int choose_threads(int pool_threads, int cores, double others_running);

// The cores this process sees (std::thread::hardware_concurrency, at least 1).
int machine_cores();

// Batch-1 decoding: choose_threads, and 1 when a token's matrices hold fewer than
// kDecodeSplitMinWeights weights (a token's work too small to pay for waking a thread).
constexpr long long kDecodeSplitMinWeights = 1LL << 20;
int choose_decode_threads(long long weights_per_token, int pool_threads, int cores, double others_running);

// Other programs' threads that are runnable right now: the system's runnable count
// (/proc/loadavg) less this process's runnable threads (/proc/self/task/*/stat). -1 where
// /proc does not say (not Linux): callers then assume a quiet machine.
int others_running_now();

// others_running_now() averaged for a loop that asks often: it samples at most every
// `interval_ms` milliseconds (a sample costs tens of microseconds) and keeps an exponential
// average, so a busy loop elsewhere counts as 1 and a short burst fades.
class LoadWatch {
 public:
  explicit LoadWatch(int interval_ms = 20);
  // The average, after sampling when a sample is due.
  double others();

 private:
  long long interval_ns_;
  long long last_ns_ = 0;
  double average_ = -1;  // < 0: no sample yet
};

// While one lives, the parallel work the calling thread starts (the engine's split products,
// LibTorch's loops) uses at most n of LibTorch's threads: a setting of this thread only (an
// OpenMP one, as kernels/parallel_gemm.h's SerialScope), restored after.
class ThreadLimit {
 public:
  explicit ThreadLimit(int n);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int before_;
};

// One batch-1 decoding loop's thread choice, made again before every token from a LoadWatch:
// choose_decode_threads for a model of `weights_per_token` on a pool of `pool_threads`; the
// whole pool when the threads were given (automatic_threads() false).
class DecodeThreads {
 public:
  explicit DecodeThreads(long long weights_per_token) : weights_(weights_per_token) {}
  int choose(int pool_threads);
  int last() const { return last_; }  // the latest choice (0 before the first)

 private:
  long long weights_;
  LoadWatch load_;
  int last_ = 0;
};

}  // namespace hsm
