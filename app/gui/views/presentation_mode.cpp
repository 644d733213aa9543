#include "gui/views/presentation_mode.h"

#include <initializer_list>

#include <QCheckBox>
#include <QFontMetrics>
#include <QCloseEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QShortcut>
#include <QSlider>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <iterator>

#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/views/playground_view.h"
#include "gui/widgets/token_text.h"
#include "hsm/mixer_kind.h"

namespace studio {
namespace {

// The typewriter's speeds, slowest first; 0 = as fast as the model makes them.
constexpr int kSpeeds[] = {3, 6, 12, 25, 50, 0};
constexpr int kDefaultSpeed = 2;  // 12 tokens/s: about reading speed aloud
constexpr double kDefaultTextSize = 30;

// A paper prompt's button: the whole prompt, wrapped to the width the button has (a fixed
// count of characters overflowed three to a row on a narrow screen; cut with "…" the room could
// not read the prompt), the button as tall as its lines.
class PromptButton : public QPushButton {
 public:
  explicit PromptButton(const QString& prompt) : prompt_(prompt) {
    setToolTip(prompt);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    setText(prompt);
  }

 protected:
  void resizeEvent(QResizeEvent* e) override {
    const QFontMetrics fm = fontMetrics();
    QStringList lines;
    QString line;
    for (const QString& word : prompt_.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
      const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
      if (!line.isEmpty() && fm.horizontalAdvance(longer) > width() - 24) {
        lines << line;
        line = word;
      } else {
        line = longer;
      }
    }
    if (!line.isEmpty()) lines << line;
    setText(lines.join(QLatin1Char('\n')));
    // Taller for more lines; the width does not depend on it, so the layout settles at once.
    setMinimumHeight(std::max(48, static_cast<int>(lines.size()) * fm.lineSpacing() + 20));
    QPushButton::resizeEvent(e);
  }

 private:
  QString prompt_;
};

}  // namespace

PresentationMode::PresentationMode(PlaygroundView* playground, QWidget* parent)
    : QWidget(parent, Qt::Window), playground_(playground) {
  setObjectName(QStringLiteral("presentation"));
  setWindowTitle(tr("HSM Studio · Presentation"));
  buildStory();
  const QFont readable = buildStatus();
  QHBoxLayout* bar = buildBar(readable);
  buildModelName();
  QGridLayout* prompts = buildPrompts(readable);
  layOut(bar, prompts, readable);
  startTypewriter();
  connectKeys();
  connectPlayground();
  updateButtons();
}

void PresentationMode::buildStory() {
  story_ = new TokenText;
  story_->setObjectName(QStringLiteral("presentation_story"));
  story_->setFrameShape(QFrame::NoFrame);
  story_->setTextSize(QSettings().value(QStringLiteral("presentation/text_size"), kDefaultTextSize).toDouble());
  story_->setTinted(QSettings().value(QStringLiteral("presentation/tint"), false).toBool());
  story_->setPlaceholderText(tr("Press “New story” or pick one of the paper's prompts below."));
  story_->setWholeLines(true);  // an overflowing story scrolls by whole lines, none cut at the top
  connect(story_, &TokenText::textSizeStep, this, [this](double step) { setTextSize(textSize() + step); });
  tint_ = new QCheckBox(tr("Tint by probability"));
  tint_->setObjectName(QStringLiteral("presentation_tint"));
  tint_->setToolTip(tr("Colour each word by how likely the model found it: red unlikely, green likely"));
  tint_->setChecked(story_->tinted());
  connect(tint_, &QCheckBox::toggled, this, &PresentationMode::setTinted);
}

QFont PresentationMode::buildStatus() {
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("presentation_status"));
  status_->setWordWrap(true);
  QFont readable = status_->font();  // read from the back of the room
  readable.setPointSizeF(readable.pointSizeF() * 1.25);
  status_->setFont(readable);
  return readable;
}

void PresentationMode::buildNewStoryButton() {
  newStory_ = new QPushButton(tr("New story"));
  newStory_->setObjectName(QStringLiteral("new_story"));
  newStory_->setToolTip(tr("A new story from the Playground's prompt with a fresh random seed (Space or N)"));
  QFont big = newStory_->font();  // the bar's large font (the model's name too)
  big.setPointSizeF(big.pointSizeF() * 1.4);
  big.setBold(true);
  newStory_->setFont(big);
  newStory_->setMinimumHeight(48);
  // Never squeezed below its words on a narrow screen (the bar gives way around it).
  newStory_->setMinimumWidth(newStory_->sizeHint().width() + 16);
  connect(newStory_, &QPushButton::clicked, this, [this] { newStory(); });
}

