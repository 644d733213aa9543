#include "gui/views/sweep_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>
#include <QStringList>

#include "gui/engine/hsm_executable.h"
#include "gui/engine_types.h"
#include "hsm/errors.h"
#include "hsm/sweep.h"

namespace studio {
namespace {

// One value as written in the form: JSON when it reads as JSON (3, 0.003, true, "a,b"), else text.
QJsonValue form_value(const QString& text) {
  const QJsonDocument d = QJsonDocument::fromJson(QStringLiteral("[%1]").arg(text).toUtf8());
  if (d.isArray() && d.array().size() == 1) return d.array().first();
  return QJsonValue(text);
}

// Splits "a, b, \"c,d\"" at the commas outside quotes and brackets.
QStringList split_values(const QString& text) {
  QStringList out;
  QString cur;
  int depth = 0;
  bool quoted = false;
  for (QChar c : text) {
    if (c == QLatin1Char('"')) quoted = !quoted;
    if (!quoted && (c == QLatin1Char('[') || c == QLatin1Char('{'))) ++depth;
    if (!quoted && (c == QLatin1Char(']') || c == QLatin1Char('}'))) --depth;
    if (c == QLatin1Char(',') && !quoted && depth == 0) {
      out << cur.trimmed();
      cur.clear();
    } else {
      cur += c;
    }
  }
  out << cur.trimmed();
  return out;
}

}  // namespace

QString sweep_spec_json(const SweepForm& form, QString* error) {
  QJsonObject spec;
  spec[QStringLiteral("name")] = form.name.trimmed().isEmpty() ? QStringLiteral("sweep") : form.name.trimmed();
  const QString base = form.base.trimmed();
  spec[QStringLiteral("base")] = base.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)
                                     ? QJsonObject{{QStringLiteral("config"), base}}
                                     : QJsonObject{{QStringLiteral("preset"), base}};
  if (!form.task.trimmed().isEmpty())
    spec[QStringLiteral("task")] = form.task.trimmed();
  else
    spec[QStringLiteral("data")] = form.data.trimmed();
  spec[QStringLiteral("train")] = QJsonObject{{QStringLiteral("steps"), form.steps},
                                              {QStringLiteral("batch"), form.batch},
                                              {QStringLiteral("eval_every"), form.evalEvery}};
  QJsonObject axes;
  const QStringList lines = form.axes.split(QLatin1Char('\n'));
  for (int i = 0; i < lines.size(); ++i) {
    const QString line = lines[i].trimmed();
    if (line.isEmpty() || line.startsWith(QLatin1Char('#'))) continue;
    const int eq = line.indexOf(QLatin1Char('='));
    const QString path = line.left(eq).trimmed();
    const QString rest = line.mid(eq + 1).trimmed();
    if (eq < 0 || path.isEmpty()) {
      *error = QObject::tr("axes line %1: \"%2\" is not \"path = v1, v2\"; e.g. model.layers.0.mixer = attn, hsm_ab")
                   .arg(i + 1)
                   .arg(line);
      return {};
    }
    QJsonArray values;
    if (rest.startsWith(QLatin1Char('['))) {
      const QJsonDocument d = QJsonDocument::fromJson(rest.toUtf8());
      if (!d.isArray()) {
        *error = QObject::tr("axes line %1 (%2): %3 is not a JSON list").arg(i + 1).arg(path, rest);
        return {};
      }
      values = d.array();
    } else {
      for (const QString& v : split_values(rest)) {
        if (v.isEmpty()) {
          *error = QObject::tr("axes line %1 (%2): an empty value; write path = v1, v2").arg(i + 1).arg(path);
          return {};
        }
        values.append(form_value(v));
      }
    }
    axes[path] = values;
  }
  if (axes.isEmpty()) {
    *error = QObject::tr("no axes: write one a line, e.g. seed = 1, 2");
    return {};
  }
  spec[QStringLiteral("axes")] = axes;
  return QString::fromUtf8(QJsonDocument(spec).toJson(QJsonDocument::Indented));
}

SweepRunner::SweepRunner(QObject* parent) : QObject(parent) {}

SweepRunner::~SweepRunner() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool SweepRunner::start(const QString& specJson, const QString& baseDir, const QString& outDir) {
  if (running_) return false;
  if (thread_.joinable()) thread_.join();  // the last sweep's thread, finished
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this, specJson, baseDir, outDir] { run(specJson, baseDir, outDir); });
  return true;
}

void SweepRunner::cancel() { stop_ = true; }

bool SweepRunner::onRunnerThread() const { return std::this_thread::get_id() == thread_.get_id(); }

