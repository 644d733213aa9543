#pragma once
// The Playground (SPEC §6.5): a prompt, the sampling settings, Generate / Stop, text that
// streams in token by token tinted by its probability (alternatives on hover), the
// paper's Table 3 prompts one click away, and a compare mode that runs the same prompt
// and seed on every open model side by side.
#include <QMap>
#include <QWidget>

#include "hsm/session.h"

class QCheckBox;
class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace studio {

class EngineHost;
class FieldError;
class RunList;
class TokenText;

class PlaygroundView : public QWidget {
  Q_OBJECT
 public:
  PlaygroundView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  void setPrompt(const QString& prompt);
  QString prompt() const;
  void setSeed(quint64 seed);       // also turns the random toggle off
  void setRandomSeed(bool random);
  void setCompare(bool on);
  // The settings as the form holds them; false (with the reason shown) when a field is bad.
  bool options(hsm::GenerateOptions& out);
  // As the Generate button. Returns false when nothing could start (reason in lastError()).
  bool generate();
  void stop();
  bool isGenerating() const { return !queue_.isEmpty() || activeRequest_ != 0; }

  int columnCount() const { return static_cast<int>(columns_.size()); }
  TokenText* output(int column) const;
  QString lastError() const { return lastError_; }
  QStringList paperPrompts() const { return paperPrompts_; }

  // Provenance (issue 22): what generated tokens `tokens` of a column drew on, the sum of their
  // rows of the attention rollout (hsm/probe.h), shown as a tint over the text the model saw.
  // Clicking a generated token does this for it, shift-clicking adds it. False when nothing
  // could start (reason in lastError()); provenanceFinished() when it is shown.
  bool showProvenance(int column, const QVector<int>& tokens);
  bool isProbing() const;
  // The last probe a column's provenance was read from, and what its status line says of it.
  const hsm::Probe& provenanceProbe(int column) const { return columns_[column].probe; }
  QString provenanceNote(int column) const { return columns_[column].provenanceNote; }

 signals:
  void generationFinished();
  void provenanceFinished();

 private:
  struct Column {
    QString runDir;
    QWidget* box = nullptr;
    QLabel* title = nullptr;
    TokenText* text = nullptr;
    QLabel* status = nullptr;
    QVector<int> selected;  // generated tokens whose provenance is shown (or asked for)
    int probeRequest = 0;
    hsm::Probe probe;
    QString provenanceNote;
  };
  void loadPaperPrompts();
  void rebuildColumns(const QStringList& runDirs);
  void sendNext();
  void onToken(int request, const hsm::GeneratedToken& token);
  void onGenerated(int request, const hsm::GenerationResult& result);
  void onFailed(int request, const QString& message);
  void onProbed(int request, const hsm::Probe& probe);
  void updateButtons();

  RunList* runs_;
  EngineHost* engine_;
  QPlainTextEdit* promptEdit_;
  QListWidget* paperList_;
  QDoubleSpinBox* temperature_;
  QDoubleSpinBox* topP_;
  QSpinBox* topK_;
  QLineEdit* seedEdit_;
  FieldError* seedError_;
  QCheckBox* randomSeed_;
  QSpinBox* maxTokens_;
  QCheckBox* compare_;
  QPushButton* generateButton_;
  QPushButton* stopButton_;
  QLabel* hint_;
  QHBoxLayout* columnsLayout_;
  QVector<Column> columns_;
  QStringList paperPrompts_;
  // Compare mode runs the models one after another: a queue of column indices.
  QVector<int> queue_;
  int activeRequest_ = 0;
  int activeColumn_ = -1;
  hsm::GenerateOptions pendingOptions_;
  QString pendingPrompt_;
  bool stopping_ = false;
  QString lastError_;
};

}  // namespace studio
