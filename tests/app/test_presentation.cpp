// Presentation mode (issue 36) through its real widgets: F11 enters it full screen and Esc
// leaves; the text size is kept across stories and restarts; "New story" draws a fresh seed
// and ends at a sentence end (or the story's end) past the minimum length; the typewriter
// holds tokens back; the tint can be turned off; the Playground keeps its text size across
// Generate.
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QSpinBox>
#include <QFile>
#include <QLabel>
#include <QApplication>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QScreen>
#include <QSettings>
#include <QTest>
#include <QToolButton>

#include "gui/engine/engine_host.h"
#include "gui/main_window.h"
#include "gui/run_list.h"
#include "gui/views/playground_view.h"
#include "gui/views/presentation_mode.h"
#include "gui/widgets/token_text.h"
#include "hsm/mixer_kind.h"
#include "studio_test_util.h"

using namespace studio;
using namespace studio::test;

namespace {

// The bundled hsm_ab: a model that has learned where sentences end.
QString bundled_model() { return QStringLiteral(HSM_RESOURCES_PATH "/models/hsm_ab"); }

QAction* find_action(QWidget* w, const QString& text) {
  for (QAction* a : w->findChildren<QAction*>())
    if (a->text().remove(QLatin1Char('&')) == text) return a;
  return nullptr;
}

quint64 seed_of(const QString& status) {
  const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("seed (\\d+)")).match(status);
  return m.hasMatch() ? m.captured(1).toULongLong() : 0;
}

}  // namespace

TEST(Presentation, F11EntersFullScreenAndEscLeaves) {
  MainWindow w;
  w.show();
  w.activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&w));
  QAction* present = find_action(&w, QStringLiteral("Presentation"));
  ASSERT_NE(present, nullptr) << "View › Presentation is missing";
  EXPECT_EQ(present->shortcut(), QKeySequence(Qt::Key_F11));
  QTest::keyClick(&w, Qt::Key_F11);
  PresentationMode* p = w.presentation();
  ASSERT_TRUE(p->isPresenting());
  EXPECT_TRUE(p->isVisible());
  EXPECT_TRUE(p->windowState().testFlag(Qt::WindowFullScreen));
  ASSERT_TRUE(QTest::qWaitForWindowActive(p));
  QTest::keyClick(p, Qt::Key_Escape);
  EXPECT_FALSE(p->isPresenting());
  EXPECT_FALSE(p->isVisible());
  // And once more through the toolbar's button: launch, Present, New story are two clicks.
  w.findChild<QToolButton*>(QStringLiteral("present_button"))->click();
  EXPECT_TRUE(p->isPresenting());
  p->findChild<QPushButton*>(QStringLiteral("leave_presentation"))->click();
  EXPECT_FALSE(p->isPresenting());
}

// Issue 69: the first F11 after a fresh start under openbox at 1024x600 gave a normal 943x401
// window in 5 of 9 tries. While the window waited for the window manager to make it full screen,
// the prompts' band grew the layout's minimum past the window's size; the layout then resized the
// window to its minimum, and Qt drops the full-screen state of a window it resizes. Here the
// layout's minimum grows past the screen while presenting (offscreen, the window manager's part is
// immediate): the window stays full screen, at the screen's size.
TEST(Presentation, AGrowingLayoutNeverTakesThePresentationOutOfFullScreen) {
  MainWindow w;
  w.resize(1024, 600);
  w.show();
  w.activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&w));
  PresentationMode* p = w.presentation();
  QTest::keyClick(&w, Qt::Key_F11);
  ASSERT_TRUE(p->isPresenting());
  QCoreApplication::processEvents();
  ASSERT_TRUE(p->windowState().testFlag(Qt::WindowFullScreen));
  const QSize screen = p->screen()->geometry().size();
  auto* name = p->findChild<QLabel*>(QStringLiteral("presentation_model"));
  ASSERT_NE(name, nullptr);
  name->setMinimumHeight(screen.height() + 50);
  QCoreApplication::sendPostedEvents();
  QCoreApplication::processEvents();
  EXPECT_TRUE(p->windowState().testFlag(Qt::WindowFullScreen));
  EXPECT_EQ(p->size(), screen);
  name->setMinimumHeight(0);
  QTest::keyClick(p, Qt::Key_Escape);
  EXPECT_FALSE(p->isVisible());
}

