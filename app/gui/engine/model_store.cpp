#include "gui/engine/model_store.h"

namespace studio {

std::shared_ptr<const hsm::Model> ModelStore::model(const std::string& runDir, int64_t stamp,
                                                    const std::string& device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = entries_[runDir];
  if (auto held = e.model.lock(); held && e.stamp == stamp && e.device == device) return held;
  auto loaded = hsm::Model::load(runDir, device);
  e = {stamp, device, loaded};
  return loaded;
}

}  // namespace studio
