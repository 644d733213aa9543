// Data-parallel training over PyTorch's own distributed engine (c10d), as DistributedDataParallel
// does it: a TCPStore for the rendezvous, ProcessGroupGloo for the collectives on CPU tensors,
// ProcessGroupNCCL for CUDA tensors where LibTorch 2.x has it, and the DDP Reducer, which hooks
// every parameter's gradient accumulator and all-reduces a bucket of gradients as soon as all of
// its gradients are ready, so communication overlaps the rest of the backward pass. Buckets are
// assigned in reverse parameter order (the last layers' gradients come first in backward), as DDP
// does.
//
// The same code runs against LibTorch 1.13 (Debian 12) and 2.x (Debian 13's 2.6, PyTorch's own
// builds). What c10d changed between them is kept to two functions below: process_group() (a
// ProcessGroupGloo was a ProcessGroup; in 2.x it is a Backend that a ProcessGroup dispatches to,
// by the tensors' device) and make_reducer() (the Reducer's constructor gained and lost arguments
// from release to release).
#include "train/distributed.h"

// A LibTorch built without Gloo (USE_C10D_GLOO undefined, e.g. without USE_DISTRIBUTED) has no
// process group for the CPU, and a build with HSM_DATA_PARALLEL=OFF (engine/CMakeLists.txt) leaves
// this file's c10d code out: data-parallel training is refused in words there.
#if defined(USE_C10D_GLOO) && !defined(HSM_NO_DATA_PARALLEL)
#define HSM_WITH_C10D 1
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>
// NCCL for CUDA tensors: where LibTorch has ProcessGroupNCCL (USE_C10D_NCCL, from its torch_cuda
// target), NCCL's header was found when this was built (engine/CMakeLists.txt defines HSM_WITH_NCCL)
// and LibTorch is 2.x (a ProcessGroup dispatching CPU tensors to Gloo and CUDA tensors to NCCL, as
// init_process_group("cpu:gloo,cuda:nccl") builds; 1.x had one backend per group).
#if defined(USE_C10D_NCCL) && defined(HSM_WITH_NCCL) && TORCH_VERSION_MAJOR >= 2
#define HSM_NCCL 1
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#else
#define HSM_NCCL 0
#endif
#else
#define HSM_WITH_C10D 0
#define HSM_NCCL 0
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <type_traits>

#include "model/torch_compat.h"

