// The studio binary as reviewers run it: the scripted --smoke session trains, generates
// while a second model trains, exports, and never holds the GUI thread for more than 50 ms;
// without a display it says how to run it instead of aborting.
#include <gtest/gtest.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <cmath>
#include <cstdio>
#include <utility>

#include "hsm/run_folder.h"
#include "studio_test_util.h"

using namespace studio::test;

namespace {

// The GUI thread's budget is 50 ms of work at a stretch (its CPU time between two heartbeats:
// what else the machine runs does not count), a figure the report measures (max_busy_ms, per
// phase) rather than one asserted here: on a machine busy with other tests its own CPU time
// still varies by tens of percent. Asserted is what a real regression crosses (a view that
// drew its data on the GUI thread stalled it for 893 ms): five times the budget, and a wall
// time stall that no loaded CI machine reaches by scheduling alone.
constexpr double kRegressionBusyMs = 250, kRegressionStallMs = 1000;

void expect_responsive(const QJsonObject& j, const QByteArray& out) {
  EXPECT_EQ(j.value(QStringLiteral("busy_budget_ms")).toDouble(), 50.0);
  EXPECT_LT(j.value(QStringLiteral("max_busy_ms")).toDouble(1e9), kRegressionBusyMs) << out.toStdString();
  EXPECT_LT(j.value(QStringLiteral("max_stall_ms")).toDouble(1e9), kRegressionStallMs) << out.toStdString();
  // The report says where the time went: per phase, and the slowest events by name.
  EXPECT_FALSE(j.value(QStringLiteral("max_busy_ms_by_phase")).toObject().isEmpty()) << out.toStdString();
  const QJsonArray slowest = j.value(QStringLiteral("slowest_events")).toArray();
  EXPECT_FALSE(slowest.isEmpty()) << out.toStdString();
  for (const QJsonValue& e : slowest) {
    EXPECT_FALSE(e.toObject().value(QStringLiteral("receiver")).toString().isEmpty());
    EXPECT_FALSE(e.toObject().value(QStringLiteral("phase")).toString().isEmpty());
  }
}

}  // namespace

TEST(Smoke, TrainsGeneratesExportsWithoutStallingTheGui) {
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("smoke"));
  const QString corpus = make_corpus(dir);
  const QString config = tiny_config(dir);
  const ProcessResult r =
      run_program(QStringLiteral(HSM_STUDIO_PATH),
                  {QStringLiteral("--smoke"), config, QStringLiteral("--data"), corpus, QStringLiteral("--steps"),
                   QStringLiteral("12"), QStringLiteral("--out"), QDir(dir).filePath(QStringLiteral("out")),
                   QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--json")});
  ASSERT_EQ(r.exit_code, 0) << r.out.toStdString() << r.err.toStdString();
  const QJsonObject j = QJsonDocument::fromJson(r.out).object();
  ASSERT_FALSE(j.isEmpty()) << r.out.toStdString();
  EXPECT_TRUE(j.value(QStringLiteral("error")).isNull());
  EXPECT_EQ(j.value(QStringLiteral("steps")).toInt(), 24);  // two runs of 12
  EXPECT_GT(j.value(QStringLiteral("generated_tokens")).toInt(), 0);
  const QJsonArray exports = j.value(QStringLiteral("exports")).toArray();
  EXPECT_EQ(exports.size(), 20);  // five plots × PNG, PDF, SVG, CSV
  for (const QJsonValue& f : exports) EXPECT_GT(QFileInfo(f.toString()).size(), 0) << f.toString().toStdString();
  EXPECT_GT(j.value(QStringLiteral("heartbeats")).toInt(), 10);
  // The Lab view's tiny lab: its worker scored the one cell.
  const double lab = j.value(QStringLiteral("lab_answer_accuracy")).toDouble(-1);
  EXPECT_GE(lab, 0.0) << r.out.toStdString();
  EXPECT_LE(lab, 1.0);
  // The Experiments view took the open runs (the two trained here) as one experiment.
  EXPECT_EQ(j.value(QStringLiteral("experiment_rows")).toInt(), 2) << r.out.toStdString();
  // The Trace view traced the first run, on prompts that fit its small tokenizer (issue 65: the
  // view's own pair was 31 tokens against 32, the trace failed, and the session passed).
  EXPECT_EQ(j.value(QStringLiteral("traced_layers")).toInt(), 3) << r.out.toStdString();
  EXPECT_FALSE(j.contains(QStringLiteral("trace_error"))) << r.out.toStdString();
  expect_responsive(j, r.out);
}

// A phase that fails is the session's error, with a non-zero exit, and the phases after it still
// run (issue 65): no prompt pair fits a context of 2 tokens, so the trace fails; the lab still scores.
TEST(Smoke, AFailedPhaseIsTheSessionsErrorAndTheOthersStillRun) {
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("smoke-failed-phase"));
  QDir().mkpath(dir);
  const QString config = QDir(dir).filePath(QStringLiteral("context2.json"));
  QFile f(config);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(R"({"name": "context2", "vocab_size": 300, "d_model": 32, "context": 2, "dropout": 0.0,
  "layers": [{"mixer": "hsm_ab", "ffn": 64, "heads": 1}, {"mixer": "attn", "ffn": 64, "heads": 4}]})");
  f.close();
  const ProcessResult r =
      run_program(QStringLiteral(HSM_STUDIO_PATH),
                  {QStringLiteral("--smoke"), config, QStringLiteral("--data"), make_corpus(dir), QStringLiteral("--steps"),
                   QStringLiteral("4"), QStringLiteral("--max-tokens"), QStringLiteral("8"), QStringLiteral("--out"),
                   QDir(dir).filePath(QStringLiteral("out")), QStringLiteral("--threads"), QStringLiteral("1"),
                   QStringLiteral("--json")});
  EXPECT_EQ(r.exit_code, 1) << r.out.toStdString() << r.err.toStdString();
  const QJsonObject j = QJsonDocument::fromJson(r.out).object();
  ASSERT_FALSE(j.isEmpty()) << r.out.toStdString();
  const QString error = j.value(QStringLiteral("error")).toString();
  EXPECT_TRUE(error.startsWith(QStringLiteral("trace: "))) << r.out.toStdString();
  EXPECT_TRUE(error.contains(QStringLiteral("context of 2 tokens"))) << r.out.toStdString();
  EXPECT_EQ(j.value(QStringLiteral("traced_layers")).toInt(), 0);
  EXPECT_GE(j.value(QStringLiteral("lab_answer_accuracy")).toDouble(-1), 0.0) << r.out.toStdString();
  EXPECT_EQ(j.value(QStringLiteral("exports")).toArray().size(), 20) << r.out.toStdString();
}

