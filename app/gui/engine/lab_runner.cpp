#include "gui/engine/lab_runner.h"

#include <signal.h>
#include <sys/prctl.h>

#include <QFileInfo>
#include <QProcess>
#include <QThread>

#include "gui/engine/hsm_executable.h"

namespace studio {
namespace {
// Complete lines from a process's stream; a partial line waits for the rest.
QStringList takeLines(QByteArray& pending, const QByteArray& more) {
  pending += more;
  QStringList lines;
  qsizetype end;
  while ((end = pending.indexOf('\n')) >= 0) {
    lines << QString::fromUtf8(pending.left(end));
    pending.remove(0, end + 1);
  }
  return lines;
}
}  // namespace

LabRunner::LabRunner(QObject* parent) : QObject(parent) {}

LabRunner::~LabRunner() {
  for (Worker& w : workers_)
    if (w.process && w.process->state() != QProcess::NotRunning) ::kill(static_cast<pid_t>(w.process->processId()), SIGINT);
  for (Worker& w : workers_) {
    if (!w.process) continue;
    w.process->disconnect(this);
    // After SIGINT a worker ends at its next step; a tiny model's step is milliseconds.
    if (!w.process->waitForFinished(10000)) w.process->kill(), w.process->waitForFinished(2000);
  }
}

bool LabRunner::start(const QString& dir, qint64 total, qint64 scored, int workers, QString* error) {
  if (running()) {
    if (error) *error = tr("a lab is already running");
    return false;
  }
  const QString exe = hsmExecutable();
  if (exe.isEmpty()) {
    if (error) *error = tr("cannot find the hsm program (beside the studio, or on PATH) that trains a lab");
    return false;
  }
  for (Worker& w : workers_) delete w.process;
  workers_.clear();
  total_ = total;
  scored_ = scored;
  cancelled_ = false;
  error_.clear();
  const int n = static_cast<int>(std::max<qint64>(1, std::min<qint64>(workers, total - scored)));
  workers_.resize(n);
  const QString folder = QFileInfo(dir).absoluteFilePath();
  for (int i = 0; i < n; ++i) {
    auto* p = new QProcess(this);
    workers_[i].process = p;
    // The studio gone (even killed) → the worker stops at its step with its checkpoint.
    p->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGINT); });
    connect(p, &QProcess::readyReadStandardOutput, this, [this, i] { readProgress(i); });
    connect(p, &QProcess::readyReadStandardError, this, [this, i] { readLog(i); });
    connect(p, &QProcess::finished, this, [this, i](int code, QProcess::ExitStatus status) {
      readProgress(i);
      readLog(i);
      Worker& w = workers_[i];
      w.fraction = 0;
      w.run.clear();
      if (!cancelled_ && (status != QProcess::NormalExit || code != 0) && error_.isEmpty())
        error_ = w.lastError.isEmpty() ? tr("a lab worker ended with code %1").arg(code) : w.lastError;
      if (--live_ == 0) emit finished(cancelled_, error_);
    });
    // A worker that never started emits no finished(): it is counted out here.
    connect(p, &QProcess::errorOccurred, this, [this, exe](QProcess::ProcessError e) {
      if (e != QProcess::FailedToStart) return;
      if (error_.isEmpty()) error_ = tr("cannot start %1").arg(exe);
      if (--live_ == 0) emit finished(cancelled_, error_);
    });
    ++live_;
    p->start(exe, {QStringLiteral("lab"), QStringLiteral("--out"), folder, QStringLiteral("--worker"), QString::number(i),
                   QStringLiteral("--workers"), QString::number(n), QStringLiteral("--threads"), QStringLiteral("1"),
                   QStringLiteral("--progress")});
  }
  return true;
}

void LabRunner::cancel() {
  if (!running()) return;
  cancelled_ = true;
  for (Worker& w : workers_)
    if (w.process && w.process->state() == QProcess::Running) ::kill(static_cast<pid_t>(w.process->processId()), SIGINT);
}

void LabRunner::readProgress(int worker) {
  Worker& w = workers_[worker];
  for (const QString& l : takeLines(w.pendingOut, w.process->readAllStandardOutput())) {
    const QStringList f = l.split(QLatin1Char('\t'));
    if (f.size() != 3 || f[0] != QLatin1String("progress")) continue;
    w.fraction = f[1].toDouble();
    w.run = f[2];
    emitProgress(f[2]);
  }
}

void LabRunner::readLog(int worker) {
  Worker& w = workers_[worker];
  for (const QString& l : takeLines(w.pendingErr, w.process->readAllStandardError())) {
    if (l.trimmed().isEmpty()) continue;
    emit line(l);
    // "[i/n] run: answer accuracy …" is a scored run (hsm::Lab::run's line); anything else a
    // worker says last before failing is its error.
    if (l.startsWith(QLatin1Char('[')) && l.contains(QLatin1String("answer accuracy"))) {
      ++scored_;
      w.fraction = 0;
      w.run.clear();
      emit runScored();
      emitProgress(QString());
    } else if (!l.startsWith(QLatin1String("continuing "))) {
      w.lastError = l;
    }
  }
}

QVector<QPair<QString, double>> LabRunner::inTraining() const {
  QVector<QPair<QString, double>> runs;
  for (const Worker& w : workers_)
    if (!w.run.isEmpty()) runs.append({w.run, w.fraction});
  return runs;
}

void LabRunner::emitProgress(const QString& run) {
  double inFlight = 0;
  for (const Worker& w : workers_) inFlight += w.fraction;
  emit progress(std::min(1.0, (static_cast<double>(scored_) + inFlight) / static_cast<double>(std::max<qint64>(total_, 1))), run);
}

}  // namespace studio
