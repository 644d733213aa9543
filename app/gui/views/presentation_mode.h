#pragma once
// Presentation mode (issue 36; View › Presentation, F11): the Playground's story full screen for
// a room. Large text whose size is kept (Ctrl+plus/minus, Ctrl+wheel), the probability tint
// optional, "New story" with a fresh random seed that ends at the end of a sentence (or of the
// story) instead of mid-sentence, a typewriter speed, the paper's prompts as big buttons; Esc
// leaves. It generates through the Playground's own path (PlaygroundView::generateStory), on
// the Playground's current run.
#include <QQueue>
#include <QWidget>

#include "hsm/generator.h"

class QCheckBox;
class QFont;
class QHBoxLayout;
class QGridLayout;
class QScrollArea;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;

namespace studio {

class PlaygroundView;
class TokenText;

class PresentationMode : public QWidget {
  Q_OBJECT
 public:
  // A story is at least this many tokens, and stops at the next sentence end after them.
  static constexpr int kMinStoryTokens = 40;
  static constexpr int kMaxStoryTokens = 400;

  explicit PresentationMode(PlaygroundView* playground, QWidget* parent = nullptr);

  void enter();  // full screen, in front
  void leave();  // stops a story being told, back to the window
  bool isPresenting() const { return presenting_; }

  // A new story from `prompt` (the Playground's prompt when null); false when none could start
  // (the reason in lastError()).
  bool newStory(const QString& prompt = QString());
  bool isTelling() const;  // generating, or the typewriter still has tokens to show

  TokenText* story() const { return story_; }
  QString status() const;
  QString lastError() const { return lastError_; }
  double textSize() const;
  void setTextSize(double points);
  void setTinted(bool on);
  bool tintKeyShown() const;  // the tint's colour key, shown while the story is tinted
  // Typewriter speed in tokens per second; 0 = as fast as the model makes them.
  void setSpeed(int tokensPerSecond);
  int speed() const;
  QList<QPushButton*> promptButtons() const { return promptButtons_; }
  QScrollArea* promptBand() const { return prompts_; }
  // The model on screen: "run · model · its mixers"; Page Down / Page Up switch to the next /
  // previous open run (the Run selector follows), and the new model tells a new story.
  QString modelText() const;
  double modelNameSize() const;  // points: it grows with the story's text (A+)
  void switchModel(int step);
  QString storyRun() const { return storyRun_; }  // whose story is shown (empty: none yet)

 signals:
  void left();
  void storyFinished();

 protected:
  void keyPressEvent(QKeyEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  // The constructor's steps, in order.
  void buildStory();
  QFont buildStatus();                             // the status line; returns the room's readable font
  void buildNewStoryButton();                      // in the bar's large font
  void buildSpeed();                               // the typewriter's speed and its label
  QHBoxLayout* buildBar(const QFont& readable);    // New story, A− A+, the tint, the speed, Leave
  void buildModelName();                           // which model tells the story
  QGridLayout* buildPrompts(const QFont& readable);  // the paper's prompts as big buttons
  void layOut(QHBoxLayout* bar, QGridLayout* prompts, const QFont& readable);
  void startTypewriter();                          // the kept speed
  void connectKeys();                              // Space, N, Page Down, Page Up
  void connectPlayground();                        // the run list's and the Playground's signals
  void onToken(int column, const hsm::GeneratedToken& token);
  void onFinished(int column, const hsm::GenerationResult& result);
  void showNext();
  void finishIfDone();
  void updateButtons();
  void showModel();
  void scaleModelName();
  void fitPromptBand();
  void onModelChanged();
  QString currentRunDir() const;

  PlaygroundView* playground_;
  TokenText* story_;
  QLabel* status_;
  QLabel* model_;
  QLabel* tintKey_;
  QScrollArea* prompts_ = nullptr;     // the paper's prompts' band
  QGridLayout* promptGrid_ = nullptr;  // its rows of buttons
  int promptBandMost_ = 0;             // the band's greatest height
  QString storyRun_;
  double modelNameBase_ = 0;          // the model name's smallest size (the bar's large font)
  bool playgroundGenerated_ = false;  // the Playground generated since the story was told
  bool storyGeneration_ = false;      // the generation running is a story's
  bool storyForNewModel_ = false;  // a new story once the stopped one has ended
  QPushButton* newStory_;
  QCheckBox* tint_;
  QSlider* speed_;
  QLabel* speedLabel_;
  QTimer* typewriter_;
  QList<QPushButton*> promptButtons_;
  QQueue<hsm::GeneratedToken> pending_;
  bool presenting_ = false;
  bool telling_ = false;    // our story is being generated
  bool generated_ = false;  // ... and the model has finished it
  QString endNote_;
  QString lastError_;
};

}  // namespace studio