void PresentationMode::buildSpeed() {
  speed_ = new QSlider(Qt::Horizontal);
  speed_->setObjectName(QStringLiteral("typewriter_speed"));
  speed_->setRange(0, static_cast<int>(std::size(kSpeeds)) - 1);
  speed_->setPageStep(1);
  speed_->setFixedWidth(140);
  speed_->setToolTip(tr("Typewriter speed: how fast the words appear"));
  speedLabel_ = new QLabel;
  speedLabel_->setObjectName(QStringLiteral("typewriter_speed_label"));
  connect(speed_, &QSlider::valueChanged, this, [this](int i) {
    speedLabel_->setText(kSpeeds[i] == 0 ? tr("instant") : tr("%1 tokens/s").arg(kSpeeds[i]));
    QSettings().setValue(QStringLiteral("presentation/speed"), i);
    if (kSpeeds[i] == 0) {
      while (!pending_.isEmpty()) showNext();
    } else {
      typewriter_->setInterval(1000 / kSpeeds[i]);
    }
  });
}

QHBoxLayout* PresentationMode::buildBar(const QFont& readable) {
  buildNewStoryButton();
  buildSpeed();
  auto* smaller = new QPushButton(tr("A−"));
  smaller->setToolTip(tr("Smaller text (Ctrl+minus, Ctrl+wheel)"));
  auto* larger = new QPushButton(tr("A+"));
  larger->setToolTip(tr("Larger text (Ctrl+plus, Ctrl+wheel)"));
  connect(smaller, &QPushButton::clicked, this, [this] { setTextSize(textSize() - 2); });
  connect(larger, &QPushButton::clicked, this, [this] { setTextSize(textSize() + 2); });
  bindTextSizeKeys(this, [this](double step) { setTextSize(textSize() + 2 * step); });
  auto* leaveButton = new QPushButton(tr("Leave (Esc)"));
  leaveButton->setObjectName(QStringLiteral("leave_presentation"));
  connect(leaveButton, &QPushButton::clicked, this, &PresentationMode::leave);
  auto* bar = new QHBoxLayout;
  bar->addWidget(newStory_);
  bar->addSpacing(16);
  bar->addWidget(smaller);
  bar->addWidget(larger);
  bar->addSpacing(16);
  bar->addWidget(tint_);
  bar->addSpacing(16);
  auto* speedName = new QLabel(tr("Speed"));
  bar->addWidget(speedName);
  bar->addWidget(speed_);
  bar->addWidget(speedLabel_);
  bar->addStretch(1);
  bar->addWidget(leaveButton);
  // Every control of the bar at the readable size too (issue 48: A−, A+, the tint, the speed and
  // Leave were the desktop's size at 1024x600), each as wide as its words need.
  for (QWidget* control : std::initializer_list<QWidget*>{smaller, larger, tint_, speedName, speedLabel_, leaveButton}) {
    control->setFont(readable);
    control->setMinimumHeight(40);
  }
  smaller->setFixedWidth(QFontMetrics(readable).horizontalAdvance(QStringLiteral("A−")) + 28);
  larger->setFixedWidth(QFontMetrics(readable).horizontalAdvance(QStringLiteral("A+")) + 28);
  tint_->setMinimumWidth(tint_->sizeHint().width());
  speedLabel_->setMinimumWidth(QFontMetrics(readable).horizontalAdvance(tr("%1 tokens/s").arg(50)) + 4);
  return bar;
}

void PresentationMode::buildModelName() {
  // Which model tells the story: its run, its model and its mixers, in the bar's font.
  model_ = new QLabel;
  model_->setObjectName(QStringLiteral("presentation_model"));
  model_->setFont(newStory_->font());
  model_->setWordWrap(true);
  modelNameBase_ = model_->font().pointSizeF();
  scaleModelName();
  model_->setToolTip(tr("Page Down / Page Up: the next / previous open model"));
}

QGridLayout* PresentationMode::buildPrompts(const QFont& readable) {
  // The paper's prompts (HSM Table 3) as big buttons, three to a row.
  auto* prompts = new QGridLayout;
  const QStringList paper = playground_->paperPrompts();
  for (int i = 0; i < paper.size(); ++i) {
    auto* button = new PromptButton(paper[i]);
    button->setObjectName(QStringLiteral("paper_prompt_%1").arg(i));
    button->setFont(readable);
    connect(button, &QPushButton::clicked, this, [this, prompt = paper[i]] { newStory(prompt); });
    prompts->addWidget(button, i / 3, i % 3);
    promptButtons_ << button;
  }

  return prompts;
}

