// The Playground driven through its widgets: a fixed seed gives the same story twice and
// the same story as `hsm generate` with that seed; tokens carry their alternatives;
// compare mode runs every open model; a bad seed is refused.
#include <gtest/gtest.h>

#include <QApplication>
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>

#include "gui/engine/engine_host.h"
#include "gui/run_list.h"
#include "gui/views/playground_view.h"
#include "gui/widgets/field_error.h"
#include "gui/widgets/token_text.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

struct Studio {
  RunList runs;
  EngineHost engine;
  PlaygroundView view{&runs, &engine};
};

// Types text into a widget as a user would (key presses and releases).
void type_text(QWidget* w, const QString& text) {
  for (const QChar ch : text) {
    QKeyEvent press(QEvent::KeyPress, 0, Qt::NoModifier, QString(ch));
    QApplication::sendEvent(w, &press);
    QKeyEvent release(QEvent::KeyRelease, 0, Qt::NoModifier, QString(ch));
    QApplication::sendEvent(w, &release);
  }
}

QString generate_once(PlaygroundView& view) {
  view.findChild<QPushButton*>(QStringLiteral("generate"))->click();
  EXPECT_TRUE(view.isGenerating()) << view.lastError().toStdString();
  EXPECT_TRUE(wait_for([&] { return !view.isGenerating(); }));
  EXPECT_EQ(view.lastError(), QString());
  return view.output(0)->generatedText();
}

}  // namespace

TEST(Playground, FixedSeedRepeatsAndMatchesTheCli) {
  Studio s;
  const QString run = trained_run();
  s.runs.setCurrent(s.runs.open(run));
  s.view.setPrompt(QStringLiteral("Once upon a time, Lily"));
  s.view.setSeed(42);
  s.view.findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0.9);
  s.view.findChild<QSpinBox*>(QStringLiteral("max_tokens"))->setValue(40);
  const QString first = generate_once(s.view);
  ASSERT_FALSE(first.isEmpty());
  EXPECT_GT(s.view.output(0)->tokenCount(), 0);
  const QString second = generate_once(s.view);
  EXPECT_EQ(first, second);

  const ProcessResult cli = run_program(
      QStringLiteral(HSM_CLI_PATH),
      {QStringLiteral("generate"), run, QStringLiteral("--prompt"), QStringLiteral("Once upon a time, Lily"),
       QStringLiteral("--seed"), QStringLiteral("42"), QStringLiteral("--temperature"), QStringLiteral("0.9"),
       QStringLiteral("--top-p"), QStringLiteral("0.95"), QStringLiteral("--max-tokens"), QStringLiteral("40"),
       QStringLiteral("--json")});
  ASSERT_EQ(cli.exit_code, 0) << cli.err.toStdString();
  const QJsonObject j = QJsonDocument::fromJson(cli.out).object();
  EXPECT_EQ(j.value(QStringLiteral("text")).toString(), first);

  // Every token shows its probability and alternatives on hover.
  TokenText* out = s.view.output(0);
  const int promptLength = QStringLiteral("Once upon a time, Lily").size();
  const QString tip = out->tooltipAt(promptLength);
  EXPECT_TRUE(tip.contains(QStringLiteral("p = "))) << tip.toStdString();
  EXPECT_TRUE(tip.contains(QStringLiteral("<table>")));
  EXPECT_EQ(out->tooltipAt(0), QString());  // the prompt is not a generated token

  // The tint is a toggle: off shows the same story as plain text, for this output and the next
  // generation's, and the choice is remembered.
  auto* tint = s.view.findChild<QCheckBox*>(QStringLiteral("playground_tint"));
  ASSERT_NE(tint, nullptr);
  EXPECT_TRUE(out->tinted());
  tint->click();
  EXPECT_FALSE(out->tinted());
  EXPECT_EQ(generate_once(s.view), first);
  EXPECT_FALSE(s.view.output(0)->tinted());
  EXPECT_FALSE(QSettings().value(QStringLiteral("playground/tint"), true).toBool());
  tint->click();
  EXPECT_TRUE(s.view.output(0)->tinted());
}

