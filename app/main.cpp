// hsm-studio: the desktop app. Parses the command line, refuses politely without a
// display, and opens the main window (or runs the scripted --smoke session).
#include <QApplication>
#include <QCommandLineParser>
#include <QJsonDocument>
#include <QScreen>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "gui/help/tour.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/smoke_driver.h"
#include "gui/studio_application.h"
#include "hsm/cpu_threads.h"
#include "hsm/version.h"

namespace {

bool has_arg(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

bool has_display() {
  for (const char* var : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
    if (const char* v = std::getenv(var); v && *v) return true;
  return false;
}

// The offscreen platform plugin warns on every window resize; that says nothing to a user.
void quiet_messages(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (message.contains(QLatin1String("propagateSizeHints"))) return;
  const QByteArray text = qFormatLogMessage(type, context, message).toLocal8Bit();
  std::fprintf(stderr, "%s\n", text.constData());
}

// Training and evaluation in the studio meet a busy machine as hsm's do: a short OpenMP spin
// (docs/performance.md, "Contention"), which libgomp reads only at start, so this may load the
// studio once more before any library's initialiser runs.
void short_openmp_spin(int, char** argv, char** envp) { hsm::use_short_openmp_spin(argv, envp); }
HSM_BEFORE_LIBRARIES(short_openmp_spin);

// A --smoke number: a whole number in [min, max], else false after one line that names the option,
// the range and the value (a word or a 0 was taken as 0 steps before: issue 65).
bool whole_number(const QCommandLineParser& parser, const QCommandLineOption& option, qint64 min, qint64 max,
                  int& value) {
  const QString text = parser.value(option);
  bool ok = false;
  const qint64 v = text.trimmed().toLongLong(&ok);
  if (!ok || v < min || v > max) {
    std::fprintf(stderr, "hsm-studio: --%s must be a whole number from %lld to %lld, not '%s'\n",
                 option.names().constFirst().toUtf8().constData(), static_cast<long long>(min),
                 static_cast<long long>(max), text.toUtf8().constData());
    return false;
  }
  value = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = has_arg(argc, argv, "--smoke");
  const bool help = has_arg(argc, argv, "--help") || has_arg(argc, argv, "-h") || has_arg(argc, argv, "--version");
  if (!has_display()) {
    if (smoke || help) {
      qputenv("QT_QPA_PLATFORM", "offscreen");  // headless by design
    } else {
      std::fprintf(stderr,
                   "hsm-studio: no display found (DISPLAY is not set); run it on a desktop, under "
                   "`xvfb-run hsm-studio`, or headless with QT_QPA_PLATFORM=offscreen\n");
      return 2;
    }
  }

  qInstallMessageHandler(quiet_messages);
  studio::StudioApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("hsm-studio"));
  QApplication::setApplicationName(QStringLiteral("HSM Studio"));
  QApplication::setApplicationVersion(QStringLiteral(HSM_VERSION));
  // Qt's raster painting has no 8-bit (palette) displays: every window painted black and the
  // studio crashed in the style's first frame (Xvfb started with `-screen 0 WxHx8`). Say so instead.
  if (const QScreen* screen = QGuiApplication::primaryScreen(); screen && screen->depth() < 16) {
    std::fprintf(stderr,
                 "hsm-studio: the display has %d bits per pixel; the studio needs 16 or more (under Xvfb: "
                 "xvfb-run -s '-screen 0 1280x720x24' hsm-studio)\n",
                 screen->depth());
    return 2;
  }

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Train, inspect and play with Hierarchical Shift Mixing models."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("runs"), QStringLiteral("Run folders to open."), QStringLiteral("[RUN...]"));
  QCommandLineOption smokeOpt(QStringLiteral("smoke"),
                              QStringLiteral("Scripted headless session on a run folder, preset or config: train, "
                                             "generate while a second model trains, export; prints a JSON report."),
                              QStringLiteral("RUN_OR_PRESET"));
  QCommandLineOption dataOpt(QStringLiteral("data"), QStringLiteral("Corpus for --smoke."), QStringLiteral("FILE"));
  QCommandLineOption stepsOpt(QStringLiteral("steps"), QStringLiteral("Steps per trained run (--smoke)."),
                              QStringLiteral("N"), QStringLiteral("20"));
  QCommandLineOption batchOpt(QStringLiteral("batch"), QStringLiteral("Batch size (--smoke)."), QStringLiteral("N"),
                              QStringLiteral("8"));
  QCommandLineOption threadsOpt(QStringLiteral("threads"), QStringLiteral("CPU threads for training (--smoke)."),
                                QStringLiteral("N"), QStringLiteral("0"));
  QCommandLineOption tokensOpt(QStringLiteral("max-tokens"), QStringLiteral("Tokens to generate (--smoke)."),
                               QStringLiteral("N"), QStringLiteral("60"));
  QCommandLineOption outOpt(QStringLiteral("out"), QStringLiteral("Folder for the runs and exports (--smoke)."),
                            QStringLiteral("DIR"));
  QCommandLineOption timeoutOpt(QStringLiteral("timeout"), QStringLiteral("Give up after this many seconds (--smoke)."),
                                QStringLiteral("S"), QStringLiteral("900"));
  QCommandLineOption shotsOpt(QStringLiteral("screenshots"),
                              QStringLiteral("Save PNGs of the views into DIR during --smoke."), QStringLiteral("DIR"));
  QCommandLineOption promptOpt(QStringLiteral("prompt"), QStringLiteral("Prompt for --smoke."), QStringLiteral("TEXT"));
  QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("Print the --smoke report as one JSON line."));
  parser.addOptions({smokeOpt, dataOpt, stepsOpt, batchOpt, threadsOpt, tokensOpt, outOpt, timeoutOpt, shotsOpt, promptOpt, jsonOpt});
  parser.process(app);

  // A scripted session must not touch the user's preferences (recent runs, last corpus).
  QTemporaryDir smokeSettings;
  if (parser.isSet(smokeOpt)) QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, smokeSettings.path());