void PresentationMode::layOut(QHBoxLayout* bar, QGridLayout* prompts, const QFont& readable) {
  auto* layout = new QVBoxLayout(this);
  // The window takes the screen's size, never a minimum of its layout's: a minimum that grows while
  // it waits for the window manager to make it full screen (the prompts' band, fitPromptBand: 380
  // to 401 px) resized the window to it, and Qt drops the full-screen state of a window it resizes
  // (issue 69: the first F11 under openbox at 1024x600 gave a 943x401 window in 5 of 9 fresh starts).
  layout->setSizeConstraint(QLayout::SetNoConstraint);
  layout->setContentsMargins(48, 24, 48, 24);
  layout->addLayout(bar);
  layout->addWidget(model_);
  layout->addWidget(story_, 1);
  // What the tint says, in the room's font, while the story is tinted (issue 69: no key).
  tintKey_ = new QLabel(tr("Each word's colour, how likely the model found it: "
                           "<span style='background:%1'>&nbsp;1%&nbsp;</span> <span style='background:%2'>&nbsp;10%&nbsp;</span> "
                           "<span style='background:%3'>&nbsp;30%&nbsp;</span> <span style='background:%4'>&nbsp;100%&nbsp;</span>")
                            .arg(TokenText::tint(0.01).name(), TokenText::tint(0.1).name(), TokenText::tint(0.3).name(),
                                 TokenText::tint(1.0).name()));
  tintKey_->setObjectName(QStringLiteral("presentation_tint_key"));
  tintKey_->setWordWrap(true);
  tintKey_->setFont(readable);
  tintKey_->setVisible(story_->tinted());
  layout->addWidget(tintKey_);
  layout->addWidget(status_);
  if (!promptButtons_.isEmpty()) layout->addWidget(new QLabel(tr("<b>The paper's prompts</b> (HSM Table 3)")));
  // The prompts scroll in a band of about two rows, so the story keeps most of the screen.
  auto* promptsBox = new QWidget;
  promptsBox->setLayout(prompts);
  auto* promptsScroll = prompts_ = new QScrollArea;
  promptsScroll->setObjectName(QStringLiteral("presentation_prompts"));
  promptsScroll->setWidget(promptsBox);
  promptsScroll->setWidgetResizable(true);
  promptsScroll->setFrameShape(QFrame::NoFrame);
  promptsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  promptsScroll->setMaximumHeight(QFontMetrics(readable).lineSpacing() * 7 + 40);
  promptGrid_ = prompts;
  promptBandMost_ = promptsScroll->maximumHeight();
  layout->addWidget(promptsScroll);
}

void PresentationMode::startTypewriter() {
  typewriter_ = new QTimer(this);
  connect(typewriter_, &QTimer::timeout, this, &PresentationMode::showNext);
  speed_->setValue(
      std::clamp(QSettings().value(QStringLiteral("presentation/speed"), kDefaultSpeed).toInt(), 0, speed_->maximum()));
  emit speed_->valueChanged(speed_->value());  // the label and the interval, also for the default
}

void PresentationMode::connectKeys() {
  for (const QKeySequence& key : {QKeySequence(Qt::Key_Space), QKeySequence(Qt::Key_N)}) {
    auto* s = new QShortcut(key, this);
    connect(s, &QShortcut::activated, this, [this] {
      if (newStory_->isEnabled()) newStory();
    });
  }
  // Another model without leaving (a presenter's clicker sends Page Down / Page Up).
  connect(new QShortcut(QKeySequence(Qt::Key_PageDown), this), &QShortcut::activated, this, [this] { switchModel(1); });
  connect(new QShortcut(QKeySequence(Qt::Key_PageUp), this), &QShortcut::activated, this, [this] { switchModel(-1); });
}

void PresentationMode::connectPlayground() {
  connect(playground_->runList(), &RunList::currentChanged, this, &PresentationMode::onModelChanged);
  connect(playground_->runList(), &RunList::infoChanged, this, [this] { showModel(); });
  showModel();

  connect(playground_, &PlaygroundView::tokenGenerated, this, &PresentationMode::onToken);
  connect(playground_, &PlaygroundView::columnFinished, this, &PresentationMode::onFinished);
  connect(playground_, &PlaygroundView::generationFinished, this, [this] {
    if (storyGeneration_)
      storyGeneration_ = false;
    else
      playgroundGenerated_ = true;  // the Playground's own generation, not a story
    // A failed or stopped generation ends without a result: the story is over all the same.
    if (telling_ && !generated_) {
      generated_ = true;
      endNote_ = playground_->lastError().isEmpty() ? tr("stopped") : playground_->lastError();
      finishIfDone();
    }
    // The model changed while a story was told: the new model's story now.
    if (storyForNewModel_ && presenting_) {
      storyForNewModel_ = false;
      QTimer::singleShot(0, this, [this] { newStory(); });
    }
  });
}

