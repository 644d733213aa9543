// The CPU thread set-up of every command and of the studio (hsm/cpu_threads.h declares it):
// LibTorch's pool, OpenBLAS's threads, the allocator, and the checks of the kernel and
// matrix-product choices made through the environment.
#include <alloca.h>
#include <dirent.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <torch/torch.h>

#include "hsm/cpu_threads.h"
#include "kernels/blas_threads.h"
#include "kernels/fast_kernels.h"
#include "kernels/gemm.h"
#include "kernels/parallel_gemm.h"

namespace hsm {

namespace {

std::atomic<bool> g_automatic_threads{true};

int blas_threads_from_env() {
  const char* env = std::getenv("HSM_BLAS_THREADS");
  return env && std::atoi(env) > 0 ? std::atoi(env) : 0;
}

}  // namespace

// One pool for everything: LibTorch's (OpenMP) threads get the cores and OpenBLAS one thread;
// the engine splits the matrix products over LibTorch's pool itself (kernels/parallel_gemm.h).
// Two pools (OpenBLAS on the cores, LibTorch on one thread, the previous default) left a core
// spinning in OpenBLAS during every element-wise pass, and both on the cores fought; this
// trains 17-30 % faster than the previous default on the AMD EPYC (docs/performance.md).
int set_cpu_threads(int n) {
  if (n < 0 || n > 1024)
    throw std::invalid_argument("--threads: " + std::to_string(n) + " is out of range; use 0 (every core) to 1024");
  const int torch_threads = n > 0 ? n : machine_cores();
  g_automatic_threads = n == 0;
  int blas = blas_threads_from_env();
  if (blas == 0) blas = 1;
  // Under an address-space limit too low for OpenBLAS's own buffers, LibTorch's pool can wait
  // forever for a thread it could not start (pthreadpool_create, measured at ulimit -v 600 MB):
  // refuse before building it; the full check for the products' threads follows below.
  check_blas_address_space(blas);
  torch::set_num_threads(torch_threads);
  // glibc hands blocks above its mmap threshold (dynamic, 128 kB to 32 MB) back to the kernel
  // when freed, so every training step page-faulted its activations in again (~10% of a step
  // in the kernel, measured with perf). Keep freed memory in the heap for reuse instead.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  set_blas_threads(blas);
  gemm_backend();  // an invalid HSM_GEMM or HSM_KERNELS is refused here, before any work starts
  fast::check_kernels_env();
  // An error now, not a hang in the first product: OpenBLAS's own threads, or LibTorch's when
  // the engine splits its products over them through LibTorch (whose products are OpenBLAS's).
  const bool products_in_openblas = gemm_backend() == GemmBackend::kLibTorch && split_gemms();
  check_blas_address_space(products_in_openblas ? std::max(torch_threads, blas) : blas);
  warm_blas_buffer();
  if (products_in_openblas) at::parallel_for(0, torch_threads, 1, [](int64_t, int64_t) { warm_blas_buffer(); });
  return torch_threads;
}

bool automatic_threads() { return g_automatic_threads; }

std::string cpu_threads_note() {
  const int blas = blas_threads();
  std::string note = "LibTorch " + std::to_string(torch::get_num_threads()) + " thread(s), ";
  note += blas > 0 ? "OpenBLAS " + std::to_string(blas) : std::string("no OpenBLAS found (slow reference BLAS?)");
  if (blas_threads_from_env() > 0) note += " (HSM_BLAS_THREADS)";
  if (split_gemms()) note += "; matrix products split over LibTorch's threads";
  note += "; " + gemm_backend_note() + "; " + fast::kernel_set() + " kernels";
  const char* kernels = std::getenv("HSM_KERNELS");
  return note + (kernels && *kernels ? " (HSM_KERNELS)" : "");
}

namespace {

// Plain C helpers for start_before_libraries: the C library is not initialised yet.
bool env_is(const char* entry, const char* name) {
  const size_t n = std::strlen(name);
  return std::strncmp(entry, name, n) == 0 && entry[n] == '=';
}

// The value of `name` in envp, or nullptr.
const char* env_value(char** envp, const char* name) {
  for (size_t i = 0; envp[i] != nullptr; ++i)
    if (env_is(envp[i], name)) return envp[i] + std::strlen(name) + 1;
  return nullptr;
}

// A positive decimal count, or 0.
long parse_count(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  long n = 0;
  for (; *text >= '0' && *text <= '9' && n < 1000000; ++text) n = n * 10 + (*text - '0');
  return *text == '\0' ? n : 0;
}

// Appends n in decimal to buf (of `size` bytes, NUL-terminated).
void append_number(char* buf, size_t size, unsigned long long n) {
  char digits[24];
  int len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0);
  size_t at = std::strlen(buf);
  while (len > 0 && at + 1 < size) buf[at++] = digits[--len];
  buf[at] = '\0';
}

void append(char* buf, size_t size, const char* text) { std::strncat(buf, text, size - std::strlen(buf) - 1); }

}  // namespace

