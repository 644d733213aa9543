#pragma once
// Shared by the studio's GUI tests: a generated corpus, a tiny model config, a run trained
// once per process, waiting on the event loop, and running the CLI / the studio binary.
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QPointF>
#include <QProcess>
#include <QString>
#include <QTemporaryDir>
#include <functional>

class QWidget;

#include "hsm/trainer.h"

namespace studio {
class MainWindow;
}

namespace studio::test {

// A fresh folder for this test process (removed at exit).
QString temp_root();
// Little stories from a small grammar, `sentences` sentences each (about 15 tokens apiece);
// learnable, and most are longer than the tiny context.
QString make_corpus(const QString& dir, int stories = 300, int sentences = 4);
// A 3-layer model (hsm_ab, attn, hsm_ab), d 32, context 32, vocab 300: trains in seconds.
QString tiny_config(const QString& dir);
// How trained_run() trains the tiny model into DIR/run (20 steps, validation every 10, CPU).
hsm::RunSpec tiny_run_spec(const QString& dir, int stories = 300);
// A run of the tiny model trained once per process by the engine (20 steps).
QString trained_run();
// A variant of it, trained once per process into temp_root()/NAME/run (or the run_dir `change`
// sets): tiny_run_spec with `change` applied first (another seed, fewer steps, a layer less).
QString trained_variant(const QString& name, const std::function<void(hsm::RunSpec&)>& change);

// Processes events until done() or the timeout; returns done().
bool wait_for(const std::function<bool()>& done, int timeout_ms = 120000);
// Shows every view of `window`'s registry with each open run current in turn (the Weights and
// Diagnostics views once their answers are in) and calls `check` with "View with run".
void each_view_with_each_run(studio::MainWindow& window, const std::function<void(const QString& where)>& check);

// A left-button mouse event of `type` (press, move, release) at a point of a widget, sent as
// the widget would get it; `held`: the buttons down after it.
void send_mouse(QWidget* w, QEvent::Type type, QPointF at, Qt::MouseButtons held);
// A left click (press and release) at a point of a widget.
void click(QWidget* w, QPointF at);

// The step a run folder's weights are at (config.json's "state"), -1 when unreadable; and the
// step of its curve's latest "train" record (metrics.jsonl), -1 when none. A run stopped by a
// signal or Cancel keeps a checkpoint of the step it stopped at: the first is then at least the
// second, where the checkpoint of step 0 (written before any training) is not.
qint64 run_state_step(const QString& runDir);
qint64 last_train_step(const QString& runDir);

struct ProcessResult {
  int exit_code = -1;
  QByteArray out, err;
};
ProcessResult run_program(const QString& program, const QStringList& args, int timeout_ms = 300000,
                          const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment());

// A resources folder elsewhere: the source tree's presets and starter corpus and the bundled
// hsm_ab model, whose config.json names a corpus that is not on this machine (as the bundled
// models' do on every machine but the one that trained them). HSM_RESOURCES points at it while
// the object lives and is restored after.
class ResourcesElsewhere {
 public:
  explicit ResourcesElsewhere(const QString& name);
  ~ResourcesElsewhere();
  ResourcesElsewhere(const ResourcesElsewhere&) = delete;
  ResourcesElsewhere& operator=(const ResourcesElsewhere&) = delete;
  QString model() const;    // <root>/models/hsm_ab
  QString starter() const;  // <root>/corpus/tinystories-starter.txt
  static constexpr const char* kMissingCorpus = "/nonexistent/machine-that-trained-it/tinystories-sample.txt";

 private:
  QString root_;
  QByteArray before_;
};

}  // namespace studio::test
