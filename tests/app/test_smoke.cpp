// The studio binary as reviewers run it: the scripted --smoke session trains, generates
// while a second model trains, exports, and never holds the GUI thread for more than 50 ms;
// without a display it says how to run it instead of aborting.
#include <gtest/gtest.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cmath>

#include "hsm/run_folder.h"
#include "studio_test_util.h"

using namespace studio::test;

namespace {

// The GUI thread never works more than 50 ms at a stretch (its CPU time between two
// heartbeats: independent of what else the machine runs), and never stops answering for
// long in wall time either (generous: a loaded CI machine may not schedule it for a while).
void expect_responsive(const QJsonObject& j, const QByteArray& out) {
  EXPECT_LT(j.value(QStringLiteral("max_busy_ms")).toDouble(1e9), 50.0) << out.toStdString();
  EXPECT_LT(j.value(QStringLiteral("max_stall_ms")).toDouble(1e9), 1000.0) << out.toStdString();
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
  QFile csv(QDir(dir).filePath(QStringLiteral("out/exports/loss.csv")));
  ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
  int rows = 0;
  while (!csv.atEnd())
    if (csv.readLine().startsWith("\"long-run train\"")) ++rows;
  EXPECT_EQ(rows, 100000);
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