// What --smoke cannot use is refused with a reason: a folder that is not a run (a lab's), a number
// of steps that is not one (issue 65: `--steps 0` was taken, a lab folder said "model 'lab': ").
TEST(Smoke, ALabFolderAndAZeroAreRefusedWithAReason) {
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("smoke-refused"));
  const QString lab = QDir(dir).filePath(QStringLiteral("lab"));
  QDir().mkpath(QDir(lab).filePath(QStringLiteral("runs")));
  const QString corpus = make_corpus(dir);
  ProcessResult r = run_program(QStringLiteral(HSM_STUDIO_PATH),
                                {QStringLiteral("--smoke"), lab, QStringLiteral("--data"), corpus, QStringLiteral("--json")});
  EXPECT_EQ(r.exit_code, 1) << r.out.toStdString() << r.err.toStdString();
  const QString error = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("error")).toString();
  EXPECT_TRUE(error.contains(QStringLiteral("is a folder but not a run folder"))) << r.out.toStdString();
  EXPECT_TRUE(error.contains(lab)) << r.out.toStdString();
  for (const auto& [option, value] : {std::pair{"--steps", "0"}, std::pair{"--steps", "many"}, std::pair{"--batch", "0"},
                                      std::pair{"--max-tokens", "-5"}, std::pair{"--timeout", "0"}}) {
    r = run_program(QStringLiteral(HSM_STUDIO_PATH),
                    {QStringLiteral("--smoke"), tiny_config(dir), QStringLiteral("--data"), corpus,
                     QLatin1String(option), QLatin1String(value), QStringLiteral("--json")});
    EXPECT_EQ(r.exit_code, 2) << option << " " << value << ": " << r.out.toStdString();
    const QString err = QString::fromUtf8(r.err);
    const QRegularExpression line(QStringLiteral("^hsm-studio: %1 must be a whole number from -?\\d+ to \\d+, not '%2'$")
                                      .arg(QRegularExpression::escape(QLatin1String(option)),
                                           QRegularExpression::escape(QLatin1String(value))),
                                  QRegularExpression::MultilineOption);
    EXPECT_TRUE(line.match(err).hasMatch()) << err.toStdString();
    EXPECT_TRUE(r.out.isEmpty()) << r.out.toStdString();  // refused before any session
  }
}