namespace hsm {

bool DataParallel::nccl_built() { return HSM_NCCL; }

std::string DataParallel::nccl_absent_reason() {
#if HSM_NCCL
  return "";
#elif defined(HSM_NO_DATA_PARALLEL)
  return "data-parallel training was left out of this build (HSM_DATA_PARALLEL=OFF)";
#elif !defined(USE_C10D_GLOO)
  return "this build's LibTorch (" + std::string(TORCH_VERSION) + ") has no c10d";
#elif !defined(USE_C10D_NCCL)
  return "this build's LibTorch (" + std::string(TORCH_VERSION) + ") was built without NCCL";
#elif TORCH_VERSION_MAJOR < 2
  return "NCCL is wired for LibTorch 2.x, and this build's is " + std::string(TORCH_VERSION);
#else
  return "this build's LibTorch (" + std::string(TORCH_VERSION) +
         ") has NCCL, but NCCL's header nccl.h was not found when hsm was built (Debian: libnccl-dev)";
#endif
}

std::string DataParallel::choose_backend(const std::string& requested, bool cuda, bool nccl,
                                         const std::string& nccl_absent) {
  if (requested == "gloo") return "gloo";
  if (requested == "nccl") {
    if (!cuda)
      throw std::invalid_argument(
          "--backend nccl carries CUDA tensors, and this run trains on the CPU: train with "
          "--device cuda, or use --backend gloo (or auto) on the CPU");
    if (!nccl)
      throw std::invalid_argument("--backend nccl: this build has no NCCL: " + nccl_absent +
                                  "; use --backend auto or gloo (Gloo carries CUDA tensors through the host, slower), "
                                  "or build against a LibTorch with NCCL (docs/distributed.md)");
    return "nccl";
  }
  if (requested != "auto") throw std::invalid_argument("--backend '" + requested + "': choose auto, gloo or nccl");
  return cuda && nccl ? "nccl" : "gloo";
}

#if HSM_WITH_C10D
struct DataParallel::C10d {
  c10::intrusive_ptr<c10d::Store> store;       // this rank's client (rank 0 also serves it)
  c10::intrusive_ptr<c10d::Store> beat_store;  // the heartbeat thread's own connection
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::shared_ptr<c10d::Reducer> reducer;
#if HSM_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // the group's backend for CUDA tensors, if NCCL
#endif
};

namespace {

using std::chrono::milliseconds;

milliseconds ms(double seconds) { return milliseconds(static_cast<int64_t>(seconds * 1000)); }

std::string where(const DistributedOptions& o) { return o.master_addr + ":" + std::to_string(o.master_port); }

bool loopback(const std::string& addr) { return addr == "127.0.0.1" || addr == "localhost" || addr == "::1"; }

std::string text(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }
std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

int64_t numel_of(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

std::string beat_key(int rank) { return "hsm/beat/" + std::to_string(rank); }

// A TCPStore's options: a port and a timeout, and the classic socket server on every LibTorch (from
// 2.3 on there is a libuv one, the default since 2.4, which not every build has: Debian 13's 2.6
// refuses it, "PyTorch was build without libuv support"), so the same behaviour and the same
// messages (a port in use) everywhere.
c10d::TCPStoreOptions store_options(int port, milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.timeout = timeout;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  o.useLibUV = false;
#endif
  return o;
}

// The process group over `store`, with Gloo for CPU tensors (the loss's and the validation's
// all-reduces are on the CPU on every device) and, for CUDA tensors (the parameters and their
// gradients on CUDA), NCCL where `backend` is "nccl", else Gloo too. LibTorch 1.x: ProcessGroupGloo
// is itself the ProcessGroup (Gloo only). 2.x: it is a Backend; a ProcessGroup sends each
// collective to the Backend registered for the tensors' device (what
// torch.distributed.init_process_group("gloo") or ("cpu:gloo,cuda:nccl") builds).
c10::intrusive_ptr<c10d::ProcessGroup> process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                     const c10::intrusive_ptr<c10d::ProcessGroupGloo::Options>& options,
                                                     const std::string& backend, bool cuda, double timeout_s) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("hsm/gloo", store);
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
#if TORCH_VERSION_MAJOR < 2
  (void)backend, (void)cuda, (void)timeout_s;
  return gloo;
#else
  using Type = c10d::ProcessGroup::BackendType;
  auto group = c10::make_intrusive<c10d::ProcessGroup>(prefixed, rank, size);
  group->setBackend(c10::DeviceType::CPU, Type::GLOO, gloo);
  if (backend == "nccl") {
#if HSM_NCCL
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = ms(timeout_s);
    auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>("hsm/nccl", store),
                                                            rank, size, nccl_options);
    group->setDefaultBackend(Type::NCCL);
    group->setBackend(c10::DeviceType::CUDA, Type::NCCL, nccl);
    return group;
#else
    throw std::logic_error("NCCL chosen in a build without it");  // choose_backend refuses it first
#endif
  }
  (void)timeout_s;  // NCCL's alone (Gloo's is in its options)
  group->setDefaultBackend(Type::GLOO);
  if (cuda) group->setBackend(c10::DeviceType::CUDA, Type::GLOO, gloo);
  return group;
#endif
}

