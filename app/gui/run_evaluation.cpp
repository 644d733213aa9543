#include "gui/run_evaluation.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <cmath>

#include "gui/run_list.h"

namespace studio {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("RunEvaluation", text); }

bool same_file(const QString& a, const QString& b) {
  const QString ca = QFileInfo(a).canonicalFilePath(), cb = QFileInfo(b).canonicalFilePath();
  return !ca.isEmpty() && ca == cb;
}

}  // namespace

std::optional<RunEvaluation> recorded_evaluation(const RunEntry& run, const QString& dataPath) {
  if (!run.has_info || !run.task.empty() || run.info.training.eval_batches != 0) return std::nullopt;
  if (!same_file(dataPath, QString::fromStdString(run.info.data_path))) return std::nullopt;
  for (auto it = run.metrics.rbegin(); it != run.metrics.rend(); ++it)
    if (it->kind == "eval" && it->step == run.info.step && std::isfinite(it->val_loss))
      return RunEvaluation{it->val_loss, it->val_accuracy, it->step};
  return std::nullopt;
}

QString evaluation_text(double loss, qint64 windows, const QString& layout) {
  const QString which = windows > 0 ? tr("all %1 %2 windows").arg(windows).arg(layout)
                                    : tr("all %1 validation windows").arg(layout).simplified();
  return tr("its evaluation: %1 nats (%2)").arg(loss, 0, 'f', 4).arg(which);
}

QString partial_loss_text(double loss, qint64 windows) {
  return tr("%1 nats on the first %2 windows").arg(loss, 0, 'f', 4).arg(windows);
}

}  // namespace studio
