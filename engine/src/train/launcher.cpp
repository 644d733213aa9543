// The launcher side of data-parallel training (hsm/distributed.h): the torchrun environment
// read and checked, and `hsm train --nproc N` starting N ranks on this machine. No LibTorch.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "hsm/distributed.h"
#include "hsm/worker_process.h"

namespace hsm {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, const char* value, int lo, int hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi)
    throw std::invalid_argument(std::string(name) + "='" + value + "' is not a whole number from " +
                                std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<int>(v);
}

}  // namespace

DistributedOptions distributed_from_env() {
  DistributedOptions o;
  const char* rank = env("RANK");
  const char* world = env("WORLD_SIZE");
  const char* local = env("LOCAL_RANK");
  // Slurm's srun sets its own names; MASTER_ADDR says the user meant a distributed run.
  if (!rank && !world && env("MASTER_ADDR") && env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    rank = env("SLURM_PROCID");
    world = env("SLURM_NTASKS");
    local = env("SLURM_LOCALID");
  }
  if (!rank && !world) return o;  // one process
  if (world && !rank)
    throw std::invalid_argument("WORLD_SIZE=" + std::string(world) +
                                " is set but RANK is not: set RANK (0 .. WORLD_SIZE-1) for each process, or "
                                "unset WORLD_SIZE (or use hsm train --nproc N on one machine)");
  if (rank && !world)
    throw std::invalid_argument("RANK=" + std::string(rank) +
                                " is set but WORLD_SIZE is not: set WORLD_SIZE to the number of processes");
  o.world_size = env_int("WORLD_SIZE", world, 1, 1 << 16);
  o.rank = env_int("RANK", rank, 0, 1 << 16);
  if (o.rank >= o.world_size)
    throw std::invalid_argument("RANK=" + std::to_string(o.rank) + " is not below WORLD_SIZE=" +
                                std::to_string(o.world_size) + ": ranks count from 0 to WORLD_SIZE-1");
  o.local_rank = local ? env_int("LOCAL_RANK", local, 0, 1 << 16) : 0;
  o.launched = true;
  if (o.world_size > 1) {
    if (!env("MASTER_ADDR"))
      throw std::invalid_argument("MASTER_ADDR is not set: give every rank the address of the machine of rank 0 "
                                  "(127.0.0.1 on one machine)");
    if (!env("MASTER_PORT"))
      throw std::invalid_argument("MASTER_PORT is not set: give every rank the same free TCP port of rank 0's "
                                  "machine (e.g. 29500)");
  }
  if (const char* a = env("MASTER_ADDR")) o.master_addr = a;
  if (const char* p = env("MASTER_PORT")) o.master_port = env_int("MASTER_PORT", p, 1, 65535);
  return o;
}

void validate(const DistributedOptions& o) {
  if (o.world_size < 1) throw std::invalid_argument("the world size must be at least 1");
  if (o.rank < 0 || o.rank >= o.world_size)
    throw std::invalid_argument("rank " + std::to_string(o.rank) + " is outside 0.." + std::to_string(o.world_size - 1));
  if (o.backend != "auto" && o.backend != "gloo" && o.backend != "nccl")
    throw std::invalid_argument("--backend '" + o.backend + "': choose auto, gloo or nccl");
  if (!(o.timeout_s > 0 && o.timeout_s <= 7 * 24 * 3600.0))
    throw std::invalid_argument("--timeout must be a number of seconds above 0 (default 300)");
  if (!(o.bucket_mb > 0 && o.bucket_mb <= 1024))
    throw std::invalid_argument("--bucket-mb must be above 0 and at most 1024 (default 4)");
  if (o.master_port < 1 || o.master_port > 65535)
    throw std::invalid_argument("MASTER_PORT " + std::to_string(o.master_port) + " is not a TCP port (1..65535)");
}

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot find a free port on the loopback: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

namespace {

std::string status_text(int status) {
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "exit status " + std::to_string(WEXITSTATUS(status));
}
int status_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

}  // namespace

int launch_local_ranks(const LaunchOptions& o, const std::function<void(const std::string&)>& report) {
  if (o.nproc < 1) throw std::invalid_argument("--nproc must be at least 1");
  const int port = o.master_port > 0 ? o.master_port : free_local_port();
  std::vector<pid_t> pids(static_cast<size_t>(o.nproc), -1);
  for (int r = 0; r < o.nproc; ++r) {
    // A rank ends with its launcher (killed by Slurm, a terminal closed): no orphan training on.
    WorkerOptions rank;
    rank.argv = {"hsm"};
    rank.argv.insert(rank.argv.end(), o.args.begin(), o.args.end());
    rank.program = "/proc/self/exe";
    rank.env = {{"RANK", std::to_string(r)},
                {"LOCAL_RANK", std::to_string(r)},
                {"WORLD_SIZE", std::to_string(o.nproc)},
                {"MASTER_ADDR", o.master_addr},
                {"MASTER_PORT", std::to_string(port)},
                {"HSM_RANK_THREADS", std::to_string(o.threads_per_rank)}};
    rank.what = "rank " + std::to_string(r);
    try {
      pids[static_cast<size_t>(r)] = start_worker(rank);
    } catch (...) {
      signal_workers(pids, SIGKILL);
      throw;
    }
  }
  report(std::to_string(o.nproc) + " ranks on this machine (rendezvous " + o.master_addr + ":" + std::to_string(port) +
         ", " + std::to_string(o.threads_per_rank) + " LibTorch thread(s) each)");

  // A stop signal to the launcher (Ctrl-C reaches the whole process group; SIGINT, SIGTERM or
  // SIGHUP sent to the launcher alone do not) is passed on to every rank: they stop at a step
  // and rank 0 writes a checkpoint; the launcher itself waits for them (issue 34).
  StopSignals stop(false);  // no SA_RESTART: the wait returns to pass a stop on

  int result = 0, running = o.nproc;
  bool failed = false;
  auto deadline = std::chrono::steady_clock::time_point::max();
  while (running > 0) {
    const WorkerEnd end = wait_worker(pids, failed);
    if (const int sig = StopSignals::take(); sig != 0) {
      report("passing " + std::string(::strsignal(sig)) + " on to the ranks");
      signal_workers(pids, sig);
    }
    if (end.pid < 0) break;
    if (end.pid == 0 && !failed) continue;  // a signal interrupted the wait
    if (end.pid == 0) {  // failed: the others have until the deadline to stop on their own
      if (std::chrono::steady_clock::now() > deadline) {
        report("stopping the remaining ranks (" + std::to_string(running) + ") after " +
               std::to_string(static_cast<int>(o.grace_s)) + " s");
        signal_workers(pids, SIGKILL);
        deadline = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const int status = end.status;
    const auto it = std::find(pids.begin(), pids.end(), end.pid);
    const int rank = static_cast<int>(it - pids.begin());
    *it = -1;
    --running;
    const bool ok = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 130);
    if (ok) {
      if (result == 0 && WEXITSTATUS(status) == 130) result = 130;  // stopped: continue with --resume
      continue;
    }
    if (!failed) {
      failed = true;
      result = status_code(status);
      if (WIFSIGNALED(status)) report("rank " + std::to_string(rank) + " died (" + status_text(status) + ")");
      else report("rank " + std::to_string(rank) + " failed (" + status_text(status) + ")");
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(o.grace_s * 1000));
    }
  }
  return result;
}

}  // namespace hsm
