#pragma once
// The open run folders, shared by every view (a list model: the toolbar's combo shows it).
// One of them is current. Each run's metrics.jsonl is followed as it grows, whether this
// studio trains it or another process (`hsm train`) does, as TensorBoard follows a log dir.
#include <QAbstractListModel>
#include <QColor>
#include <QTemporaryDir>
#include <QTimer>
#include <memory>
#include <vector>

#include "hsm/run_folder.h"

namespace studio {

struct RunEntry {
  QString dir;                        // absolute path
  bool has_info = false;              // config.json read (a new run has none until its first checkpoint)
  hsm::RunInfo info;                  // valid when has_info
  hsm::ModelConfig model;             // info.model, or the config a pending run was started with
  std::string task;                   // a task run's task (hsm::run_task, "mqar:..."); "" for a corpus run
  std::vector<hsm::MetricRecord> metrics;
  std::unique_ptr<hsm::MetricsReader> reader;
  QColor color;                       // the run's colour in every plot
  qint64 config_stamp = 0;            // config.json's modification time when read
  // A run opened at a kept step (RunList::openAtStep): `dir` is a read-only copy of the model of
  // run `source` as it was at `step`; -1 and "" for a run opened as it is.
  QString source;
  qint64 step = -1;
  bool atStep() const { return step >= 0; }
  QString name() const;  // folder name; "NAME at step S" for a run opened at a kept step
};

class RunList : public QAbstractListModel {
  Q_OBJECT
 public:
  explicit RunList(QObject* parent = nullptr);
  ~RunList() override;

  // Opens a run folder (or returns the row of one already open). Throws std::runtime_error
  // naming the folder when it is not a run folder.
  int open(const QString& dir);
  // A run this studio is about to train: listed at once, its config.json read once written.
  int addPending(const QString& dir, const hsm::ModelConfig& model);
  // Opens run `dir`'s model as it was at `step` (a snapshot or an older checkpoint it keeps,
  // hsm::RunFolder::kept_steps) as a run of its own, "NAME at step S", and returns its row (the
  // one already open when it is). Every view then shows that model as it shows any run. Its
  // folder is a copy made by the run folder's one recipe for copies (RunFolder::publish_copy):
  // the step's weights and config, the task or tokenizer, metrics.jsonl and diagnostics.jsonl up
  // to the step, in
  // this list's temporary folder (removed on close and at exit), so nothing a view does to it (a
  // what-if edit, a training continued) ever reaches the run folder. Throws std::runtime_error
  // naming the run and its kept steps when it keeps no model of `step`.
  int openAtStep(const QString& dir, qint64 step);
  // The temporary folders of runs at a step (<temp>/hsm-studio-steps-XXXXXX) are removed when
  // the list goes; a studio that was killed leaves its folder, marked with its process id.
  // Removes every such folder whose studio has ended (called before the first copy); returns
  // how many. A folder without the mark is never touched.
  static int removeCopiesOfEndedStudios();
  static constexpr const char* kStepCopiesPrefix = "hsm-studio-steps-";
  static constexpr const char* kStepCopiesOwner = "studio.pid";
  void close(int row);

  int count() const { return static_cast<int>(runs_.size()); }
  const RunEntry& at(int row) const { return *runs_.at(static_cast<size_t>(row)); }
  int indexOf(const QString& dir) const;
  int current() const { return current_; }
  const RunEntry* currentRun() const { return current_ >= 0 ? &at(current_) : nullptr; }
  void setCurrent(int row);

  // Reads what was appended to every run's metrics.jsonl and any rewritten config.json.
  // Runs by itself on a timer; public so tests and the smoke mode can force it.
  void poll();
  // Whether a run's history is still being read in slices.
  bool loading() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

 signals:
  void runAdded(int row);
  void runRemoved(int row);
  void metricsAppended(int row);
  void metricsReset(int row);
  void infoChanged(int row);
  void currentChanged(int row);
  // Lines of a run's metrics.jsonl that are no records were skipped, each named with its
  // line number ("<path> line N: what is wrong (skipped)"); the rest of the curve is shown.
  void metricsProblems(int row, const QStringList& problems);

 private:
  bool refreshInfo(RunEntry& run);
  int insert(std::unique_ptr<RunEntry> run);  // reads its first metrics, gives it a colour, lists it
  void reportProblems(int row);              // metricsProblems for what the last poll skipped
  QColor nextColor();
  void schedulePoll();  // the next slice of a long metrics file, after pending events

  std::vector<std::unique_ptr<RunEntry>> runs_;
  int current_ = -1;
  int colorsUsed_ = 0;
  QTimer pollTimer_;
  bool pollScheduled_ = false;
  std::unique_ptr<QTemporaryDir> copies_;  // the folders of the runs opened at a step
};

// Why a prompt cannot be run on `run` now ("Open a run first.", no checkpoint yet, an empty
// prompt), or an empty string: the Diagnostics and Probe views refuse with the same words. A
// task run's prompt is a task example, never the text.
QString prompt_run_refusal(const RunEntry* run, const QString& prompt);

}  // namespace studio
