#include "studio_test_util.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QMouseEvent>
#include <QTextStream>
#include <QThread>
#include <QWidget>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/diagnostics_view.h"
#include "gui/view_registry.h"
#include "gui/views/weights_view.h"
#include "hsm/presets.h"
#include "hsm/trainer.h"

namespace studio::test {

QString temp_root() {
  static QTemporaryDir dir(QDir::temp().filePath(QStringLiteral("hsm-studio-test-XXXXXX")));
  return dir.path();
}

QString make_corpus(const QString& dir, int stories, int sentences) {
  static const char* names[] = {"Lily", "Tom", "Ben", "Mia", "Sam"};
  static const char* things[] = {"ball", "cat", "dog", "tree", "box", "cake"};
  static const char* moods[] = {"happy", "sad", "big", "red", "little"};
  std::mt19937 rng(11);
  QString text;
  for (int s = 0; s < stories; ++s) {
    const char* n = names[rng() % 5];
    for (int k = 0; k < sentences; ++k)
      text += QStringLiteral("Once upon a time, %1 saw a %2 %3. %1 was very %4. ")
                  .arg(QLatin1String(n), QLatin1String(moods[rng() % 5]), QLatin1String(things[rng() % 6]),
                       QLatin1String(moods[rng() % 5]));
    text += QStringLiteral("The end.\n<|endoftext|>\n");
  }
  QDir().mkpath(dir);
  const QString path = QDir(dir).filePath(QStringLiteral("stories.txt"));
  QFile f(path);
  f.open(QIODevice::WriteOnly | QIODevice::Truncate);
  f.write(text.toUtf8());
  return path;
}

QString tiny_config(const QString& dir) {
  QDir().mkpath(dir);
  const QString path = QDir(dir).filePath(QStringLiteral("tiny.json"));
  QFile f(path);
  f.open(QIODevice::WriteOnly | QIODevice::Truncate);
  f.write(R"({"name": "tiny", "vocab_size": 300, "d_model": 32, "context": 32, "dropout": 0.0,
  "layers": [{"mixer": "hsm_ab", "ffn": 64, "heads": 1}, {"mixer": "attn", "ffn": 64, "heads": 4},
             {"mixer": "hsm_ab", "ffn": 64, "heads": 1}]})");
  return path;
}

hsm::RunSpec tiny_run_spec(const QString& dir, int stories) {
  hsm::RunSpec spec;
  spec.run_dir = QDir(dir).filePath(QStringLiteral("run")).toStdString();
  spec.data_path = make_corpus(dir, stories).toStdString();
  spec.cache_dir = QDir(dir).filePath(QStringLiteral("cache")).toStdString();
  spec.model = hsm::load_config(tiny_config(dir).toStdString());
  spec.train.steps = 20;
  spec.train.batch_size = 16;
  spec.train.lr = 0.003;
  spec.train.eval_every = 10;
  spec.train.eval_batches = 2;
  spec.train.checkpoint_every = 20;
  spec.train.threads = 1;
  spec.train.device = "cpu";
  return spec;
}

QString trained_run() {
  static const QString run = [] {
    const hsm::RunSpec spec = tiny_run_spec(QDir(temp_root()).filePath(QStringLiteral("fixture")));
    hsm::Trainer(spec).run();
    return QString::fromStdString(spec.run_dir);
  }();
  return run;
}

QString trained_variant(const QString& name, const std::function<void(hsm::RunSpec&)>& change) {
  static QMap<QString, QString> trained;  // by name: each variant trained once per process
  if (!trained.contains(name)) {
    hsm::RunSpec spec = tiny_run_spec(QDir(temp_root()).filePath(name));
    change(spec);
    hsm::Trainer(spec).run();
    trained.insert(name, QString::fromStdString(spec.run_dir));
  }
  return trained.value(name);
}

bool wait_for(const std::function<bool()>& done, int timeout_ms) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return true;
}