void PresentationMode::enter() {
  presenting_ = true;
  showModel();
  // The Playground generated since this story was told (three models compared, another prompt):
  // the old story is not what the room just saw (issue 69: an earlier seed's hsm_ab story came
  // back); this model tells a new one.
  if (playgroundGenerated_ && !storyRun_.isEmpty() && !telling_) {
    playgroundGenerated_ = false;
    story_->clearText();
    storyRun_.clear();
    newStory();
  }
  showFullScreen();
  raise();
  activateWindow();
  newStory_->setFocus();
  // A story of another model (the run was switched since) is not this model's: a new one.
  if (!storyRun_.isEmpty() && storyRun_ != currentRunDir()) onModelChanged();
}

QString PresentationMode::currentRunDir() const {
  const RunEntry* run = playground_->runList()->currentRun();
  return run ? run->dir : QString();
}

QString PresentationMode::modelText() const { return model_->text(); }

// The model's name is read from the back of the room as the story is (issue 69: ~13 px bold,
// and A+ left it so): three quarters of the story's size, never below the bar's large font.
void PresentationMode::scaleModelName() {
  QFont f = model_->font();
  f.setBold(true);
  f.setPointSizeF(std::max(modelNameBase_, story_->textSize() * 0.75));
  model_->setFont(f);
}

bool PresentationMode::tintKeyShown() const { return !tintKey_->isHidden(); }

double PresentationMode::modelNameSize() const { return model_->font().pointSizeF(); }

void PresentationMode::showModel() {
  const RunEntry* run = playground_->runList()->currentRun();
  if (!run) {
    model_->setText(tr("No model open"));
    return;
  }
  QStringList mixers;
  for (const hsm::LayerSpec& l : run->model.layers)
    if (hsm::is_mixer_id(l.mixer)) {
      const QString title = QString::fromUtf8(hsm::mixer_info(l.mixer).title);
      if (!mixers.contains(title)) mixers << title;
    }
  // The run's name, its model's where it differs (a bundled run "gpt" of model "gpt": once).
  const QString model = qstr(run->model.name);
  const QString name = model.isEmpty() || model == run->name() ? run->name() : tr("%1 · %2").arg(run->name(), model);
  model_->setText(tr("%1 · %2").arg(name, mixers.join(QStringLiteral(" + "))));
}

void PresentationMode::switchModel(int step) {
  RunList* runs = playground_->runList();
  const int n = runs->count();
  if (n < 2) return;
  // The next run that can tell a story (a task run reads no text).
  for (int i = 1; i < n; ++i) {
    const int row = ((runs->current() + step * i) % n + n) % n;
    if (runs->at(row).has_info && runs->at(row).task.empty()) {
      runs->setCurrent(row);
      return;
    }
  }
}

void PresentationMode::onModelChanged() {
  showModel();
  if (!presenting_ || storyRun_ == currentRunDir()) return;
  // The old model's story goes; the new model tells one (after the old one stops, if telling).
  typewriter_->stop();
  pending_.clear();
  story_->clearText();
  if (playground_->isGenerating()) {
    storyForNewModel_ = true;
    playground_->stop();
    return;
  }
  telling_ = false;
  newStory();
}

void PresentationMode::leave() {
  if (!presenting_) return;
  presenting_ = false;
  if (telling_ && !generated_) playground_->stop();
  typewriter_->stop();
  while (!pending_.isEmpty()) showNext();  // the story stays whole in the Playground's column too
  hide();
  emit left();
}

// The prompts' band as tall as the whole rows that fit in it (issue 69: at 1280x720 a second row
// showed cut through its middle): the rows' heights are the grid's once laid out.
void PresentationMode::fitPromptBand() {
  if (!promptGrid_ || promptGrid_->rowCount() == 0 || promptButtons_.isEmpty()) return;
  const QMargins margins = promptGrid_->contentsMargins();
  int band = 0;
  for (int r = 0; r < promptGrid_->rowCount(); ++r) {
    const QRect row = promptGrid_->cellRect(r, 0);
    if (!row.isValid()) break;
    // Below a row the next one starts after the spacing: the band ends at the row's bottom (and
    // its margin after the last row), so no edge of the next row shows.
    const int bottom = row.bottom() + 1 + (r + 1 == promptGrid_->rowCount() ? margins.bottom() : 0);
    if (r > 0 && bottom > promptBandMost_) break;
    band = bottom;
  }
  if (band <= 0) return;
  if (prompts_->height() != band) prompts_->setFixedHeight(band);
  const QRect first = promptGrid_->cellRect(0, 0);
  prompts_->verticalScrollBar()->setSingleStep(first.height() + promptGrid_->verticalSpacing());
}