// The same session on a paper-size model (the bundled hsm_ab run: d 256, 7 layers, 5.0M
// parameters): its views open and draw within the regression bound in every phase, and the
// report measures each phase against the 50 ms budget (printed for the log).
TEST(Smoke, PaperSizeModelKeepsTheGuiResponsiveInEveryPhase) {
  const QString run = QStringLiteral(HSM_RESOURCES_PATH) + QStringLiteral("/models/hsm_ab");
  if (!hsm::is_run_folder(run.toStdString())) GTEST_SKIP() << run.toStdString() << " is missing";
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("smoke-paper"));
  const QString corpus = make_corpus(dir, 200, 14);  // stories longer than the paper's context of 128
  const ProcessResult r = run_program(
      QStringLiteral(HSM_STUDIO_PATH),
      {QStringLiteral("--smoke"), run, QStringLiteral("--data"), corpus, QStringLiteral("--steps"), QStringLiteral("2"),
       QStringLiteral("--batch"), QStringLiteral("4"), QStringLiteral("--max-tokens"), QStringLiteral("20"),
       QStringLiteral("--out"), QDir(dir).filePath(QStringLiteral("out")), QStringLiteral("--json")});
  ASSERT_EQ(r.exit_code, 0) << r.out.toStdString() << r.err.toStdString();
  const QJsonObject j = QJsonDocument::fromJson(r.out).object();
  ASSERT_FALSE(j.isEmpty()) << r.out.toStdString();
  ASSERT_TRUE(j.value(QStringLiteral("error")).isNull()) << r.out.toStdString();
  EXPECT_EQ(j.value(QStringLiteral("weight_layers")).toInt(), 7);
  EXPECT_EQ(j.value(QStringLiteral("diagnosed_layers")).toInt(), 7);
  EXPECT_EQ(j.value(QStringLiteral("traced_layers")).toInt(), 7) << r.out.toStdString();  // the Trace view's maps
  const QJsonObject busy = j.value(QStringLiteral("max_busy_ms_by_phase")).toObject();
  for (const char* phase :
       {"train_b_and_generate", "training_view", "architecture", "weights", "diagnostics", "probe", "trace", "lab",
        "experiments"}) {
    ASSERT_TRUE(busy.contains(QLatin1String(phase))) << phase << ": " << r.out.toStdString();
    std::printf("paper-size %-22s max_busy_ms %6.1f (budget 50)\n", phase, busy.value(QLatin1String(phase)).toDouble());
  }
  expect_responsive(j, r.out);
}

TEST(Smoke, ARunWithAHundredThousandPointsStaysSmooth) {
  // A copy of a trained run whose metrics.jsonl holds 100k train records (~16 MB): the
  // studio opens it, overlays it while another model trains, and plots it, stall-free.
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("smoke-long"));
  const QString run = QDir(dir).filePath(QStringLiteral("long-run"));
  QDir().mkpath(run);
  for (const QString& f : QDir(trained_run()).entryList(QDir::Files))
    QFile::copy(QDir(trained_run()).filePath(f), QDir(run).filePath(f));
  QFile metrics(QDir(run).filePath(QStringLiteral("metrics.jsonl")));
  ASSERT_TRUE(metrics.open(QIODevice::WriteOnly | QIODevice::Truncate));
  for (int s = 1; s <= 100000; ++s) {
    hsm::MetricRecord m;
    m.kind = "train";
    m.step = s;
    m.total_steps = 100000;
    m.train_loss = 2.0 + 4.0 * std::exp(-s / 20000.0) + 0.1 * std::sin(s);
    m.tokens_per_s = 12000 + s % 100;
    m.lr = 0.002;
    m.wall_s = s * 0.1;
    metrics.write(QByteArray::fromStdString(hsm::metric_to_json_line(m) + "\n"));
  }
  metrics.close();
  const ProcessResult r = run_program(
      QStringLiteral(HSM_STUDIO_PATH),
      {QStringLiteral("--smoke"), run, QStringLiteral("--data"), make_corpus(dir), QStringLiteral("--steps"),
       QStringLiteral("6"), QStringLiteral("--out"), QDir(dir).filePath(QStringLiteral("out")),
       QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--json")});
  ASSERT_EQ(r.exit_code, 0) << r.out.toStdString() << r.err.toStdString();
  const QJsonObject j = QJsonDocument::fromJson(r.out).object();
  expect_responsive(j, r.out);
  // The export holds every point, not the decimated drawing.
  // Export names carry the run and the view (widgets/widget_export.h: export_stem).
  QFile csv(QDir(dir).filePath(QStringLiteral("out/exports/long-run-training-loss.csv")));
  ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
  int rows = 0;
  while (!csv.atEnd())
    if (csv.readLine().startsWith("\"long-run train\"")) ++rows;
  EXPECT_EQ(rows, 100000);
}

// A damaged metrics.jsonl (a record with its step written as text, a 1 MB last line that a
// killed writer never finished) neither stops the run from opening nor makes the studio spin:
// the good records are plotted, the bad lines named (on stderr), the session ends in time.
TEST(Smoke, ADamagedMetricsFileIsSkippedNotSpunOn) {
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("smoke-damaged"));
  const QString run = QDir(dir).filePath(QStringLiteral("damaged-run"));
  QDir().mkpath(run);
  for (const QString& f : QDir(trained_run()).entryList(QDir::Files))
    QFile::copy(QDir(trained_run()).filePath(f), QDir(run).filePath(f));
  QFile metrics(QDir(run).filePath(QStringLiteral("metrics.jsonl")));
  ASSERT_TRUE(metrics.open(QIODevice::Append));
  metrics.write(R"({"kind": "train", "step": "21", "train_loss": 2.0})" "\n");
  metrics.write(QByteArray(1 << 20, 'x'));
  metrics.close();
  const ProcessResult r = run_program(
      QStringLiteral(HSM_STUDIO_PATH),
      {QStringLiteral("--smoke"), run, QStringLiteral("--data"), make_corpus(dir), QStringLiteral("--steps"),
       QStringLiteral("4"), QStringLiteral("--out"), QDir(dir).filePath(QStringLiteral("out")),
       QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--timeout"), QStringLiteral("120"),
       QStringLiteral("--json")},
      180000);
  ASSERT_EQ(r.exit_code, 0) << r.out.toStdString() << r.err.toStdString();
  const QJsonObject j = QJsonDocument::fromJson(r.out).object();
  ASSERT_TRUE(j.value(QStringLiteral("error")).isNull()) << r.out.toStdString();
  expect_responsive(j, r.out);
  EXPECT_TRUE(r.err.contains("metrics.jsonl line")) << r.err.toStdString();
  EXPECT_TRUE(r.err.contains("\"step\" is not a whole number")) << r.err.toStdString();
  EXPECT_TRUE(r.err.contains("longer than 64 KiB and unfinished")) << r.err.toStdString();
  QFile csv(QDir(dir).filePath(QStringLiteral("out/exports/damaged-run-training-loss.csv")));
  ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
  int rows = 0;
  while (!csv.atEnd())
    if (csv.readLine().startsWith("\"damaged-run train\"")) ++rows;
  EXPECT_GT(rows, 0) << "the good records are plotted";
}