// Read from the back of a room (issue 48): every control of the presentation bar, not only New
// story and the prompts, is at least 1.25x the desktop's font, and its words fit it.
TEST(Presentation, EveryControlIsAtTheReadableSize) {
  MainWindow w;
  w.show();
  w.findChild<QToolButton*>(QStringLiteral("present_button"))->click();
  PresentationMode* p = w.presentation();
  ASSERT_TRUE(p->isPresenting());
  const double desktop = QApplication::font().pointSizeF();
  int checked = 0;
  for (QAbstractButton* b : p->findChildren<QAbstractButton*>()) {
    if (!b->isVisible()) continue;
    EXPECT_GE(b->font().pointSizeF(), 1.25 * desktop - 1e-6) << b->text().toStdString();
    EXPECT_GE(b->width(), QFontMetrics(b->font()).horizontalAdvance(b->text().split(QLatin1Char('\n')).first()) / 2)
        << b->text().toStdString();
    ++checked;
  }
  EXPECT_GE(checked, 5);  // New story, A-, A+, the tint, Leave (and the prompts)
  for (const char* name : {"typewriter_speed_label", "presentation_status"}) {
    auto* label = p->findChild<QLabel*>(QString::fromLatin1(name));
    ASSERT_NE(label, nullptr) << name;
    EXPECT_GE(label->font().pointSizeF(), 1.25 * desktop - 1e-6) << name;
  }
  p->findChild<QPushButton*>(QStringLiteral("leave_presentation"))->click();
}

TEST(Presentation, NewStoryEndsAtASentenceEndWithAFreshSeed) {
  if (!QFile::exists(bundled_model() + QStringLiteral("/model.safetensors"))) GTEST_SKIP() << "no bundled hsm_ab";
  RunList runs;
  EngineHost engine;
  PlaygroundView playground(&runs, &engine);
  runs.setCurrent(runs.open(bundled_model()));
  playground.setSeed(7);          // a fixed seed in the form: a story still draws its own
  playground.setSeedDraws(2026);  // the stories' own seeds, the same at every run of the test
  PresentationMode p(&playground);
  p.setSpeed(0);
  p.enter();
  QPushButton* newStory = p.findChild<QPushButton*>(QStringLiteral("new_story"));
  ASSERT_NE(newStory, nullptr);
  QList<quint64> seeds;
  for (int i = 0; i < 2; ++i) {
    newStory->click();
    ASSERT_TRUE(p.isTelling()) << p.lastError().toStdString();
    EXPECT_FALSE(newStory->isEnabled());  // one story at a time
    ASSERT_TRUE(wait_for([&] { return !p.isTelling(); }));
    const QString text = p.story()->generatedText();
    EXPECT_GE(p.story()->tokenCount(), PresentationMode::kMinStoryTokens) << text.toStdString();
    EXPECT_LT(p.story()->tokenCount(), PresentationMode::kMaxStoryTokens) << "it ran to the token limit";
    const QString status = p.status();
    EXPECT_TRUE(status.contains(QStringLiteral("end of a sentence")) ||
                status.contains(QStringLiteral("ended the story")))
        << status.toStdString();
    // Either way (stopped at a sentence's end, or the model's own end of the story), the
    // story's last sentence is whole.
    const QString end = text.trimmed().remove(QRegularExpression(QStringLiteral("[\"'”’)]+$")));
    EXPECT_TRUE(end.endsWith(QLatin1Char('.')) || end.endsWith(QLatin1Char('!')) || end.endsWith(QLatin1Char('?')))
        << status.toStdString() << ": …" << text.right(40).toStdString();
    seeds << seed_of(status);
    EXPECT_TRUE(newStory->isEnabled());
  }
  EXPECT_NE(seeds[0], 7u);
  EXPECT_NE(seeds[0], seeds[1]) << "each story draws a fresh seed";
  // The Playground's own form is left as it was.
  EXPECT_FALSE(playground.findChild<QCheckBox*>(QStringLiteral("random_seed"))->isChecked());

  // A paper prompt's button tells its story from that prompt.
  ASSERT_FALSE(p.promptButtons().isEmpty());
  p.promptButtons().first()->click();
  ASSERT_TRUE(wait_for([&] { return !p.isTelling(); }));
  EXPECT_TRUE(p.story()->toPlainText().startsWith(playground.paperPrompts().first()));

  // The typewriter holds tokens back: at 3 tokens a second the model is done long before
  // the story is shown; the fastest setting shows the rest at once.
  p.setSpeed(3);
  bool generated = false;
  QObject::connect(&playground, &PlaygroundView::generationFinished, [&] { generated = true; });
  newStory->click();
  ASSERT_TRUE(wait_for([&] { return generated; }));
  EXPECT_TRUE(p.isTelling());
  EXPECT_LT(p.story()->tokenCount(), playground.output(0)->tokenCount());
  p.setSpeed(0);
  EXPECT_FALSE(p.isTelling());
  EXPECT_EQ(p.story()->tokenCount(), playground.output(0)->tokenCount());
  p.leave();
}

