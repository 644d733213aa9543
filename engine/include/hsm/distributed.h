#pragma once
// Data-parallel training over PyTorch's c10d (docs/distributed.md): what a rank is
// told (the torchrun environment or `hsm train --nproc N`), in plain C++ so the CLI and the
// studio can read and check it without LibTorch. The process group itself lives in
// engine/src/train/distributed.cpp.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hsm {

// One rank of a data-parallel run. world_size 1 (the default) is an ordinary one-process run,
// unless the launcher environment asked for a group (RANK and WORLD_SIZE set, WORLD_SIZE=1 as
// `torchrun --nproc-per-node 1` sets them): then a group of one rank, over the same process group
// and Reducer as several (docs/distributed.md: the one-rank check of a backend).
struct DistributedOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string backend = "auto";  // auto | gloo | nccl (auto: NCCL on CUDA where LibTorch has it, else Gloo)
  double timeout_s = 300;        // a collective or the rendezvous waits this long for a missing rank
  double bucket_mb = 4;          // gradient bucket size for the overlapped all-reduce (c10d Reducer)
  bool launched = false;         // RANK and WORLD_SIZE came from the environment (a group even of one)
  bool enabled() const { return world_size > 1 || launched; }
  bool is_writer() const { return rank == 0; }  // rank 0 alone writes the run folder
};

// The launcher convention of PyTorch (torchrun, Slurm via srun, a loop over ssh): RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT. None of them set: world_size 1. Throws
// std::invalid_argument naming the variable and the fix for an inconsistent set (WORLD_SIZE
// without RANK, RANK >= WORLD_SIZE, a port that is not a number, ...). Slurm's own SLURM_PROCID /
// SLURM_NTASKS / SLURM_LOCALID stand in for RANK / WORLD_SIZE / LOCAL_RANK when those are unset
// and MASTER_ADDR is set. RANK and WORLD_SIZE set: a group (launched), even of one rank.
DistributedOptions distributed_from_env();

// Checks the options (ranges, the backend's name); throws std::invalid_argument.
void validate(const DistributedOptions& options);

// `hsm train --nproc N` on one machine: starts N copies of this program (/proc/self/exe) with
// `args` and the environment above (MASTER_ADDR 127.0.0.1, a free port), each on
// threads_per_rank LibTorch threads (HSM_BLAS_THREADS 1), and waits for them. When a rank
// dies (a signal, or a non-zero exit) the others get `grace_s` seconds to stop on their own
// (they notice the missing peer and say so), then are killed. Returns the exit status for the
// command: 0 when every rank finished, else the first failing rank's status (128 + signal when
// killed). Lines for the user go to `report` (one at a time: "rank 1 died (signal 9)").
struct LaunchOptions {
  int nproc = 2;
  std::vector<std::string> args;  // the command line for each rank, without the program
  int threads_per_rank = 1;
  double grace_s = 300;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port on the loopback
};
int launch_local_ranks(const LaunchOptions& options, const std::function<void(const std::string&)>& report);

// A TCP port nothing listens on at the moment (bound to port 0 on the loopback, then closed).
int free_local_port();

}  // namespace hsm