// The device a rank trains on: --device as given (cpu, cuda:N), or on CUDA without an index its
// own GPU, cuda:LOCAL_RANK (one rank per GPU, as torchrun's ranks do). Throws, in words, where
// CUDA is absent (compat::parse_device) or the machine has fewer GPUs than ranks.
torch::Device rank_device(const std::string& name, int local_rank) {
  const torch::Device d = compat::parse_device(name);
  if (!d.is_cuda() || d.has_index()) return d;
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  if (local_rank >= gpus)
    throw std::invalid_argument("LOCAL_RANK=" + std::to_string(local_rank) + " trains on CUDA GPU " +
                                std::to_string(local_rank) + ", and this machine has " + std::to_string(gpus) +
                                ": start at most one rank per GPU on a machine (--nproc), or give each rank its "
                                "GPU with --device cuda:N");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

// std::make_shared<T>(args...) where T has that constructor, else null (checked at compile time,
// so a signature this LibTorch lacks is never named).
template <class T, class... Args>
std::shared_ptr<T> make_shared_if(Args&&... args) {
  if constexpr (std::is_constructible_v<T, Args&&...>)
    return std::make_shared<T>(std::forward<Args>(args)...);
  else
    return nullptr;
}

// The DDP Reducer, no unused parameters, gradients copied out of the buckets (not views). Its
// constructor differs between releases; the known forms, newest first (PyTorch's main branch
// of late 2026, the releases after 2.6, 1.13 to 2.6):
//   (params, buckets, group, sparse, cap, find_unused, as_view, names, first_cap,
//    skip_all_reduce_unused, use_python_reducer, cap_list[, batched_grad_copy])
//   (params, buckets, group, sparse, cap, find_unused, as_view, names, first_cap,
//    skip_all_reduce_unused, use_python_reducer)
//   (params, buckets, per_bucket_limits, group, sparse, cap, find_unused, as_view, names, first_cap)
// Null if this LibTorch has none of them (the caller refuses in words).
std::shared_ptr<c10d::Reducer> make_reducer(const std::vector<torch::Tensor>& parameters,
                                            const std::vector<std::vector<size_t>>& buckets,
                                            const std::vector<size_t>& limits,
                                            const c10::intrusive_ptr<c10d::ProcessGroup>& group, int64_t cap,
                                            int64_t first_cap) {
  using Names = std::unordered_map<size_t, std::string>;
  const std::vector<bool> sparse(parameters.size(), false);
  const bool find_unused = false, as_view = false, skip_unused = false, python_reducer = false;
  if (auto r = make_shared_if<c10d::Reducer>(parameters, buckets, group, sparse, cap, find_unused, as_view, Names{},
                                             first_cap, skip_unused, python_reducer, std::vector<int64_t>{}))
    return r;  // an empty cap list: the Reducer's rebuilt buckets keep first_cap, then cap
  if (auto r = make_shared_if<c10d::Reducer>(parameters, buckets, group, sparse, cap, find_unused, as_view, Names{},
                                             first_cap, skip_unused, python_reducer))
    return r;
  return make_shared_if<c10d::Reducer>(parameters, buckets, limits, group, sparse, cap, find_unused, as_view, Names{},
                                       first_cap);
}

}  // namespace