TEST(Presentation, TextSizeAndTintAreKeptAcrossRestarts) {
  RunList runs;
  EngineHost engine;
  {
    PlaygroundView playground(&runs, &engine);
    PresentationMode p(&playground);
    p.show();
    p.activateWindow();
    ASSERT_TRUE(QTest::qWaitForWindowActive(&p));
    p.story()->setFocus();
    const double before = p.textSize();
    QTest::keyClick(p.story(), Qt::Key_Plus, Qt::ControlModifier);
    EXPECT_GT(p.textSize(), before) << "Ctrl+plus";
    p.setTextSize(41);
    p.setTinted(true);
    EXPECT_TRUE(p.story()->tinted());
    p.setTinted(false);
    EXPECT_FALSE(p.story()->tinted());
  }
  PlaygroundView playground(&runs, &engine);
  PresentationMode again(&playground);
  EXPECT_DOUBLE_EQ(again.textSize(), 41);
  EXPECT_FALSE(again.story()->tinted());
}

TEST(Playground, TextSizeIsKeptAcrossGenerate) {
  RunList runs;
  EngineHost engine;
  PlaygroundView view(&runs, &engine);
  runs.setCurrent(runs.open(trained_run()));
  view.setTextSize(19);
  view.setSeed(3);
  ASSERT_TRUE(view.generate()) << view.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !view.isGenerating(); }));
  EXPECT_DOUBLE_EQ(view.output(0)->textSize(), 19);
  // Ctrl+wheel on the text is a step for the whole view, kept for the next Generate.
  emit view.output(0)->textSizeStep(1);
  EXPECT_DOUBLE_EQ(view.textSize(), 20);
  ASSERT_TRUE(view.generate());
  ASSERT_TRUE(wait_for([&] { return !view.isGenerating(); }));
  EXPECT_DOUBLE_EQ(view.output(0)->textSize(), 20);
  PlaygroundView restarted(&runs, &engine);
  EXPECT_DOUBLE_EQ(restarted.textSize(), 20);
  // An empty prompt shows no words the model never saw.
  view.setPrompt(QString());
  EXPECT_FALSE(
      view.findChild<QPlainTextEdit*>(QStringLiteral("prompt"))->placeholderText().contains(QStringLiteral("Once")));
}