TEST(Smoke, ReportsABadCorpusAsAnError) {
  const QString dir = QDir(temp_root()).filePath(QStringLiteral("smoke-bad"));
  const ProcessResult r = run_program(QStringLiteral(HSM_STUDIO_PATH),
                                      {QStringLiteral("--smoke"), tiny_config(dir), QStringLiteral("--data"),
                                       QStringLiteral("/no/such/file.txt"), QStringLiteral("--json")});
  EXPECT_EQ(r.exit_code, 1);
  const QJsonObject j = QJsonDocument::fromJson(r.out).object();
  EXPECT_TRUE(j.value(QStringLiteral("error")).toString().contains(QStringLiteral("does not exist")))
      << r.out.toStdString();
}

TEST(Smoke, WithoutADisplayItSaysHowToRun) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* var : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(QLatin1String(var));
  const ProcessResult r = run_program(QStringLiteral(HSM_STUDIO_PATH), {}, 30000, env);
  EXPECT_EQ(r.exit_code, 2);
  const QString err = QString::fromUtf8(r.err).trimmed();
  EXPECT_EQ(err.count(QLatin1Char('\n')), 0) << err.toStdString();  // one line
  EXPECT_TRUE(err.contains(QStringLiteral("xvfb-run"))) << err.toStdString();
  EXPECT_TRUE(err.contains(QStringLiteral("QT_QPA_PLATFORM=offscreen")));
}

// As hsm's parallel commands (Cli.ParallelCommandsGetTheShortOpenMpSpinInOneStart): the studio
// runs on the short OpenMP spin (hsm/cpu_threads.h), set before any library's initialiser, so
// libgomp, which prints what it read under OMP_DISPLAY_ENV=verbose, starts once and reads it.
TEST(Smoke, TheShortOpenMpSpinReachesLibgompInOneStart) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* var : {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"}) env.remove(QLatin1String(var));
  env.insert(QStringLiteral("OMP_DISPLAY_ENV"), QStringLiteral("verbose"));
  const ProcessResult r = run_program(QStringLiteral(HSM_STUDIO_PATH), {QStringLiteral("--version")}, 30000, env);
  EXPECT_EQ(r.exit_code, 0) << r.err.toStdString();
  const QString err = QString::fromUtf8(r.err);
  EXPECT_EQ(err.count(QStringLiteral("OPENMP DISPLAY ENVIRONMENT BEGIN")), 1) << err.toStdString();
  EXPECT_TRUE(err.contains(QStringLiteral("GOMP_SPINCOUNT = '10000'"))) << err.toStdString();
}