  studio::MainWindow window;
  if (parser.isSet(smokeOpt)) {
    studio::SmokeOptions o;
    o.target = parser.value(smokeOpt);
    o.data = parser.value(dataOpt);
    o.out = parser.value(outOpt);
    const qint64 cores = std::max(1u, std::thread::hardware_concurrency());
    if (!whole_number(parser, stepsOpt, 1, 10'000'000, o.steps) || !whole_number(parser, batchOpt, 1, 65'536, o.batch) ||
        !whole_number(parser, threadsOpt, 0, cores, o.threads) ||
        !whole_number(parser, tokensOpt, 1, 100'000, o.max_tokens) ||
        !whole_number(parser, timeoutOpt, 1, 7 * 24 * 3600, o.timeout_s))
      return 2;
    o.screenshots = parser.value(shotsOpt);
    if (parser.isSet(promptOpt)) o.prompt = parser.value(promptOpt);
    const QJsonObject report = studio::SmokeDriver(&window, o).run();
    const QByteArray text =
        QJsonDocument(report).toJson(parser.isSet(jsonOpt) ? QJsonDocument::Compact : QJsonDocument::Indented);
    std::fwrite(text.constData(), 1, static_cast<size_t>(text.size()), stdout);
    std::fputc('\n', stdout);
    return report.value(QStringLiteral("error")).isNull() ? 0 : 1;
  }

  QString firstError;
  for (const QString& dir : parser.positionalArguments()) {
    const QString e = window.openRun(dir, true);
    if (!e.isEmpty() && firstError.isEmpty()) firstError = e;
  }
  // With no run named, the bundled demo models open, the Playground ready on the paper's
  // first prompt; without them (or with none installed) the start page.
  if (parser.positionalArguments().isEmpty()) window.openBundledModels();
  if (window.runs()->count() == 0) window.showStartPage();
  else window.showView(studio::MainWindow::kPlayground);
  window.show();
  // The first time the studio opens on the demo models, the tour walks through the views
  // (skippable; Help › Take the tour brings it back).
  if (!studio::help::Tour::seen() && window.runs()->count() > 0) QTimer::singleShot(0, &window, &studio::MainWindow::startTour);
  if (!firstError.isEmpty()) std::fprintf(stderr, "hsm-studio: %s\n", firstError.toUtf8().constData());
  return app.exec();
}
