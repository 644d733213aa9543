#include "gui/engine/what_ifs.h"

#include <QDir>

namespace studio {

QString WhatIfs::key(const QString& runDir) { return QDir(runDir).absolutePath(); }

void WhatIfs::set(const QString& runDir, const hsm::WhatIf& edits) {
  const QString k = key(runDir);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (edits.empty())
      entries_.erase(k);
    else
      entries_[k] = Entry{edits, {}, nullptr};
  }
  emit changed(k);
}

hsm::WhatIf WhatIfs::edits(const QString& runDir) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key(runDir));
  return it == entries_.end() ? hsm::WhatIf{} : it->second.edits;
}

std::shared_ptr<const hsm::Model> WhatIfs::apply(const QString& runDir,
                                                 const std::shared_ptr<const hsm::Model>& trained,
                                                 hsm::WhatIf* applied) {
  const QString k = key(runDir);
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = entries_.find(k);
  if (it == entries_.end()) {
    if (applied) *applied = {};
    return trained;
  }
  Entry& e = it->second;
  if (!e.edited || e.base.lock() != trained) {
    try {
      e.edited = trained->edited(e.edits);
      e.base = trained;
    } catch (const std::invalid_argument&) {
      entries_.erase(it);
      lock.unlock();
      emit changed(k);
      throw;
    }
  }
  if (applied) *applied = e.edits;
  return e.edited;
}

}  // namespace studio
