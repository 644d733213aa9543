// Issue 35's memory measurement (not a test): the studio's peak resident memory with the three
// bundled demo models open and used, while an ablation runs. The main window as a user has it:
// the demo models opened, each one diagnosed (Diagnostics) and generating (Playground), then
// an ablation of hsm_ab on a corpus (Probe), during which the other two models generate
// again. Prints one JSON line: peak_rss_kib (VmHWM), rss_kib at the end, the models used,
// seconds. Only the views' public calls are used, so the same file builds against older trees
// (docs/architecture.md, "Threads", says what is shared).
//   QT_QPA_PLATFORM=offscreen studio_memory CORPUS [MAX_WINDOWS]
#include <QApplication>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QThread>
#include <cstdio>
#include <functional>

#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/playground_view.h"
#include "gui/views/probe_view.h"
#include "gui/widgets/token_text.h"

using namespace studio;

namespace {

long status_kib(const char* field) {
  QFile f(QStringLiteral("/proc/self/status"));
  if (!f.open(QIODevice::ReadOnly)) return -1;
  for (const QByteArray& line : f.readAll().split('\n'))
    if (line.startsWith(field)) return line.mid(static_cast<int>(qstrlen(field))).trimmed().split(' ').front().toLong();
  return -1;
}

bool wait_for(const std::function<bool()>& done, int timeout_ms = 600000) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > timeout_ms) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return true;
}

int fail(const QString& what) {
  std::fprintf(stderr, "studio_memory: %s\n", qPrintable(what));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  if (argc < 2) return fail(QStringLiteral("usage: studio_memory CORPUS [MAX_WINDOWS]"));
  const QString corpus = QString::fromLocal8Bit(argv[1]);
  const int maxWindows = argc > 2 ? QString::fromLocal8Bit(argv[2]).toInt() : 256;
  QElapsedTimer clock;
  clock.start();
  MainWindow window;
  window.resize(1500, 950);
  window.show();
  if (window.openBundledModels() != 3) return fail(QStringLiteral("the three bundled models did not open"));
  RunList* runs = window.runs();
  DiagnosticsView* diagnostics = window.diagnosticsView();
  PlaygroundView* play = window.playgroundView();
  ProbeView* probe = window.probeView();
  play->setCompare(false);
  play->setSeed(7);
  if (auto* maxTokens = play->findChild<QWidget*>(QStringLiteral("max_tokens"))) maxTokens->setProperty("value", 40);
  auto generate = [&]() -> bool { return play->generate() && wait_for([&] { return !play->isGenerating(); }); };

  // Every model used: diagnosed and generating.
  int hsmAb = -1;
  QStringList used;
  for (int row = 0; row < runs->count(); ++row) {
    runs->setCurrent(row);
    if (QFileInfo(runs->at(row).dir).fileName() == QStringLiteral("hsm_ab")) hsmAb = row;
    window.showView(MainWindow::kDiagnostics);
    if (!wait_for([&] { return !diagnostics->isRunning(); })) return fail(QStringLiteral("diagnosis hangs"));
    if (!diagnostics->run() || !wait_for([&] { return !diagnostics->isRunning(); }))
      return fail(QStringLiteral("diagnosis: %1").arg(diagnostics->lastError()));
    window.showView(MainWindow::kPlayground);
    if (!generate()) return fail(QStringLiteral("generation: %1").arg(play->lastError()));
    used << QFileInfo(runs->at(row).dir).fileName();
  }
  if (hsmAb < 0) return fail(QStringLiteral("no hsm_ab among the bundled models"));
  const long loadedKib = status_kib("VmHWM:");

  // The ablation of hsm_ab on the analysis thread; meanwhile the other models generate.
  runs->setCurrent(hsmAb);
  window.showView(MainWindow::kProbe);
  probe->setDataPath(corpus);
  probe->setMaxWindows(maxWindows);
  if (!probe->runAblation()) return fail(QStringLiteral("ablation: %1").arg(probe->lastError()));
  int generatedDuring = 0;
  for (int row = 0; row < runs->count() && probe->isAblating(); ++row) {
    if (row == hsmAb) continue;
    runs->setCurrent(row);
    window.showView(MainWindow::kPlayground);
    if (generate()) ++generatedDuring;
    window.showView(MainWindow::kProbe);
  }
  if (!wait_for([&] { return !probe->isAblating(); })) return fail(QStringLiteral("ablation hangs"));
  if (!probe->lastError().isEmpty() && !probe->hasAblation())
    return fail(QStringLiteral("ablation: %1").arg(probe->lastError()));
  std::printf(
      "{\"peak_rss_kib\": %ld, \"peak_rss_before_ablation_kib\": %ld, \"rss_kib\": %ld, \"models\": \"%s\", "
      "\"ablation_windows\": %d, \"generated_during_ablation\": %d, \"seconds\": %.1f}\n",
      status_kib("VmHWM:"), loadedKib, status_kib("VmRSS:"), qPrintable(used.join(QLatin1Char(','))), maxWindows,
      generatedDuring, clock.elapsed() / 1000.0);
  return 0;
}
