#pragma once
// Debian's libtorch-dev 1.13 ships c10d's reducer.hpp but not the distributed-autograd header
// it includes. The Reducer only holds a shared_ptr to such a context (RPC's distributed autograd,
// unused here) and checks its GradCallback type; this stand-in gives exactly that, and is put on
// the include path only when LibTorch lacks the real header (engine/CMakeLists.txt).
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch::distributed::autograd {
class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;
}  // namespace torch::distributed::autograd