void start_before_libraries(char** argv, char** envp, bool short_spin) {
  if (argv == nullptr || envp == nullptr) return;
  size_t count = 0;
  bool spin_set = false;
  for (; envp[count] != nullptr; ++count)
    if (env_is(envp[count], "GOMP_SPINCOUNT") || env_is(envp[count], "OMP_WAIT_POLICY")) spin_set = true;
  char spin[64] = "GOMP_SPINCOUNT=";
  append(spin, sizeof spin, kOpenMpSpinCount);

  // OpenBLAS's threads as it loads: OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS, OMP_NUM_THREADS
  // (its own order), else a thread per core. One of them set, whatever its value, is the user's
  // choice (and a value this cannot read, added to again, would execute the program forever).
  const char* blas_names[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"};
  bool blas_named = false;
  long blas = 0;
  for (const char* name : blas_names)
    if (const char* value = env_value(envp, name); value != nullptr && !blas_named) {
      blas_named = true;
      blas = parse_count(value);
    }
  rlimit limit{};
  const bool limited = ::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  char blas_setting[64] = "OPENBLAS_NUM_THREADS=";
  const bool set_blas = limited && !blas_named;
  if (set_blas) {
    // Under an address-space limit, as many as the engine will use (set_cpu_threads).
    blas = std::max(1L, parse_count(env_value(envp, "HSM_BLAS_THREADS")));
    append_number(blas_setting, sizeof blas_setting, static_cast<unsigned long long>(blas));
  }

  const bool add_spin = short_spin && !spin_set;
  if (add_spin || set_blas) {
    char** env = static_cast<char**>(alloca((count + 3) * sizeof(char*)));
    std::memcpy(env, envp, count * sizeof(char*));
    size_t n = count;
    if (add_spin) env[n++] = spin;
    if (set_blas) env[n++] = blas_setting;
    env[n] = nullptr;
    ::execve("/proc/self/exe", argv, env);
    // Only when the exec failed: this process keeps libgomp's and OpenBLAS's defaults.
    if (set_blas) return;
  }
  if (!limited) return;
  // OpenBLAS (0.3.29, Debian 13) maps its 128 MiB buffer for each of its threads in its
  // initialiser and retries a failed map forever: under too low a limit the program would hang
  // before main. The room it needs, probed (nothing is committed), or a clear error now.
  constexpr unsigned long long kBuffer = (128ULL << 20) + (8ULL << 10), kMargin = 16ULL << 20;
  const long threads = std::max(1L, blas);  // the exec carried it, or the user's (1 where unreadable)
  const unsigned long long need = kBuffer * static_cast<unsigned long long>(threads) + kMargin;
  void* probe = ::mmap(nullptr, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (probe != MAP_FAILED) {
    ::munmap(probe, need);
    return;
  }
  char message[512] = "";
  const char* name = argv[0] != nullptr ? argv[0] : "hsm";
  if (const char* slash = std::strrchr(name, '/')) name = slash + 1;
  append(message, sizeof message, name);
  append(message, sizeof message, ": error: the address-space limit (ulimit -v) of ");
  append_number(message, sizeof message, static_cast<unsigned long long>(limit.rlim_cur) >> 20);
  append(message, sizeof message, " MiB is too low to start: OpenBLAS maps 128 MiB per thread (");
  append_number(message, sizeof message, static_cast<unsigned long long>(threads));
  append(message, sizeof message, ") as it loads and waits forever when it cannot; raise the limit by ");
  append_number(message, sizeof message, need >> 20);
  append(message, sizeof message, " MiB or more\n");
  const ssize_t written = ::write(2, message, std::strlen(message));
  (void)written;
  ::_exit(1);
}

void use_short_openmp_spin(char** argv, char** envp) { start_before_libraries(argv, envp, true); }

int choose_threads(int pool_threads, int cores, double others_running) {
  const int pool = std::max(1, pool_threads);
  if (cores <= 0 || others_running <= 0) return pool;
  const int free_cores = static_cast<int>(std::floor(cores - others_running + 0.5));
  return std::clamp(free_cores, 1, pool);
}

int choose_decode_threads(long long weights_per_token, int pool_threads, int cores, double others_running) {
  if (weights_per_token < kDecodeSplitMinWeights) return 1;
  return choose_threads(pool_threads, cores, others_running);
}

namespace {

// The state letter of a /proc/<pid>/stat line ("pid (comm) S ..."; comm may hold spaces and
// parentheses, so after the last ')').
char stat_state(const std::string& line) {
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int others_running_now() {
  std::ifstream loadavg("/proc/loadavg");
  double a1, a5, a15;
  long long running = 0;
  char slash;
  if (!(loadavg >> a1 >> a5 >> a15 >> running >> slash)) return -1;
  long long own = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream stat(std::string("/proc/self/task/") + e->d_name + "/stat");
      std::string line;
      if (std::getline(stat, line) && stat_state(line) == 'R') ++own;
    }
    ::closedir(dir);
  }
  return static_cast<int>(std::max(0LL, running - own));
}

LoadWatch::LoadWatch(int interval_ms) : interval_ns_(static_cast<long long>(interval_ms) * 1000000) {}

double LoadWatch::others() {
  const long long now = now_ns();
  if (average_ >= 0 && now - last_ns_ < interval_ns_) return average_;
  last_ns_ = now;
  const int sample = others_running_now();
  if (sample < 0) return average_ = 0;
  // Weight 1/4 per sample: a program that stays runnable reaches 0.68 within four samples
  // (80 ms at the default interval), and one sample of a passing process moves it by 0.25.
  average_ = average_ < 0 ? sample : 0.75 * average_ + 0.25 * sample;
  return average_;
}

int DecodeThreads::choose(int pool_threads) {
  if (pool_threads <= 1) return last_ = 1;  // nothing to choose: no /proc to read
  if (!automatic_threads()) return last_ = pool_threads;
  return last_ = choose_decode_threads(weights_, pool_threads, machine_cores(), load_.others());
}

ThreadLimit::ThreadLimit(int n) {
  init_aten_threads_here();  // as in SerialScope: ATen's first-call setting, then ours
  before_ = omp_get_max_threads();
  omp_set_num_threads(std::max(1, std::min(n, before_)));
}

ThreadLimit::~ThreadLimit() { omp_set_num_threads(before_); }

int machine_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace hsm
