#pragma once
// The Training view (SPEC §6.2): corpus, tokenizer, model, hyper-parameters with the
// paper's defaults (every field checked, a refusal shown next to the field); start /
// pause / resume / stop; progress with step, epoch and ETA; the engine's log; live curves
// of the current run with the other open runs overlaid; accuracy against loss (HSM Fig. 8).
#include <QElapsedTimer>
#include <QMap>
#include <QWidget>

#include "hsm/trainer.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QRadioButton;
class QSlider;
class QToolButton;

namespace studio {

class EngineHost;
class FieldError;
class PlotPanel;
class RunList;

class TrainingView : public QWidget {
  Q_OBJECT
 public:
  TrainingView(RunList* runs, EngineHost* engine, QWidget* parent = nullptr);

  // Form access for the start page, the menu and the smoke mode.
  void setCorpus(const QString& path);
  // A preset name or a config file path; returns false (with the reason shown) if unknown.
  bool setModel(const QString& presetOrConfig);
  void setField(const QString& name, const QString& value);  // e.g. "steps", "batch_size"
  QLineEdit* field(const QString& name) const { return fields_.value(name); }
  FieldError* fieldError(const QString& name) const { return errors_.value(name); }

  // Checks every field and builds the run; on a refusal shows the messages and returns false.
  bool buildSpec(hsm::RunSpec& spec);
  // As the Start button: returns false when a field was refused or training is running.
  bool start();
  bool continueCurrentRun();

  QPushButton* startButton() const { return startButton_; }
  QPushButton* pauseButton() const { return pauseButton_; }
  QPushButton* stopButton() const { return stopButton_; }
  PlotPanel* lossPlot() const { return lossPlot_; }
  QList<PlotPanel*> plots() const;
  QString lastError() const { return lastError_; }

  // Exponential moving average with the bias correction of Adam / TensorBoard, so the
  // first points are not pulled toward zero. weight 0 = raw.
  static QVector<double> smooth(const QVector<double>& y, double weight);

 signals:
  void trainingFailed(const QString& message);

 private:
  void buildForm(QWidget* form);
  QLineEdit* addField(class QFormLayout* layout, const QString& name, const QString& label, const QString& value,
                      const QString& tip);
  void chooseCorpus(bool folder);
  void chooseConfigFile();
  void updateModelSummary();
  void suggestRunDir();
  void updateButtons();
  void onProgress(const QString& stage, double fraction);
  void onMetric(const QString& runDir, const hsm::MetricRecord& m);
  void onFinished(const hsm::TrainSummary& s);
  void onFailed(const QString& runDir, const QString& message);
  void appendLog(const QString& line);
  void rebuildPlots();
  void clearErrors();

  RunList* runs_;
  EngineHost* engine_;
  QMap<QString, QLineEdit*> fields_;
  QMap<QString, FieldError*> errors_;
  QLineEdit* corpusEdit_;
  QRadioButton* newTokenizer_;
  QRadioButton* reuseTokenizer_;
  QLineEdit* tokenizerEdit_;
  QComboBox* presetBox_;
  QLabel* modelSummary_;
  QCheckBox* cosineBox_;
  QComboBox* windowsBox_;
  QCheckBox* keepBestBox_;
  QComboBox* deviceBox_;
  QLineEdit* runDirEdit_;
  bool runDirEdited_ = false;
  QWidget* actions_;
  QPushButton* startButton_;
  QPushButton* pauseButton_;
  QPushButton* stopButton_;
  QPushButton* continueButton_;
  QLabel* stageLabel_;
  QProgressBar* dataProgress_;
  QProgressBar* trainProgress_;
  QToolButton* logToggle_;
  QPlainTextEdit* log_;
  QSlider* smoothing_;
  QLabel* smoothingLabel_;
  QComboBox* xAxis_;
  QCheckBox* overlay_;
  PlotPanel* lossPlot_;
  PlotPanel* accuracyPlot_;
  PlotPanel* speedPlot_;
  PlotPanel* lrPlot_;
  PlotPanel* scatterPlot_;
  QElapsedTimer runClock_;
  int64_t firstStep_ = -1;
  QString lastError_;
  bool replotPending_ = false;
};

}  // namespace studio