std::string SweepRunner::runPoint(const QString& exe, const std::string& dir, const hsm::SweepPoint& point,
                                  QString* error) {
  // The point's output goes where `hsm sweep`'s launcher puts it (points/NAME.log) and, line by
  // line, to log().
  // Opened without following a link (issue 46): a linked log would grow its target elsewhere.
  const QString logPath = QDir(qstr(dir)).filePath(QStringLiteral("points/%1.log").arg(qstr(point.name)));
  const int fd = ::open(QFile::encodeName(logPath).constData(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    *error = fd >= 0 || e == ELOOP ? tr("'%1' is a symbolic link or not a regular file: refusing to write the log to it").arg(logPath)
                                   : tr("cannot write the log '%1': %2").arg(logPath, QString::fromLocal8Bit(std::strerror(e)));
    try {
      hsm::write_point_state(dir, point, hsm::PointState{"failed", error->toStdString(), 0});
    } catch (const std::exception&) {  // the error above is shown all the same
    }
    return "failed";
  }
  QFile logFile;
  logFile.open(fd, QIODevice::WriteOnly | QIODevice::Append, QFileDevice::AutoCloseHandle);
  QProcess process;
  process.setProcessChannelMode(QProcess::MergedChannels);
  // The studio gone (even killed) → the point stops at a step with its checkpoint.
  process.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGTERM); });
  process.start(exe, {QStringLiteral("sweep"), QStringLiteral("run"), qstr(dir), QStringLiteral("--point"),
                      QString::number(point.index)});
  if (!process.waitForStarted(30000)) {
    *error = tr("cannot start %1: %2").arg(exe, process.errorString());
    return "failed";
  }
  QByteArray pending;
  QString lastLine;
  bool signalled = false;
  auto readLines = [&] {
    const QByteArray more = process.readAll();
    if (more.isEmpty()) return;
    logFile.write(more);
    logFile.flush();
    pending += more;
    qsizetype end;
    while ((end = pending.indexOf('\n')) >= 0) {
      const QString line = QString::fromUtf8(pending.left(end)).trimmed();
      pending.remove(0, end + 1);
      if (line.isEmpty()) continue;
      lastLine = line;
      emit log(line);
    }
  };
  while (process.state() != QProcess::NotRunning) {
    process.waitForReadyRead(100);  // no event loop on this thread: the synchronous API
    readLines();
    if (stop_ && !signalled) {
      ::kill(static_cast<pid_t>(process.processId()), SIGTERM);  // stops at a step, writes a checkpoint
      signalled = true;
    }
  }
  process.waitForFinished(-1);
  readLines();
  hsm::PointState state = hsm::read_point_state(dir, point);
  const bool ended = process.exitStatus() == QProcess::NormalExit;
  if (state.state == "done" || state.state == "stopped") return state.state;
  if (state.state != "failed") {  // killed before it could say so: recorded here, as the launcher does
    state.state = "failed";
    state.error = ended ? lastLine.toStdString() : "killed (" + process.errorString().toStdString() + ")";
    hsm::write_point_state(dir, point, state);
  }
  *error = qstr(state.error.empty() ? lastLine.toStdString() : state.error);
  return state.state;
}

void SweepRunner::run(QString specJson, QString baseDir, QString outDir) {
  const std::string dir = sstr(QDir(outDir).absolutePath());
  hsm::Sweep sweep;
  try {
    sweep = hsm::open_sweep_folder(dir, hsm::parse_sweep_spec(sstr(specJson), sstr(baseDir)));
  } catch (const std::exception& e) {
    running_ = false;
    emit refused(qstr(hsm::error_text(e)));
    return;
  }
  const int points = static_cast<int>(sweep.points.size());
  emit started(qstr(dir), points);
  int done = 0;
  QStringList failures;
  for (const hsm::SweepPoint& p : sweep.points)
    done += hsm::read_point_state(dir, p).state == "done";
  const QString exe = hsmExecutable();
  for (const hsm::SweepPoint& p : sweep.points) {
    if (stop_) break;
    if (hsm::read_point_state(dir, p).state == "done") continue;
    emit progress(done, points, qstr(p.name));
    if (exe.isEmpty()) {
      failures << tr("cannot find the hsm program (beside the studio, or on PATH) that trains a point");
      break;
    }
    QString error;
    const std::string state = runPoint(exe, dir, p, &error);
    done += state == "done";
    if (!error.isEmpty()) failures << QStringLiteral("%1: %2").arg(qstr(p.name), error);
  }
  const bool cancelled = stop_;
  emit progress(done, points, QString());
  running_ = false;
  emit finished(qstr(dir), done, points, cancelled, failures.join(QLatin1Char('\n')));
}

}  // namespace studio
