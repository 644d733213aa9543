#pragma once
// What the Playground (playground_view.h) holds and asks the engine, apart from its widgets
// (docs/architecture.md, "Add a view": state and widgets): the generation under way (the
// columns' runs, one after another, the prompt and settings they share), and each column's
// last provenance probe. It draws nothing: the view draws what it holds when it says so.
#include <QObject>
#include <QPair>
#include <QString>
#include <QVector>

#include "gui/engine/executor.h"
#include "hsm/generator.h"
#include "hsm/probe.h"

namespace studio {

class EngineHost;

class PlaygroundState : public QObject {
  Q_OBJECT
 public:
  explicit PlaygroundState(EngineHost* engine, QObject* parent = nullptr);

  struct Column {
    QString runDir;
    bool trained = false;  // the trained model of a run with a what-if edit
    bool probing = false;  // its provenance is being read
    hsm::Probe probe;      // the last probe its provenance was read from
  };

  // Generates `prompt` with `options` on each (run folder, trained) in turn, one column each:
  // columnStarted, tokens, columnGenerated or columnFailed per column, then finished.
  void start(const QVector<QPair<QString, bool>>& runs, const QString& prompt, const hsm::GenerateOptions& options);
  void stop();  // the column under way is cancelled, the ones after it not run
  bool isGenerating() const { return !queue_.isEmpty() || activeColumn_ >= 0; }
  bool isStopping() const { return stopping_; }
  const QString& prompt() const { return prompt_; }

  int columnCount() const { return static_cast<int>(columns_.size()); }
  const Column& column(int i) const { return columns_[i]; }
  bool isProbing() const;
  // The provenance of column `column`'s text `tokenIds` (the generated tokens up to the newest
  // chosen one): probed or probeFailed; dropped when another generation started meanwhile.
  void startProvenance(int column, const QVector<int>& tokenIds);

 signals:
  void columnStarted(int column);
  void tokenGenerated(int column, const hsm::GeneratedToken& token);
  void columnGenerated(int column, const hsm::GenerationResult& result);
  void columnFailed(int column, const QString& message);
  void finished(const QVector<int>& notRun);  // the columns a stop left out
  void probed(int column);
  void probeFailed(int column, const QString& message);

 private:
  void sendNext();

  EngineHost* engine_;
  QVector<Column> columns_;
  int generation_ = 0;  // counts start(): a probe of an earlier generation's column is dropped
  // The columns run one after another: a queue of column indices.
  QVector<int> queue_;
  Reply<hsm::GenerationResult> active_;  // the generation under way
  int activeColumn_ = -1;
  hsm::GenerateOptions options_;
  QString prompt_;
  bool stopping_ = false;
};

}  // namespace studio
