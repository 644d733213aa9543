#include "gui/engine/grid_runner.h"

#include <signal.h>
#include <sys/prctl.h>

#include <QFileInfo>
#include <QJsonDocument>
#include <QProcess>

#include "gui/engine/hsm_executable.h"
#include "hsm/grid_workers.h"

namespace studio {
namespace {

// Complete lines from a process's stream; a partial line waits for the rest.
QList<QByteArray> takeLines(QByteArray& pending, const QByteArray& more) {
  pending += more;
  QList<QByteArray> lines;
  qsizetype end;
  while ((end = pending.indexOf('\n')) >= 0) {
    lines << pending.left(end);
    pending.remove(0, end + 1);
  }
  return lines;
}

}  // namespace

GridRunner::GridRunner(QObject* parent) : QObject(parent) {}

GridRunner::~GridRunner() {
  if (!process_) return;
  process_->disconnect(this);
  if (process_->state() != QProcess::NotRunning) {
    ::kill(static_cast<pid_t>(process_->processId()), SIGTERM);
    // The workers stop at their next step (a tiny model's is milliseconds) and write a checkpoint.
    if (!process_->waitForFinished(30000)) process_->kill(), process_->waitForFinished(2000);
  }
}

bool GridRunner::running() const { return process_ && process_->state() != QProcess::NotRunning; }

bool GridRunner::start(const QString& dir, int jobs, QString* error) {
  if (running()) {
    if (error) *error = tr("a grid is running already");
    return false;
  }
  const QString exe = hsmExecutable();
  if (exe.isEmpty()) {
    if (error) *error = tr("cannot find the hsm program (beside the studio, or on PATH) that trains a grid");
    return false;
  }
  delete process_;
  process_ = new QProcess(this);
  pendingOut_.clear();
  pendingErr_.clear();
  points_ = done_ = 0;
  training_.clear();
  failures_.clear();
  lastLine_.clear();
  cancelled_ = false;
  // The studio gone (even killed) -> the launcher stops its workers, each at a step with its checkpoint.
  process_->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGTERM); });
  connect(process_, &QProcess::readyReadStandardOutput, this, &GridRunner::readEvents);
  connect(process_, &QProcess::readyReadStandardError, this, &GridRunner::readLines);
  connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    readEvents();
    readLines();
    training_.clear();
    QString failures = failures_.join(QLatin1Char('\n'));
    // The launcher's own failure (a folder it refused): its last line says why.
    if (failures.isEmpty() && !cancelled_ && (status != QProcess::NormalExit || (code != 0 && code != 130)))
      failures = lastLine_.isEmpty() ? tr("the grid's launcher ended with code %1").arg(code) : lastLine_;
    emit finished(cancelled_, failures);
  });
  connect(process_, &QProcess::errorOccurred, this, [this, exe](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) emit finished(cancelled_, tr("cannot start %1").arg(exe));
  });
  process_->start(exe, {QStringLiteral("sweep"), QStringLiteral("--out"), QFileInfo(dir).absoluteFilePath(),
                        QStringLiteral("--jobs"), QString::number(std::max(1, jobs)), QStringLiteral("--events")});
  return true;
}

void GridRunner::cancel() {
  if (!running()) return;
  cancelled_ = true;
  ::kill(static_cast<pid_t>(process_->processId()), SIGTERM);  // the launcher passes it on
}

QVector<QPair<QString, double>> GridRunner::inTraining() const {
  QVector<QPair<QString, double>> runs;
  for (auto it = training_.begin(); it != training_.end(); ++it) runs.append({it.key(), it.value()});
  return runs;
}

double GridRunner::fraction() const {
  double inFlight = 0;
  for (double f : training_) inFlight += f;
  return points_ > 0 ? std::min(1.0, (done_ + inFlight) / points_) : 0.0;
}

void GridRunner::readEvents() {
  static const QByteArray prefix(hsm::kGridEventPrefix);
  for (const QByteArray& l : takeLines(pendingOut_, process_->readAllStandardOutput())) {
    if (!l.startsWith(prefix)) continue;  // the launcher's table, a worker's stray output
    const QJsonDocument d = QJsonDocument::fromJson(l.mid(prefix.size()));
    if (d.isObject()) handle(d.object());
  }
}

void GridRunner::readLines() {
  for (const QByteArray& l : takeLines(pendingErr_, process_->readAllStandardError())) {
    const QString text = QString::fromUtf8(l).trimmed();
    if (text.isEmpty()) continue;
    lastLine_ = text;
    emit line(text);
  }
}

void GridRunner::handle(const QJsonObject& e) {
  const QString kind = e.value(QStringLiteral("event")).toString();
  const QString name = e.value(QStringLiteral("name")).toString();
  const int point = e.value(QStringLiteral("point")).toInt(-1);
  if (kind == QLatin1String("grid")) {
    points_ = e.value(QStringLiteral("points")).toInt();
    done_ = e.value(QStringLiteral("done")).toInt();
    emit started(points_, done_);
  } else if (kind == QLatin1String("started")) {
    training_[name] = 0;
    emit pointStarted(point, name, e.value(QStringLiteral("resumed")).toBool());
  } else if (kind == QLatin1String("step")) {
    training_[name] = e.value(QStringLiteral("fraction")).toDouble();
  } else if (kind == QLatin1String("finished")) {
    training_.remove(name);
    const QString state = e.value(QStringLiteral("state")).toString();
    if (state == QLatin1String("done")) ++done_;
    if (state == QLatin1String("failed"))
      failures_ << QStringLiteral("%1: %2").arg(name, e.value(QStringLiteral("error")).toString());
    emit pointFinished(point, name, state, e);
  } else {
    return;
  }
  emit progress(fraction());
}

}  // namespace studio
