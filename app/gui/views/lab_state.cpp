#include "gui/views/lab_state.h"

#include <QDate>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <algorithm>
#include <filesystem>
#include <cmath>
#include <utility>

#include "gui/engine/engine_host.h"
#include "gui/engine/grid_runner.h"
#include "gui/engine_types.h"
#include "hsm/formation.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"

namespace studio {
namespace {

// The lab a folder holds, read whole (sweep.json, every point's state, each scored run's
// validations): what the analysis executor answers to open().
struct LabRead {
  std::shared_ptr<const hsm::Lab> lab;
  std::vector<hsm::LabRun> runs;
  std::optional<LabBundle> bundle;
};

// A bundled lab's BUNDLED.json ({"command", "machine", "date"}); none without one. A file that
// is there but not such an object still marks the lab as bundled (never written into).
std::optional<LabBundle> readBundle(const QString& dir) {
  QFile file(QDir(dir).filePath(QString::fromLatin1(kLabBundleFile)));
  if (!file.exists()) return std::nullopt;
  LabBundle b;
  if (file.open(QIODevice::ReadOnly)) {
    const QJsonObject j = QJsonDocument::fromJson(file.readAll()).object();
    b.command = j.value(QStringLiteral("command")).toString();
    b.machine = j.value(QStringLiteral("machine")).toString();
    b.date = j.value(QStringLiteral("date")).toString();
  }
  return b;
}

// A run's files: its validation curve and when its mechanism formed (the lab report's words:
// "–" without traces, the reader's complaint for a damaged log).
LabRunFiles readRunFiles(const std::string& runDir) {
  LabRunFiles f;
  try {
    for (const hsm::MetricRecord& m : hsm::read_metrics(runDir))
      if (m.kind == "eval" && std::isfinite(m.answer_accuracy)) {
        f.steps << static_cast<double>(m.step);
        f.accuracy << m.answer_accuracy;
      }
  } catch (const std::exception&) {
    // a run folder removed since: its cell still has its score
  }
  try {
    const hsm::Formation formation = hsm::run_formation(runDir);
    f.formation = formation.points.empty() ? QStringLiteral("–") : qstr(formation.summary());
  } catch (const std::exception& e) {
    f.formation = QObject::tr("traces unreadable: %1").arg(QString::fromUtf8(e.what()));
  }
  return f;
}

}  // namespace

LabState::LabState(EngineHost* engine, QObject* parent)
    : QObject(parent), engine_(engine), runner_(new GridRunner(this)) {
  connect(runner_, &GridRunner::pointFinished, this,
          [this](int, const QString& name, const QString& state, const QJsonObject& event) {
            onPointFinished(name, state, event);
          });
}

QString LabState::dir() const { return lab_ ? qstr(lab_->dir()) : QString(); }

bool LabState::isRunning() const { return runner_->running(); }

void LabState::cancel() { runner_->cancel(); }

void LabState::open(const QString& dir) { readRuns(dir, nullptr); }

bool LabState::run(const hsm::Lab& lab, int jobs, QString* error) {
  if (runner_->running()) {
    if (error) *error = tr("a lab runs already");
    return false;
  }
  auto held = std::make_shared<const hsm::Lab>(lab);
  ++generation_;
  show(held);
  remake();
  // The runs scored already, read once while the workers start (and shown if they cannot).
  readRuns(dir(), held);
  return runner_->start(dir(), jobs, error);
}

void LabState::show(std::shared_ptr<const hsm::Lab> lab) {
  lab_ = std::move(lab);
  bundle_.reset();
  pointOf_.clear();
  for (const hsm::SweepPoint& p : lab_->sweep().points) pointOf_[hsm::sweep_run_dir(lab_->dir(), p)] = static_cast<size_t>(p.index);
  byPoint_.assign(lab_->sweep().points.size(), std::nullopt);
  files_.clear();
}

void LabState::readRuns(const QString& dir, std::shared_ptr<const hsm::Lab> lab) {
  const uint64_t generation = lab ? generation_ : ++generation_;
  ++reading_;
  engine_->analysis()
      .call<LabRead>(QString(),
                     [dir, lab](const CallContext&) {
                       LabRead read;
                       read.lab = lab ? lab
                                      : std::make_shared<const hsm::Lab>(
                                            sstr(dir), hsm::Lab::stored_grid(sstr(dir)));
                       read.runs = read.lab->results();
                       read.bundle = readBundle(dir);
                       return read;
                     })
      .then(this,
            [this, dir, generation](const LabRead& read) {
              if (generation == generation_) {  // else another lab is shown now
                if (lab_ != read.lab) show(read.lab);  // open(): a lab of its own
                bundle_ = read.bundle;
                // A run an event reported meanwhile is newer than the folder's read.
                keep(read.runs, false);
                emit opened(dir);
              }
              doneReading();
            })
      .onFailed(this, [this, dir, generation](const CallFailed& e) {
        if (generation == generation_) emit openFailed(dir, e.message());
        doneReading();
      });
}

void LabState::onPointFinished(const QString& name, const QString& state, const QJsonObject& event) {
  if (!lab_ || state != QLatin1String("done")) return;
  const std::optional<hsm::LabRun> run =
      lab_->run_of_event(QJsonDocument(event).toJson(QJsonDocument::Compact).toStdString());
  if (run) return keep({*run}, true);
  // An event without the run's score (an older worker's, or a score too long for one line):
  // that point's state file, read off the GUI thread.
  const uint64_t generation = generation_;
  const std::shared_ptr<const hsm::Lab> lab = lab_;
  ++reading_;
  engine_->analysis()
      .call<std::vector<hsm::LabRun>>(QString(),
                                      [lab, point = sstr(name)](const CallContext&) {
                                        std::vector<hsm::LabRun> runs;
                                        for (const hsm::LabRun& r : lab->results())
                                          for (const hsm::SweepPoint& p : lab->sweep().points)
                                            if (p.name == point && r.run_dir == hsm::sweep_run_dir(lab->dir(), p))
                                              runs.push_back(r);
                                        return runs;
                                      })
      .then(this,
            [this, generation](const std::vector<hsm::LabRun>& runs) {
              if (generation == generation_) keep(runs, true);
              doneReading();
            })
      .onFailed(this, [this](const CallFailed&) { doneReading(); });
}

void LabState::keep(const std::vector<hsm::LabRun>& runs, bool replace) {
  std::vector<std::string> fresh;
  for (const hsm::LabRun& r : runs) {
    const auto at = pointOf_.find(r.run_dir);
    if (at == pointOf_.end()) continue;
    std::optional<hsm::LabRun>& held = byPoint_[at->second];
    if (held && !replace) continue;
    held = r;
    files_.erase(r.run_dir);
    fresh.push_back(r.run_dir);
  }
  remake();
  if (!fresh.empty()) readFiles(fresh);
}

void LabState::remake() {
  runs_.clear();
  for (const std::optional<hsm::LabRun>& r : byPoint_)
    if (r) runs_.push_back(*r);
  if (!lab_) {
    cells_.clear();
    distancePanels_.clear();
    difficultyPanels_.clear();
  } else {
    // The lab's own table and the report's panels, from the runs held: no file is read.
    cells_ = hsm::lab_cells(lab_->grid(), runs_);
    distancePanels_ = hsm::lab_distance_panels(*lab_, cells_, runs_);
    difficultyPanels_ = hsm::lab_difficulty_panels(*lab_, cells_);
  }
  emit cellsChanged();
}

void LabState::readFiles(const std::vector<std::string>& runDirs) {
  const uint64_t generation = generation_;
  ++reading_;
  engine_->analysis()
      .call<std::map<std::string, LabRunFiles>>(QString(),
                                                [runDirs](const CallContext&) {
                                                  std::map<std::string, LabRunFiles> files;
                                                  for (const std::string& d : runDirs) files[d] = readRunFiles(d);
                                                  return files;
                                                })
      .then(this,
            [this, generation](const std::map<std::string, LabRunFiles>& files) {
              if (generation == generation_) {
                for (const auto& [d, f] : files) files_[d] = f;
                emit filesRead();
              }
              doneReading();
            })
      .onFailed(this, [this](const CallFailed&) { doneReading(); });
}

void LabState::doneReading() {
  if (--reading_ == 0) emit idle();
}

QString LabState::bundledLabFolder() {
  try {
    const QString dir = QDir(qstr(hsm::resources_dir())).filePath(QStringLiteral("labs/default"));
    return QFileInfo::exists(QDir(dir).filePath(QStringLiteral("sweep.json"))) ? dir : QString();
  } catch (const std::exception&) {
    return {};  // no resources installed: no bundled lab
  }
}

bool LabState::isBundledLab(const QString& dir) {
  if (dir.isEmpty()) return false;
  if (QFileInfo::exists(QDir(dir).filePath(QString::fromLatin1(kLabBundleFile)))) return true;
  try {
    const QString labs = QDir(qstr(hsm::resources_dir())).filePath(QStringLiteral("labs"));
    const QString canonical = QFileInfo(dir).canonicalFilePath(), root = QFileInfo(labs).canonicalFilePath();
    return !root.isEmpty() && (canonical == root || canonical.startsWith(root + QLatin1Char('/')));
  } catch (const std::exception&) {
    return false;
  }
}

QString LabState::copyBundledLab(const QString& dir, const QString& labsFolder) {
  namespace fs = std::filesystem;
  const QString base = QDir(labsFolder).absolutePath() + QLatin1Char('/') + QFileInfo(dir).fileName() +
                       QLatin1Char('-') + QDate::currentDate().toString(Qt::ISODate);
  QString to = base;
  for (int k = 2; QFileInfo::exists(to); ++k) to = base + QLatin1Char('-') + QString::number(k);
  std::error_code ec;
  fs::create_directories(fs::path(sstr(to)).parent_path(), ec);
  fs::copy(sstr(dir), sstr(to), fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) throw std::runtime_error("cannot copy the bundled lab to " + sstr(to) + ": " + ec.message());
  fs::remove(fs::path(sstr(to)) / kLabBundleFile, ec);
  // An installed lab is read-only; its copy is the user's to write.
  fs::permissions(sstr(to), fs::perms::owner_all, fs::perm_options::add, ec);
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(sstr(to), ec))
    if (!e.is_symlink()) fs::permissions(e.path(), fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add, ec);
  return to;
}

const LabRunFiles* LabState::runFiles(const std::string& runDir) const {
  const auto it = files_.find(runDir);
  return it == files_.end() ? nullptr : &it->second;
}

std::vector<const hsm::LabRun*> LabState::cellRuns(const std::string& task, const std::string& model) const {
  std::vector<const hsm::LabRun*> runs;
  for (const hsm::LabCell& c : cells_)
    if (c.model == model && c.task == task && c.n > 0)
      for (const hsm::LabRun& r : runs_)
        if (r.model == model && r.task == task && r.lr == c.best_lr && r.weight_decay == c.best_weight_decay)
          runs.push_back(&r);
  std::sort(runs.begin(), runs.end(), [](const hsm::LabRun* a, const hsm::LabRun* b) { return a->seed < b->seed; });
  return runs;
}

}  // namespace studio
