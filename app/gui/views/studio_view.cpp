#include "gui/views/studio_view.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QRegularExpression>
#include <QTimer>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/widgets/notice_bar.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/widget_export.h"

namespace studio {

StudioView::StudioView(RunList* runs, EngineHost* engine, QWidget* parent)
    : QWidget(parent), runs_(runs), engine_(engine) {
  // (A closed run is followed by currentChanged too, once the list's current row is right.)
  connect(runs_, &RunList::currentChanged, this, &StudioView::currentChanged);
  if (engine_) connect(engine_, &EngineHost::whatIfChanged, this, &StudioView::updateWhatIfNotice);
}

void StudioView::currentChanged() {
  updateWhatIfNotice();
  leaveRun();
  runPending_ = true;
  if (isVisible()) {
    runPending_ = false;
    showRun();
  }
}

void StudioView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (!runPending_) return;
  // Queued, so a caller that shows the view and starts its own work at once goes first.
  QTimer::singleShot(0, this, [this] {
    if (!isVisible() || !runPending_) return;
    runPending_ = false;
    showRun();
  });
}

NoticeBar* StudioView::makeWhatIfNotice(const QString& objectName, const QString& consequence,
                                        const QList<QWidget*>& controls) {
  auto* text = new QLabel;
  text->setObjectName(QString(objectName).remove(QStringLiteral("_box")));
  text->setWordWrap(true);
  whatIfNotice_ = new NoticeBar(objectName, text, controls);
  whatIfConsequence_ = consequence;
  updateWhatIfNotice();
  return whatIfNotice_;
}

void StudioView::updateWhatIfNotice() {
  if (!whatIfNotice_) return;
  const QString dir = currentRunDir();
  whatIfNotice_->showWhatIf(dir.isEmpty() || !engine_ ? hsm::WhatIf{} : engine_->whatIf(dir), whatIfConsequence_);
}

QString StudioView::whatIfBanner() const { return whatIfNotice_ ? whatIfNotice_->shownText() : QString(); }

const RunEntry* StudioView::currentRun() const { return runs_->currentRun(); }

QString StudioView::currentRunDir() const {
  const RunEntry* run = runs_->currentRun();
  return run ? QDir(run->dir).absolutePath() : QString();
}

QString StudioView::runName(const QString& runDir) { return QFileInfo(runDir).fileName(); }

void StudioView::exportAllDialog(const QString& title,
                                 const std::function<QStringList(const QString&, QString*)>& exportAll,
                                 QLabel* status) {
  const QString folder = QFileDialog::getExistingDirectory(this, title, StudioSettings::dialogFolder());
  if (folder.isEmpty()) return;
  StudioSettings::setDialogFolder(folder);
  QString error;
  const QStringList files = exportAll(folder, &error);
  if (!error.isEmpty())
    QMessageBox::warning(this, tr("Export failed"), error);
  else
    status->setText(tr("Wrote %1 files to %2.").arg(files.size()).arg(folder));
}

QStringList StudioView::exportPlots(const QString& folder, QString* error) const {
  QStringList written;
  QDir().mkpath(folder);
  for (PlotPanel* plot : plots()) {
    QString base = plot->title().toLower();
    base.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    base = export_stem(plot) + QLatin1Char('-') + base;  // the current run and the view
    for (const char* ext : {"png", "pdf", "svg", "csv"}) {
      const QString path = QDir(folder).filePath(base + QLatin1Char('.') + QLatin1String(ext));
      const QString e = plot->exportTo(path);
      if (e.isEmpty())
        written << path;
      else if (error && error->isEmpty())
        *error = e;
    }
  }
  return written;
}

}  // namespace studio
