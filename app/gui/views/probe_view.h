#pragma once
// The Probe view (issue 22, docs/diagnostics.md §6): for a prompt, the logit lens
// as a layer × position grid of each stream's top next token tinted by its probability
// (hover: the top 5, the KL to the final layer, the rank of the actual next token); attention
// rollout as a heatmap with token labels and a layer slider, the kind of matrix stated; and
// importance by ablation as ranked bars, run off the GUI thread with progress and cancel.
// Every plot exports PNG/PDF/SVG and CSV. A run trained on a synthetic task is probed on one of
// its test examples (TaskExampleBar), its tokens by the task's labels and the answers marked.
#include <QMap>
#include <QWidget>

#include "gui/views/probe_state.h"
#include "gui/views/studio_view.h"
#include "hsm/probe.h"
#include "hsm/tasks.h"

class QComboBox;
class QCPBars;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;
class QTableWidget;

namespace studio {

class EngineHost;
class HeatmapPanel;
class NoticeBar;
class PlotPanel;
class RunList;
class TaskExampleBar;

// What a rollout through these matrices (one kind per layer) is a rollout of, in one sentence:
// the Probe view and the Playground's provenance say it beside what they show.
QString rollout_kind_text(const std::vector<hsm::MatrixKind>& kinds);

// What it holds and asks the engine is a ProbeState (probe_state.h); this is its drawing.
class ProbeView : public StudioView {
  Q_OBJECT
 public:
  ProbeView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  void setPrompt(const QString& prompt);
  QString prompt() const;
  // As the Probe button: the lens and rollout of the current run for the prompt. False when
  // nothing could start (reason in lastError()).
  bool runProbe();
  bool isProbing() const { return state_->isProbing(); }
  bool hasProbe() const { return state_->hasProbe(); }
  const hsm::Probe& probe() const { return state_->probe(); }
  // A task run's prompt: the test example probed, with the model's answers (task "" for a
  // corpus run), and the bar that chooses it (shown instead of the prompt box).
  const hsm::TaskPrompt& example() const { return state_->example(); }
  TaskExampleBar* exampleBar() const { return exampleBar_; }

  // The corpus whose validation split the ablation evaluates (default: the run's own).
  void setDataPath(const QString& path);
  void setMaxWindows(int windows);
  // As the ablation's Run button / Cancel button.
  bool runAblation();
  void cancelAblation();
  bool isAblating() const { return state_->isAblating(); }
  // The ablation shown: the current run's last one (kept per run while the studio runs).
  bool hasAblation() const { return state_->hasAblation(); }
  const hsm::AblationReport& ablation() const { return state_->ablation(); }
  // What the ablation panel says it shows ("Ablation of <run>: base loss …"; empty: none).
  QString ablationOf() const;
  QString lastError() const { return state_->lastError(); }
  // whatIfBanner(): while the current run has a what-if edit (the Weights view), the lens,
  // rollout and ablation are of the edited model.

  QTableWidget* lensTable() const { return lensTable_; }
  // What hovering a lens cell shows (row 0 = after the embedding, column = position).
  QString lensTooltip(int row, int column) const;
  HeatmapPanel* rolloutPanel() const { return rollout_; }
  // The rollout's axes keep this many pixels of height (its rows apart; the view scrolls).
  static constexpr int kRolloutAxesHeight = 120;
  PlotPanel* ablationPanel() const { return ablationPlot_; }
  QProgressBar* ablationProgress() const { return progress_; }
  void setRolloutLayer(int layer);
  int rolloutLayer() const;
  QString rolloutKindText() const;

  // Writes the lens, rollout and ablation plots (PNG, PDF, SVG) and their numbers (CSV) into
  // a folder; returns the files written.
  QStringList exportAll(const QString& folder, QString* error = nullptr);

 signals:
  void probeFinished();
  void ablationFinished();

 protected:
  void leaveRun() override;
  void showRun() override;

 private:
  void build();
  QHBoxLayout* buildPromptBar();  // the prompt (or a task's example), Probe, Export all
  QWidget* buildLens();
  QWidget* buildRollout();
  void buildAblationPlot();
  void buildAblationControls();  // the corpus, the windows, Run / Cancel and the progress
  QWidget* buildAblation();
  void connectSignals();
  void connectState();  // what the view shows when the state says something arrived
  void showProbe();
  void showProbeFailure(const QString& message, bool reprobe);
  void showAblation(const QString& runDir);
  void showAblationFailure(const QString& message, bool cancelled);
  void showPromptKind();  // the prompt box for a corpus run, the example bar for a task run
  QStringList tokenLabels(bool marked) const;
  void drawLens();
  void drawRollout();
  void drawAblation();
  QString lensCsv() const;
  QString exportLens(const QString& path);
  void exportDialog();
  void updateButtons();

  ProbeState* state_;
  QLabel* promptLabel_;
  QLineEdit* promptEdit_;
  TaskExampleBar* exampleBar_;
  QPushButton* probeButton_;
  QPushButton* exportButton_;
  QPushButton* lensExport_;
  QPushButton* browse_;
  QLabel* status_;
  QLabel* ablationOf_;
  QTableWidget* lensTable_;
  HeatmapPanel* rollout_;
  QSlider* layerSlider_;
  QLabel* layerLabel_;
  QLabel* rolloutKind_;
  PlotPanel* ablationPlot_;
  QCPBars* bars_ = nullptr;
  QLineEdit* dataEdit_;
  QComboBox* windowsBox_;
  QSpinBox* maxWindows_;
  QPushButton* ablateButton_;
  QPushButton* cancelButton_;
  QProgressBar* progress_;
};

}  // namespace studio
