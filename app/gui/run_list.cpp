#include "gui/run_list.h"
#include "gui/widgets/colour_maps.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <filesystem>
#include <cerrno>
#include <csignal>
#include <unistd.h>
#include <stdexcept>

#include "hsm/params.h"
#include "hsm/run_folder.h"

namespace studio {

namespace {

// metrics.jsonl is appended a line every few seconds at most; a quarter second keeps the
// curves live without a measurable cost (a stat per open run).
constexpr int kPollMs = 250;
// A long history (100k records are ~16 MB of JSON) is read in slices between event-loop
// turns, so opening it never stalls the GUI; each slice parses in a few milliseconds.
constexpr uint64_t kSliceBytes = 128 * 1024;

qint64 stamp(const QString& path) {
  const QFileInfo f(path);
  return f.exists() ? f.lastModified().toMSecsSinceEpoch() : 0;
}

// The run's task, "" for a corpus run or a damaged task.json (loading its model then says what
// is wrong; its curves still show).
std::string task_of(const QString& dir) {
  try {
    return hsm::run_task(dir.toStdString());
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

QString RunEntry::name() const {
  return atStep() ? QObject::tr("%1 at step %2").arg(QFileInfo(source).fileName()).arg(step)
                  : QFileInfo(dir).fileName();
}

RunList::RunList(QObject* parent) : QAbstractListModel(parent) {
  pollTimer_.setInterval(kPollMs);
  connect(&pollTimer_, &QTimer::timeout, this, &RunList::poll);
  pollTimer_.start();
}

RunList::~RunList() = default;

QColor RunList::nextColor() {
  // Tableau 10: distinct, print-safe and readable on white.
  return colours::tableau10(colorsUsed_++);
}

int RunList::indexOf(const QString& dir) const {
  const QString abs = QDir(dir).absolutePath();
  for (int i = 0; i < count(); ++i)
    if (at(i).dir == abs) return i;
  return -1;
}

bool RunList::refreshInfo(RunEntry& run) {
  const qint64 s = stamp(QString::fromStdString(hsm::RunFolder(run.dir.toStdString()).config));
  if (s == 0 || s == run.config_stamp) return false;
  try {
    run.info = hsm::read_run_info(run.dir.toStdString());
    run.model = run.info.model;
    run.task = task_of(run.dir);
    run.has_info = true;
    run.config_stamp = s;
    return true;
  } catch (const std::exception&) {
    return false;  // being written; the next poll reads it
  }
}

int RunList::open(const QString& dir) {
  const QString abs = QDir(dir).absolutePath();
  if (const int row = indexOf(abs); row >= 0) return row;
  auto run = std::make_unique<RunEntry>();
  run->dir = abs;
  run->info = hsm::read_run_info(abs.toStdString());  // throws with the reason
  run->model = run->info.model;
  run->task = task_of(abs);
  run->has_info = true;
  run->config_stamp = stamp(QString::fromStdString(hsm::RunFolder(abs.toStdString()).config));
  return insert(std::move(run));
}

int RunList::insert(std::unique_ptr<RunEntry> run) {
  run->reader = std::make_unique<hsm::MetricsReader>(run->dir.toStdString());
  run->metrics = run->reader->poll(kSliceBytes);
  run->color = nextColor();
  if (run->reader->more()) schedulePoll();
  const int row = count();
  beginInsertRows({}, row, row);
  runs_.push_back(std::move(run));
  endInsertRows();
  emit runAdded(row);
  reportProblems(row);
  return row;
}

int RunList::addPending(const QString& dir, const hsm::ModelConfig& model) {
  const QString abs = QDir(dir).absolutePath();
  if (const int row = indexOf(abs); row >= 0) {
    runs_[static_cast<size_t>(row)]->model = model;
    return row;
  }
  auto run = std::make_unique<RunEntry>();
  run->dir = abs;
  run->model = model;
  refreshInfo(*run);  // a resumed run has one already
  return insert(std::move(run));
}

int RunList::openAtStep(const QString& dir, qint64 step) {
  const QString source = QDir(dir).absolutePath();
  for (int i = 0; i < count(); ++i)
    if (at(i).source == source && at(i).step == step) return i;
  const hsm::RunFolder run(source.toStdString());
  const hsm::RunFolder::Checkpoint kept = run.model_at(step);  // throws naming the kept steps
  if (!copies_) {
    removeCopiesOfEndedStudios();
    copies_ = std::make_unique<QTemporaryDir>(QDir::temp().filePath(QString::fromLatin1(kStepCopiesPrefix) +
                                                                     QStringLiteral("XXXXXX")));
    // Which studio made it: a studio killed before it could remove its copies leaves them, and
    // the next one removes a folder whose owner has ended (never one without this file).
    QFile owner(copies_->filePath(QString::fromLatin1(kStepCopiesOwner)));
    if (copies_->isValid() && owner.open(QIODevice::WriteOnly))
      owner.write(QByteArray::number(static_cast<qint64>(::getpid())));
  }
  if (!copies_->isValid())
    throw std::runtime_error("no temporary folder for a run at a step: " + copies_->errorString().toStdString());
  // Named "NAME at step S" (the views name a run by its folder), in a folder of its own: two
  // runs of one name get two.
  int n = 0;
  while (QFileInfo::exists(copies_->filePath(QString::number(n)))) ++n;
  const QString copy =
      copies_->filePath(QStringLiteral("%1/%2 at step %3").arg(n).arg(QFileInfo(source).fileName()).arg(step));
  QFile config(QString::fromStdString(kept.config));
  if (!config.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot read " + kept.config);
  // The kept weights are never written again (a checkpoint is published whole, by rename): a
  // hard link is the copy where the temporary folder shares their file system, at no cost on
  // the GUI thread; elsewhere the bytes are copied.
  run.publish_copy(copy.toStdString(), config.readAll().toStdString(), [&](const std::string& weights) {
    std::error_code linked;
    std::filesystem::create_hard_link(kept.weights, weights, linked);
    if (linked) std::filesystem::copy_file(kept.weights, weights);
  });
  const hsm::RunFolder made(copy.toStdString());
  int64_t damaged = 0;
  made.keep_log_records_to(made.metrics, step, damaged);  // its curves end at the step
  // Its diagnoses over time too (the Diagnostics view's timeline), up to the step.
  if (QFileInfo::exists(QString::fromStdString(run.diagnostics))) {
    std::filesystem::copy_file(run.diagnostics, made.diagnostics);
    made.keep_log_records_to(made.diagnostics, step, damaged);
  }
  auto entry = std::make_unique<RunEntry>();
  entry->dir = copy;
  entry->source = source;
  entry->step = step;
  entry->info = hsm::read_run_info(copy.toStdString());
  entry->model = entry->info.model;
  entry->task = task_of(copy);
  entry->has_info = true;
  entry->config_stamp = stamp(QString::fromStdString(made.config));
  return insert(std::move(entry));
}

int RunList::removeCopiesOfEndedStudios() {
  int removed = 0;
  const QDir temp = QDir::temp();
  const QStringList folders =
      temp.entryList({QString::fromLatin1(kStepCopiesPrefix) + QLatin1Char('*')}, QDir::Dirs | QDir::NoDotAndDotDot);
  for (const QString& name : folders) {
    QDir folder(temp.filePath(name));
    QFile owner(folder.filePath(QString::fromLatin1(kStepCopiesOwner)));
    if (!owner.open(QIODevice::ReadOnly)) continue;  // not one this studio marks: left as it is
    bool number = false;
    const qint64 pid = owner.readAll().trimmed().toLongLong(&number);
    owner.close();
    if (!number || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its studio still runs (or is not ours to ask)
    if (folder.removeRecursively()) ++removed;
  }
  return removed;
}

void RunList::close(int row) {
  if (row < 0 || row >= count()) return;
  if (at(row).atStep()) QFileInfo(at(row).dir).dir().removeRecursively();  // the copy (the run's own folder stays)
  beginRemoveRows({}, row, row);
  runs_.erase(runs_.begin() + row);
  endRemoveRows();
  emit runRemoved(row);
  if (current_ >= count()) current_ = count() - 1;
  else if (current_ > row) --current_;
  emit currentChanged(current_);
}

void RunList::setCurrent(int row) {
  if (row < -1 || row >= count() || row == current_) return;
  current_ = row;
  emit currentChanged(row);
}

void RunList::schedulePoll() {
  if (pollScheduled_) return;
  pollScheduled_ = true;
  QTimer::singleShot(0, this, [this] {
    pollScheduled_ = false;
    poll();
  });
}

void RunList::poll() {
  for (int i = 0; i < count(); ++i) {
    RunEntry& run = *runs_[static_cast<size_t>(i)];
    if (refreshInfo(run)) {
      emit dataChanged(index(i), index(i));
      emit infoChanged(i);
    }
    std::vector<hsm::MetricRecord> fresh = run.reader->poll(kSliceBytes);
    if (run.reader->more()) schedulePoll();
    reportProblems(i);
    if (run.reader->reset()) {
      run.metrics = std::move(fresh);
      emit metricsReset(i);
    } else if (!fresh.empty()) {
      run.metrics.insert(run.metrics.end(), fresh.begin(), fresh.end());
      emit metricsAppended(i);
    }
  }
}

void RunList::reportProblems(int row) {
  const auto& problems = at(row).reader->problems();
  if (problems.empty()) return;
  QStringList list;
  for (const std::string& p : problems) list << QString::fromStdString(p);
  emit metricsProblems(row, list);
}

bool RunList::loading() const {
  for (const auto& run : runs_)
    if (run->reader->more()) return true;
  return false;
}

int RunList::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : count(); }

QVariant RunList::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= count()) return {};
  const RunEntry& run = at(index.row());
  switch (role) {
    case Qt::DisplayRole: {
      const double millions = static_cast<double>(hsm::count_params(run.model).total()) / 1e6;
      return QStringLiteral("%1  (%2, %3M)")
          .arg(run.name(), QString::fromStdString(run.model.name), QString::number(millions, 'f', 2));
    }
    case Qt::ToolTipRole:
      return run.atStep() ? QObject::tr("%1 as it was at step %2 (a read-only copy)").arg(run.source).arg(run.step)
                          : run.dir;
    case Qt::DecorationRole:
      return run.color;
    default:
      return {};
  }
}

QString prompt_run_refusal(const RunEntry* run, const QString& prompt) {
  if (!run) return QObject::tr("Open a run first.");
  if (!run->has_info) return QObject::tr("%1 has no checkpoint yet.").arg(run->name());
  if (run->task.empty() && prompt.trimmed().isEmpty()) return QObject::tr("Type a prompt.");
  return {};
}

}  // namespace studio
