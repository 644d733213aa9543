#pragma once
// What every view of the studio shares (docs/architecture.md, "Add a view"): the open runs
// and the engine, the current run, the plots File › Export writes, the notice shown while the
// current run has a what-if edit, and the rule that no view shows another run's results.
// A view builds its widgets, then connects its signals (two functions its constructor calls),
// and overrides the hooks below; the base calls them when the current run changes.
#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>

class QLabel;

namespace studio {

class EngineHost;
class NoticeBar;
class PlotPanel;
class RunList;
struct RunEntry;

class StudioView : public QWidget {
  Q_OBJECT
 public:
  StudioView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  RunList* runList() const { return runs_; }  // the open runs every view shares

  // The plots File › Export writes (PNG, PDF, SVG and CSV each).
  virtual QList<PlotPanel*> plots() const { return {}; }
  // Writes plots() into `folder`, one file per plot and format, named after the plot's title;
  // returns the files written (the first failure in *error).
  QStringList exportPlots(const QString& folder, QString* error = nullptr) const;
  // The what-if notice's text while shown (empty when the current run has no edit or the view
  // shows none).
  QString whatIfBanner() const;

  // What the window asks of any view (MainWindow knows the views only as StudioViews):
  // Opens a folder of the view's own kind (the Lab: a lab folder; Experiments: a sweep folder);
  // false, with the reason shown, when it holds none. A view of the current run opens none.
  virtual bool openFolder(const QString& dir) {
    Q_UNUSED(dir);
    return false;
  }
  // The bundled demo models were opened (the Playground readies the paper's first prompt).
  virtual void demoModelsOpened() {}
  // What the view runs in processes of its own that closing the studio stops, for the question
  // "A lab is running": "lab", "sweep"; empty when nothing runs.
  virtual QString runningWork() const { return {}; }
  // The studio closes: stop what the view runs (a lab's or a sweep's runs at their step, with
  // their checkpoints; a generation).
  virtual void stopForClose() {}

 protected:
  // The current run switched, or was closed, or its checkpoint changed: drop (or hide) at once
  // whatever the view shows of another run, so nothing of it is left under the new run's
  // name, and say plainly what is missing. Called whether the view is shown or not.
  virtual void leaveRun() {}
  // The view is shown and the current run changed since it last was (or it is shown for the
  // first time): show the current run's results, computing them when cheap (a diagnosis of
  // the prompt, the weights) or offering to (a button, a sentence).
  virtual void showRun() {}
  // Whether the view, shown, still owes showRun() for the current run.
  bool runPending() const { return runPending_; }

  // The notice for the current run's what-if edit: hidden without one, else "Edited model …"
  // and `consequence` (what the edit means for this view). Kept up to date here; the view
  // places it. Its label is named `objectName` without "_box".
  NoticeBar* makeWhatIfNotice(const QString& objectName, const QString& consequence,
                              const QList<QWidget*>& controls = {});
  void updateWhatIfNotice();

  // The views' "Export all…" button: asks for a folder, runs `exportAll(folder, &error)` and
  // says in `status` how many files it wrote there (a warning box naming the failure instead).
  void exportAllDialog(const QString& title, const std::function<QStringList(const QString&, QString*)>& exportAll,
                       QLabel* status);

  const RunEntry* currentRun() const;
  QString currentRunDir() const;  // absolute; empty when none is open
  // The name a result of `runDir` is shown under (its folder's name).
  static QString runName(const QString& runDir);

  void showEvent(QShowEvent* event) override;

  RunList* runs_;
  EngineHost* engine_;

 private:
  void currentChanged();
  NoticeBar* whatIfNotice_ = nullptr;
  QString whatIfConsequence_;
  bool runPending_ = true;
};

}  // namespace studio