// Issue 48: the model on screen (run, model, mixers); Page Down / Page Up switch the model from
// inside and the new model tells a new story; a run switched outside shows a new story when
// presenting again; the paper's prompts whole on their buttons.
TEST(Presentation, ShowsTheModelAndPageDownSwitchesItWithANewStory) {
  const QString second = trained_variant(QStringLiteral("present-second"), [](hsm::RunSpec& spec) {
    spec.run_dir = QDir(temp_root()).filePath(QStringLiteral("present-second/run-b")).toStdString();
    spec.train.seed = 99;
    spec.train.steps = 4;
    spec.train.checkpoint_every = 4;
  });
  RunList runs;
  EngineHost engine;
  PlaygroundView playground(&runs, &engine);
  const int rowA = runs.open(trained_run()), rowB = runs.open(second);
  runs.setCurrent(rowA);
  PresentationMode p(&playground);
  p.setSpeed(0);
  p.enter();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&p));
  EXPECT_TRUE(p.modelText().startsWith(QStringLiteral("run · "))) << p.modelText().toStdString();
  for (const char* mixer : {"hsm_ab", "attn"})
    EXPECT_TRUE(p.modelText().contains(QString::fromUtf8(hsm::mixer_info(mixer).title))) << p.modelText().toStdString();
  ASSERT_TRUE(p.newStory()) << p.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !p.isTelling(); }));
  EXPECT_EQ(p.storyRun(), runs.at(rowA).dir);

  QTest::keyClick(&p, Qt::Key_PageDown);
  EXPECT_EQ(runs.current(), rowB);
  EXPECT_TRUE(p.modelText().startsWith(QStringLiteral("run-b · "))) << p.modelText().toStdString();
  ASSERT_TRUE(wait_for([&] { return p.storyRun() == runs.at(rowB).dir && !p.isTelling(); }));
  EXPECT_GT(p.story()->tokenCount(), 0);

  // Switched outside while not presenting: back in, the current model's story, not the old one.
  p.leave();
  runs.setCurrent(rowA);
  p.enter();
  ASSERT_TRUE(wait_for([&] { return p.storyRun() == runs.at(rowA).dir && !p.isTelling(); }));
  EXPECT_GT(p.story()->tokenCount(), 0);
  p.leave();

  // Issue 69: the Playground compares both models meanwhile; F11 then tells a new story, not the
  // one told before the comparison; back from it the Playground's "Compare" box says what it
  // shows (the story's one column).
  const QString before = p.story()->toPlainText();
  playground.setCompare(true);
  playground.findChild<QSpinBox*>(QStringLiteral("max_tokens"))->setValue(4);
  ASSERT_TRUE(playground.generate()) << playground.lastError().toStdString();
  ASSERT_TRUE(wait_for([&] { return !playground.isGenerating(); }));
  ASSERT_EQ(playground.columnCount(), 2);
  p.enter();
  EXPECT_NE(p.story()->toPlainText(), before) << "the story from before the comparison came back";
  ASSERT_TRUE(wait_for([&] { return !p.isTelling(); }));
  EXPECT_EQ(p.storyRun(), runs.at(rowA).dir);
  p.leave();
  EXPECT_EQ(playground.columnCount(), 1);
  EXPECT_FALSE(playground.findChild<QCheckBox*>(QStringLiteral("compare"))->isChecked())
      << "one story shown, \"Compare every open model\" still ticked";

  // The tint has its colour key while it is on.
  p.setTinted(true);
  EXPECT_TRUE(p.tintKeyShown());
  p.setTinted(false);
  EXPECT_FALSE(p.tintKeyShown());

  // The model's name grows with the story's text (A+), three quarters of its size.
  const double name = p.modelNameSize();
  p.setTextSize(p.textSize() + 12);
  EXPECT_GT(p.modelNameSize(), name);
  EXPECT_GE(p.modelNameSize(), 0.74 * p.textSize());

  // The paper's prompts whole, wrapped onto lines, never cut with "…".
  const QStringList paper = playground.paperPrompts();
  ASSERT_EQ(p.promptButtons().size(), paper.size());
  for (int i = 0; i < paper.size(); ++i) {
    p.promptButtons()[i]->resize(220, 40);
    QCoreApplication::processEvents();
    EXPECT_EQ(p.promptButtons()[i]->text().replace(QLatin1Char('\n'), QLatin1Char(' ')), paper[i].simplified());
  }
  EXPECT_TRUE(engine.waitIdle(60000));
}

// Issue 48: a story longer than the screen shows whole lines only: the line at the top is never
// cut through its letters, and the newest line is whole, whatever the window's height.
TEST(Presentation, AnOverflowingStoryShowsWholeLinesOnly) {
  RunList runs;
  EngineHost engine;
  PlaygroundView playground(&runs, &engine);
  PresentationMode p(&playground);
  p.setTextSize(28);
  p.resize(900, 500);
  p.show();
  TokenText* story = p.story();
  story->setPrompt(QStringLiteral("Once upon a time"));
  hsm::GeneratedToken token;
  token.prob = 0.5;
  auto tell = [&](int tokens) {
    for (int i = 0; i < tokens; ++i) {
      token.text = " word" + std::to_string(i % 10);
      story->appendToken(token);
    }
    QCoreApplication::processEvents();
  };
  tell(300);
  const int lineHeight = QFontMetrics(story->font()).height();
  for (int height : {301, 347, 419, 480, 533, 611}) {
    p.resize(900, height);
    QCoreApplication::processEvents();
    tell(7);  // the story goes on at this height
    const int top = story->verticalScrollBar()->value();
    const int bottom = top + story->viewport()->height();
    const QVector<int> tops = story->lineTops();
    ASSERT_GT(top, 0) << "the story does not overflow at height " << height;
    for (int i = 0; i < tops.size(); ++i)
      EXPECT_FALSE(tops[i] < top && tops[i] + lineHeight > top)
          << "line " << i << " is cut at the top: it starts at " << tops[i] << ", the view at " << top << " (height "
          << height << ")";
    EXPECT_LE(tops.back() + lineHeight, bottom) << "the newest line is not whole at height " << height;
  }
}