void PresentationMode::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  // After the buttons have wrapped their prompts to their new width (their own resize events).
  QTimer::singleShot(0, this, [this] {
    fitPromptBand();
    QTimer::singleShot(0, this, &PresentationMode::fitPromptBand);
  });
}

// Esc and F11 leave from wherever the focus is: no child takes them, so they arrive here.
void PresentationMode::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Escape || e->key() == Qt::Key_F11) {
    leave();
    e->accept();
    return;
  }
  QWidget::keyPressEvent(e);
}

void PresentationMode::closeEvent(QCloseEvent* e) {
  leave();
  e->accept();
}

double PresentationMode::textSize() const { return story_->textSize(); }

void PresentationMode::setTextSize(double points) {
  story_->setTextSize(points);
  scaleModelName();
  QSettings().setValue(QStringLiteral("presentation/text_size"), story_->textSize());
}

void PresentationMode::setTinted(bool on) {
  story_->setTinted(on);
  tintKey_->setVisible(on);
  if (tint_->isChecked() != on) tint_->setChecked(on);
  QSettings().setValue(QStringLiteral("presentation/tint"), on);
}

void PresentationMode::setSpeed(int tokensPerSecond) {
  int best = 0;
  for (int i = 0; i < static_cast<int>(std::size(kSpeeds)); ++i)
    if (kSpeeds[i] == tokensPerSecond) best = i;
  speed_->setValue(best);
}

int PresentationMode::speed() const { return kSpeeds[speed_->value()]; }

bool PresentationMode::isTelling() const { return telling_ || !pending_.isEmpty(); }

QString PresentationMode::status() const { return status_->text(); }

bool PresentationMode::newStory(const QString& prompt) {
  lastError_.clear();
  if (playground_->isGenerating()) {
    lastError_ = tr("a story is still being generated");
    status_->setText(lastError_);
    return false;
  }
  const QString text = prompt.isNull() ? playground_->prompt() : prompt;
  storyRun_ = currentRunDir();
  typewriter_->stop();
  pending_.clear();
  story_->setPrompt(text);
  telling_ = true;
  generated_ = false;
  endNote_.clear();
  status_->setText(tr("Telling a story…"));
  storyGeneration_ = true;
  playgroundGenerated_ = false;
  if (!playground_->generateStory(text, kMinStoryTokens, kMaxStoryTokens)) {
    storyGeneration_ = false;
    telling_ = false;
    lastError_ = playground_->lastError();
    status_->setText(lastError_);
  }
  updateButtons();
  return lastError_.isEmpty();
}

void PresentationMode::onToken(int column, const hsm::GeneratedToken& token) {
  if (!telling_ || column != 0) return;
  pending_.enqueue(token);
  if (speed() == 0)
    showNext();
  else if (!typewriter_->isActive())
    typewriter_->start();
}

void PresentationMode::showNext() {
  if (!pending_.isEmpty()) story_->appendToken(pending_.dequeue());
  if (pending_.isEmpty()) {
    typewriter_->stop();
    finishIfDone();
  }
}

void PresentationMode::onFinished(int column, const hsm::GenerationResult& r) {
  if (!telling_ || column != 0) return;
  generated_ = true;
  endNote_ = tr("seed %1 · %2 tokens · %3")
                 .arg(r.seed)
                 .arg(r.tokens.size())
                 .arg(r.ended          ? tr("the model ended the story")
                      : r.sentence_end ? tr("ended at the end of a sentence")
                                       : tr("stopped at %1 tokens").arg(kMaxStoryTokens));
  finishIfDone();
}

void PresentationMode::finishIfDone() {
  if (!telling_ || !generated_ || !pending_.isEmpty()) return;
  telling_ = false;
  status_->setText(endNote_);
  updateButtons();
  emit storyFinished();
}

void PresentationMode::updateButtons() {
  newStory_->setEnabled(!telling_);
  for (QPushButton* b : promptButtons_) b->setEnabled(!telling_);
}

}  // namespace studio
