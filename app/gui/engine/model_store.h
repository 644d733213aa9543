#pragma once
// The loaded models of the open runs, one per run folder, checkpoint and device, shared by the
// studio's interactive and analysis workers (docs/architecture.md, "Threads"). An hsm::Model is
// immutable and threads may use it at once, so the second worker to need a run's model takes
// the one the first loaded instead of loading a copy of its own. Thread-safe.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hsm/model.h"

namespace studio {

class ModelStore {
 public:
  // The model of `runDir` whose weights file has modification time `stamp`, on `device`:
  // the one a worker still holds, else loaded now (hsm::Model::load; its errors pass through).
  std::shared_ptr<const hsm::Model> model(const std::string& runDir, int64_t stamp, const std::string& device);

 private:
  struct Entry {
    int64_t stamp = 0;
    std::string device;
    std::weak_ptr<const hsm::Model> model;  // the workers own it: gone when neither holds it
  };
  std::mutex mutex_;  // held while loading, so two workers never load the same run twice
  std::map<std::string, Entry> entries_;
};

}  // namespace studio