DataParallel::DataParallel(const DistributedOptions& options, const std::string& device)
    : options_(options), device_(torch::kCPU), c10d_(std::make_unique<C10d>()) {
  validate(options_);
  // The backend first, from the device asked for (no CUDA call where the name says it): a backend
  // that cannot carry its tensors is refused before any rendezvous or GPU is touched.
  const bool cuda = device.rfind("cuda", 0) == 0 || (device == "auto" && torch::cuda::is_available());
  backend_ = choose_backend(options_.backend, cuda, nccl_built(), nccl_absent_reason());
  if (cuda && backend_ == "gloo")
    backend_note_ = options_.backend == "gloo"
                        ? "Gloo carries the CUDA tensors through the host"
                        : "no NCCL: " + nccl_absent_reason() + "; Gloo carries the CUDA tensors through the host";
  device_ = rank_device(device, options_.local_rank);
#if HSM_NCCL
  if (device_.is_cuda()) c10::cuda::set_device(device_.index());  // NCCL's communicator and streams on it
#endif

  // The rendezvous: rank 0 serves the store and waits until every rank has connected.
  c10d::TCPStoreOptions so = store_options(options_.master_port, ms(options_.timeout_s));
  so.isServer = options_.rank == 0;
  so.numWorkers = static_cast<size_t>(options_.world_size);
  so.waitWorkers = true;
  try {
    c10d_->store = c10::make_intrusive<c10d::TCPStore>(options_.master_addr, so);
  } catch (const std::exception& e) {
    const std::string why = first_line(e.what());
    if (options_.rank == 0 && (why.find("in use") != std::string::npos || why.find("EADDRINUSE") != std::string::npos))
      throw std::invalid_argument("MASTER_PORT " + std::to_string(options_.master_port) + " on " +
                                  options_.master_addr +
                                  " is in use (another run, or another program): choose a free MASTER_PORT for "
                                  "every rank (hsm train --nproc picks one itself)");
    if (options_.rank == 0)
      throw std::invalid_argument("rank 0 could not open the rendezvous at " + where(options_) + " or not every one of " +
                                  std::to_string(options_.world_size) + " ranks joined it within " +
                                  std::to_string(static_cast<int>(options_.timeout_s)) +
                                  " s (--timeout): are all ranks started with the same MASTER_ADDR, MASTER_PORT "
                                  "and WORLD_SIZE? (" + why + ")");
    throw std::invalid_argument("rank " + std::to_string(options_.rank) + " could not reach the rendezvous at " +
                                where(options_) + " within " + std::to_string(static_cast<int>(options_.timeout_s)) +
                                " s (--timeout): is rank 0 running, and MASTER_ADDR and MASTER_PORT the same "
                                "for every rank? (" + why + ")");
  }

  // The heartbeat: its own connection (not counted as a worker), a beat and the step every 0.5 s.
  c10d::TCPStoreOptions bo = store_options(options_.master_port, ms(std::min(options_.timeout_s, 10.0)));
  bo.isServer = false;
  bo.waitWorkers = false;
  c10d_->beat_store = c10::make_intrusive<c10d::TCPStore>(options_.master_addr, bo);
  beat_ = std::thread([this] { heartbeat_loop(); });

  auto gloo_options = c10d::ProcessGroupGloo::Options::create(ms(options_.timeout_s));
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  else if (loopback(options_.master_addr))
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  else
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  gloo_options->threads = 2;
  guarded("the process group's rendezvous", [&] {
    c10d_->group = process_group(c10d_->store, options_.rank, options_.world_size, gloo_options, backend_,
                                 device_.is_cuda(), options_.timeout_s);
  });
#if HSM_NCCL
  if (backend_ == "nccl")
    c10d_->nccl =
        c10::dynamic_intrusive_pointer_cast<c10d::ProcessGroupNCCL>(c10d_->group->getBackend(c10::DeviceType::CUDA));
#endif
}

DataParallel::~DataParallel() {
  stop_beat_ = true;
  if (beat_.joinable()) beat_.join();
  if (!c10d_) return;  // abandoned after a failure
  c10d_->reducer.reset();  // its hooks first, then the group it uses
#if HSM_NCCL
  if (c10d_->nccl) c10d_->nccl->shutdown();  // NCCL's communicators ended in order (else its destructor warns)
  c10d_->nccl.reset();
#endif
  c10d_->group.reset();
}

void DataParallel::heartbeat_loop() {
  int64_t beat = 0;
  while (!stop_beat_) {
    try {
      c10d_->beat_store->set(beat_key(options_.rank), bytes(std::to_string(++beat) + " " + std::to_string(step_.load())));
    } catch (const std::exception&) {
      return;  // the store is gone (rank 0 ended): the main thread finds out at its next collective
    }
    for (int i = 0; i < 5 && !stop_beat_; ++i) std::this_thread::sleep_for(milliseconds(100));
  }
}