void send_mouse(QWidget* w, QEvent::Type type, QPointF at, Qt::MouseButtons held) {
  QMouseEvent e(type, at, w->mapToGlobal(at), type == QEvent::MouseMove ? Qt::NoButton : Qt::LeftButton, held,
                Qt::NoModifier);
  QCoreApplication::sendEvent(w, &e);
}

void click(QWidget* w, QPointF at) {
  send_mouse(w, QEvent::MouseButtonPress, at, Qt::LeftButton);
  send_mouse(w, QEvent::MouseButtonRelease, at, Qt::NoButton);
}

ProcessResult run_program(const QString& program, const QStringList& args, int timeout_ms,
                          const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  ProcessResult r;
  if (!p.waitForStarted(30000)) return r;
  p.closeWriteChannel();
  p.waitForFinished(timeout_ms);
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

qint64 run_state_step(const QString& runDir) {
  QFile f(QDir(runDir).filePath(QStringLiteral("config.json")));
  if (!f.open(QIODevice::ReadOnly)) return -1;
  const QJsonObject state = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("state")).toObject();
  return state.contains(QStringLiteral("step")) ? state.value(QStringLiteral("step")).toInteger() : -1;
}

qint64 last_train_step(const QString& runDir) {
  QFile f(QDir(runDir).filePath(QStringLiteral("metrics.jsonl")));
  qint64 step = -1;
  if (!f.open(QIODevice::ReadOnly)) return step;
  while (!f.atEnd()) {
    const QJsonObject j = QJsonDocument::fromJson(f.readLine()).object();
    if (j.value(QStringLiteral("kind")).toString() == QLatin1String("train")) step = j.value(QStringLiteral("step")).toInteger();
  }
  return step;
}

void each_view_with_each_run(MainWindow& w, const std::function<void(const QString& where)>& check) {
  for (int run = 0; run < w.runs()->count(); ++run) {
    w.runs()->setCurrent(run);
    for (int view = 0; view < w.viewCount(); ++view) {  // every view of the registry
      w.showView(view);
      if (view == MainWindow::kWeights) wait_for([&] { return !w.weightsView()->weights().empty(); }, 60000);
      if (view == MainWindow::kDiagnostics)
        wait_for([&] { return w.diagnosticsView()->hasResult(0) && !w.diagnosticsView()->isRunning(); }, 60000);
      check(viewEntry(view)->tabTitle() + QStringLiteral(" with ") + w.runs()->at(run).name());
    }
  }
}

ResourcesElsewhere::ResourcesElsewhere(const QString& name) : before_(qgetenv("HSM_RESOURCES")) {
  namespace fs = std::filesystem;
  const fs::path source = hsm::resources_dir();  // the source tree's (or $HSM_RESOURCES's)
  const fs::path root = fs::path(temp_root().toStdString()) / name.toStdString();
  fs::remove_all(root);
  fs::create_directories(root / "corpus");
  fs::create_directories(root / "models");
  fs::copy(source / "presets", root / "presets", fs::copy_options::recursive);
  fs::copy(source / "corpus" / "tinystories-starter.txt", root / "corpus" / "tinystories-starter.txt");
  fs::copy(source / "models" / "hsm_ab", root / "models" / "hsm_ab", fs::copy_options::recursive);
  const fs::path config = root / "models" / "hsm_ab" / "config.json";
  nlohmann::json c = nlohmann::json::parse(std::ifstream(config));
  c["data"]["path"] = kMissingCorpus;
  std::ofstream(config) << c.dump(2);
  root_ = QString::fromStdString(root.string());
  qputenv("HSM_RESOURCES", root_.toUtf8());
}

ResourcesElsewhere::~ResourcesElsewhere() {
  if (before_.isEmpty())
    qunsetenv("HSM_RESOURCES");
  else
    qputenv("HSM_RESOURCES", before_);
}

QString ResourcesElsewhere::model() const { return root_ + QStringLiteral("/models/hsm_ab"); }
QString ResourcesElsewhere::starter() const { return root_ + QStringLiteral("/corpus/tinystories-starter.txt"); }

}  // namespace studio::test