TEST(Playground, RandomSeedIsShownAndCompareRunsEveryModel) {
  Studio s;
  s.runs.open(trained_run());
  s.runs.setCurrent(0);
  s.view.setRandomSeed(true);
  s.view.findChild<QSpinBox*>(QStringLiteral("max_tokens"))->setValue(8);
  generate_once(s.view);
  const QString shown = s.view.findChild<QLineEdit*>(QStringLiteral("seed"))->text();
  EXPECT_GT(shown.toULongLong(), 0u);  // the seed used, so the story can be reproduced
  EXPECT_TRUE(s.view.findChild<QLabel*>(QStringLiteral("status_0"))->text().contains(shown));

  // A second copy of the run is a second model; compare mode fills one column each.
  const QString copy = QDir(temp_root()).filePath(QStringLiteral("copy-run"));
  QDir().mkpath(copy);
  for (const QString& f : QDir(trained_run()).entryList(QDir::Files))
    QFile::copy(QDir(trained_run()).filePath(f), QDir(copy).filePath(f));
  s.runs.open(copy);
  s.view.setCompare(true);
  s.view.setSeed(5);
  generate_once(s.view);
  ASSERT_EQ(s.view.columnCount(), 2);
  EXPECT_EQ(s.view.output(0)->generatedText(), s.view.output(1)->generatedText());  // same weights, same seed
  // The CPU threads the decoder used for the last token (issue 37). Checked on this fixed
  // seed's story: a random one may end at its first token, and then nothing was decoded.
  ASSERT_GT(s.view.output(0)->tokenCount(), 1);
  const QString status = s.view.findChild<QLabel*>(QStringLiteral("status_0"))->text();
  EXPECT_TRUE(status.contains(QRegularExpression(QStringLiteral("decoding on \\d+ thread")))) << status.toStdString();
}

// A new story at every Generate by default, its seed shown; one click on "random" keeps the
// seed shown, and the next Generate tells the same story again.
TEST(Playground, TheSeedIsRandomByDefaultShownAndFixedInOneClick) {
  Studio s;
  s.view.resize(1280, 720);
  s.view.show();
  auto* random = s.view.findChild<QCheckBox*>(QStringLiteral("random_seed"));
  ASSERT_NE(random, nullptr);
  EXPECT_TRUE(random->isChecked());
  EXPECT_GT(s.view.seedText().toULongLong(), 0u);  // a seed is shown before the first story
  EXPECT_LE(s.view.seedText().toULongLong(), PlaygroundView::kMaxDrawnSeed);  // issue 69: short enough to read whole
  s.runs.setCurrent(s.runs.open(trained_run()));
  s.view.setPrompt(QStringLiteral("Once upon a time, Lily"));
  s.view.findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(1.0);
  s.view.findChild<QSpinBox*>(QStringLiteral("max_tokens"))->setValue(24);
  const QString first = generate_once(s.view);
  const QString firstSeed = s.view.seedText();
  generate_once(s.view);
  const QString secondSeed = s.view.seedText();
  EXPECT_NE(firstSeed, secondSeed);  // 1 in 2^63 to be equal by chance
  EXPECT_TRUE(s.view.findChild<QLabel*>(QStringLiteral("status_0"))->text().contains(secondSeed));
  const QString second = s.view.output(0)->generatedText();

  click(random, QPointF(4, random->height() / 2.0));  // one click: keep this seed
  EXPECT_FALSE(random->isChecked());
  EXPECT_EQ(generate_once(s.view), second);
  EXPECT_EQ(s.view.seedText(), secondSeed);
  EXPECT_EQ(generate_once(s.view), second);
  (void)first;
}

TEST(Playground, PaperPromptsAreBuiltInAndABadSeedIsRefused) {
  Studio s;
  EXPECT_EQ(s.view.paperPrompts().size(), 11);
  auto* list = s.view.findChild<QListWidget*>(QStringLiteral("paper_prompts"));
  ASSERT_EQ(list->count(), 11);
  emit list->itemClicked(list->item(4));
  EXPECT_EQ(s.view.prompt(), QStringLiteral("Jack wanted to read a book, so he went to"));

  s.runs.setCurrent(s.runs.open(trained_run()));
  auto* seed = s.view.findChild<QLineEdit*>(QStringLiteral("seed"));
  seed->selectAll();
  type_text(seed, QStringLiteral("zero"));  // typing a seed fixes it: no new one is drawn over it
  EXPECT_FALSE(s.view.randomSeed());
  EXPECT_FALSE(s.view.generate());
  EXPECT_TRUE(s.view.findChild<FieldError*>(QStringLiteral("seed_error"))->hasError());
  EXPECT_FALSE(s.view.isGenerating());
}

TEST(Playground, NoModelSaysWhatToDo) {
  Studio s;
  EXPECT_FALSE(s.view.generate());
  EXPECT_TRUE(s.view.lastError().contains(QStringLiteral("open a run folder")));
  EXPECT_FALSE(s.view.findChild<QPushButton*>(QStringLiteral("generate"))->isEnabled());
}