void DataParallel::publish_ready(const std::string& error) {
  guarded("telling the other ranks that the data is ready", [&] {
    const std::string v = error.empty() ? "ready" : "error: " + error;
    c10d_->store->set("hsm/ready", bytes(v));
  });
}

void DataParallel::await_ready() {
  std::string v;
  try {
    // Rank 0 may train a tokenizer first (minutes): wait for as long as it lives. Its death
    // closes the store's socket, which ends the wait at once.
    c10d_->store->wait({"hsm/ready"}, std::chrono::hours(24 * 7));
    v = text(c10d_->store->get("hsm/ready"));
  } catch (const std::exception& e) {
    throw DistributedFailure("rank " + std::to_string(options_.rank) +
                             ": rank 0 ended while preparing the run folder and the data (" + first_line(e.what()) +
                             ")");
  }
  if (v.rfind("error: ", 0) == 0)
    throw DistributedFailure("rank 0 could not prepare the run: " + v.substr(7));
}

void DataParallel::attach(const std::vector<torch::Tensor>& parameters) {
  guarded("the broadcast of rank 0's parameters", [&] {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> flat;
    for (const auto& p : parameters) flat.push_back(p.detach().reshape({-1}));
    std::vector<torch::Tensor> all = {torch::cat(flat)};
    c10d::BroadcastOptions bo;
    bo.rootRank = 0;
    c10d_->group->broadcast(all, bo)->wait();
    int64_t offset = 0;
    for (const auto& p : parameters) {
      p.detach().copy_(all[0].narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  });
  // The whole gradient's all-reduce alone (a flat tensor of every parameter, where the gradients
  // are), for the log. On CUDA wait() only orders the stream: the time is taken after a sync.
  guarded("a timing all-reduce", [&] {
    std::vector<torch::Tensor> flat = {
        torch::zeros({numel_of(parameters)}, torch::TensorOptions().device(parameters.at(0).device()))};
    auto sync = [&] {
      if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
    };
    c10d_->group->allreduce(flat)->wait();  // warm-up (NCCL: its communicator is made here)
    sync();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) c10d_->group->allreduce(flat)->wait();
    sync();
    full_all_reduce_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
  });
  // When each gradient is ready: a tensor hook runs as backward computes it (before the
  // Reducer's hook on its accumulator).
  for (const auto& p : parameters)
    p.register_hook([this](const torch::Tensor&) {
      last_gradient_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - backward_start_).count();
    });
  const auto bucket_bytes = static_cast<size_t>(options_.bucket_mb * 1024 * 1024);
  const size_t first_bucket_bytes = std::min<size_t>(bucket_bytes, 1024 * 1024);
  auto [indices, limits] = c10d::compute_bucket_assignment_by_size(parameters, {first_bucket_bytes, bucket_bytes});
  std::reverse(indices.begin(), indices.end());
  std::reverse(limits.begin(), limits.end());
  c10d_->reducer = make_reducer(parameters, indices, limits, c10d_->group, static_cast<int64_t>(bucket_bytes),
                                static_cast<int64_t>(first_bucket_bytes));
  if (!c10d_->reducer)
    throw std::invalid_argument("data-parallel training: this LibTorch's (" + std::string(TORCH_VERSION) +
                                ") DDP Reducer has a constructor HSM Studio does not know (docs/distributed.md)");
}

void DataParallel::prepare_backward(const torch::Tensor& loss) {
  backward_start_ = std::chrono::steady_clock::now();
  last_gradient_s_ = 0;
  c10d_->reducer->prepare_for_forward();
  c10d_->reducer->prepare_for_backward({loss});
}

