#pragma once
// The what-if edits of the open runs (issue 23), held in one place: each run's edit and the
// edited hsm::Model made from it (Model::edited shares every tensor the edit does not change).
// The Weights view sets an edit here; every engine call of either executor takes the run's
// model through apply(), so a generation, a diagnosis, a probe, an ablation and a what-if
// loss always use the same edit, and no copy of it lives anywhere else to disagree with.
// Thread-safe: the GUI thread sets and reads, the engine threads apply.
#include <QObject>
#include <QString>
#include <map>
#include <memory>
#include <mutex>

#include "hsm/model.h"
#include "hsm/what_if.h"

namespace studio {

class WhatIfs : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;

  // The run's edit from now on (empty: none, the Reset). changed() says so.
  void set(const QString& runDir, const hsm::WhatIf& edits);
  hsm::WhatIf edits(const QString& runDir) const;

  // `trained` (the run's model as loaded) with the run's edit applied, made once per edit and
  // checkpoint and shared by every call; `trained` itself when the run has none. `applied`
  // (when given) receives the edit the returned model carries. An edit `trained` refuses (a
  // new checkpoint of another shape) is dropped, changed() says so, and the refusal
  // (std::invalid_argument) passes to the caller.
  std::shared_ptr<const hsm::Model> apply(const QString& runDir, const std::shared_ptr<const hsm::Model>& trained,
                                          hsm::WhatIf* applied = nullptr);

 signals:
  // Emitted on the thread that changed it; receivers on the GUI thread get it queued.
  void changed(const QString& runDir);

 private:
  struct Entry {
    hsm::WhatIf edits;
    std::weak_ptr<const hsm::Model> base;  // what `edited` was made from
    std::shared_ptr<const hsm::Model> edited;
  };
  static QString key(const QString& runDir);
  mutable std::mutex mutex_;  // held while an edit is applied: both executors get one model
  std::map<QString, Entry> entries_;
};

}  // namespace studio