void DataParallel::all_reduce_sum(torch::Tensor& t) {
  std::vector<torch::Tensor> v = {t};
  c10d_->group->allreduce(v)->wait();
}

std::string DataParallel::diagnose() {
  // Two readings of every rank's heartbeat, 1.5 s apart: one whose beat did not move is gone
  // (dead, stopped, or its machine unreachable); else the one behind this rank's step is late.
  auto read = [&] {
    std::vector<std::pair<int64_t, int64_t>> beats(static_cast<size_t>(options_.world_size), {-1, -1});
    for (int r = 0; r < options_.world_size; ++r) {
      if (!c10d_->beat_store->check({beat_key(r)})) continue;
      std::istringstream in(text(c10d_->beat_store->get(beat_key(r))));
      in >> beats[static_cast<size_t>(r)].first >> beats[static_cast<size_t>(r)].second;
    }
    return beats;
  };
  try {
    const auto before = read();
    std::this_thread::sleep_for(milliseconds(1500));
    const auto after = read();
    std::string gone, behind;
    for (int r = 0; r < options_.world_size; ++r) {
      if (r == options_.rank) continue;
      const auto [beat, step] = after[static_cast<size_t>(r)];
      const std::string seen = step >= 0 ? " (last seen at step " + std::to_string(step) + ")" : "";
      if (beat < 0 || beat == before[static_cast<size_t>(r)].first)
        gone += (gone.empty() ? "rank " : ", rank ") + std::to_string(r) + " stopped responding" + seen;
      else if (step < step_)
        behind += (behind.empty() ? "rank " : ", rank ") + std::to_string(r) + " is behind" + seen;
    }
    if (!gone.empty()) return gone + ": its process died or hangs, or its machine is unreachable";
    if (!behind.empty())
      return behind + ", this rank is at step " + std::to_string(step_) + ": it did not catch up within the timeout";
    return "every rank still answers; the collective itself failed";
  } catch (const std::exception&) {
    return "rank 0 is gone: the rendezvous store it holds at " + where(options_) + " does not answer";
  }
}

void DataParallel::fail(const std::string& what, const std::string& error) {
  stop_beat_ = true;  // this rank's own beat stops too: the others see it leave
  if (beat_.joinable()) beat_.join();  // (its store connection is diagnose's now)
  const std::string who = diagnose();
  abandon();
  throw DistributedFailure("rank " + std::to_string(options_.rank) + ": " + what + " failed at step " +
                           std::to_string(step_) + ": " + who + " (c10d: " + first_line(error) + ")");
}

// After a failure the process group may hold work a dead rank will never answer, and its
// destructor waits for that work: keep it (and what it uses) alive until the process exits.
void DataParallel::abandon() { c10d_.release(); }

#else  // no Gloo in this LibTorch, or HSM_DATA_PARALLEL=OFF
struct DataParallel::C10d {};

DataParallel::DataParallel(const DistributedOptions& options, const std::string&)
    : options_(options), device_(torch::kCPU) {
#if defined(HSM_NO_DATA_PARALLEL)
  throw std::invalid_argument("data-parallel training was left out of this build (HSM_DATA_PARALLEL=OFF; "
                              "docs/distributed.md)");
#else
  throw std::invalid_argument("data-parallel training needs c10d's Gloo process group, and this build's LibTorch (" +
                              std::string(TORCH_VERSION) + ") was built without it (docs/distributed.md)");
#endif
}
DataParallel::~DataParallel() = default;
void DataParallel::publish_ready(const std::string&) {}
void DataParallel::await_ready() {}
void DataParallel::attach(const std::vector<torch::Tensor>&) {}
void DataParallel::prepare_backward(const torch::Tensor&) {}
void DataParallel::all_reduce_sum(torch::Tensor&) {}
void DataParallel::fail(const std::string& what, const std::string& error) {
  throw DistributedFailure(what + " failed: " + error);
}
#endif

}  // namespace hsm
