#pragma once
// The Training view's form (README.md, "The studio"): corpus, tokenizer, model, the training settings with
// the paper's defaults (their fields made from hsm/settings.h's declarations) and the run
// folder. Building a run checks every field and shows each refusal next to its field.
#include <QMap>
#include <QWidget>

#include "hsm/trainer.h"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QRadioButton;

namespace studio {

class FieldError;

class TrainingForm : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingForm(QWidget* parent = nullptr);

  void setCorpus(const QString& path);
  QString corpus() const;  // as typed, trimmed
  // A preset name or a config file path; returns false (with the reason shown) if unknown.
  bool setModel(const QString& presetOrConfig);
  void setField(const QString& name, const QString& value);  // e.g. "steps", "batch_size"
  QString fieldText(const QString& name) const;              // as setField takes it ("true", "packed", "0.002")
  QLineEdit* field(const QString& name) const { return fields_.value(name); }
  FieldError* fieldError(const QString& name) const { return errors_.value(name); }

  // Checks every field and builds the run; on a refusal shows the messages beside the
  // fields, puts the first as "field: message" in *firstRefusal and returns false.
  bool buildSpec(hsm::RunSpec& spec, QString* firstRefusal);
  void clearErrors();
  // A run was started from the form: the next one gets a fresh folder.
  void runStarted();
  // The form as `run` was trained (issue 69: a bundled run that trained 460 steps of 32 showed
  // the paper's defaults beside its curves): its model, its training settings, its tokenizer
  // and corpus where they are on this machine; the device, the threads and a fresh run folder
  // stay this machine's. A new run started from it is the same run again, to change at will.
  void showRun(const hsm::RunInfo& run, const QString& name);

 private:
  // The constructor's groups, top to bottom.
  QGroupBox* buildDataGroup();      // the corpus and the tokenizer
  QGroupBox* buildModelGroup();     // the preset or a config file, dropout
  QGroupBox* buildTrainingGroup();  // the training settings (hsm/settings.h), the device
  void addWindowsAndBest(QFormLayout* trainForm);
  QGroupBox* buildRunFolderGroup();
  QLineEdit* addField(QFormLayout* layout, const QString& name, const QString& label, const QString& value,
                      const QString& tip);
  void chooseCorpus(bool folder);
  void chooseConfigFile();
  void updateModelSummary();
  // A preset that carries training settings of its own (hsm::preset_train_settings: the
  // starter) fills the form with them when chosen; another preset's choice puts the fields it
  // filled back to the paper's defaults, unless they were edited since.
  void fillPresetTraining();
  void suggestRunDir();
  void presetChosen();  // the preset box's choice: the summary, the preset's settings, a fresh folder

  QMap<QString, QLineEdit*> fields_;
  QMap<QString, FieldError*> errors_;
  QLineEdit* corpusEdit_;
  QRadioButton* newTokenizer_;
  QRadioButton* reuseTokenizer_;
  QLineEdit* tokenizerEdit_;
  QComboBox* presetBox_;
  QLabel* modelSummary_;
  QGroupBox* trainingBox_;
  QCheckBox* cosineBox_;
  QComboBox* windowsBox_;
  QCheckBox* keepBestBox_;
  QComboBox* deviceBox_;
  QLineEdit* runDirEdit_;
  bool runDirEdited_ = false;
  QMap<QString, QString> presetFilled_;  // field -> the value fillPresetTraining() or showRun() put there
  QString runTokenizer_;                 // the tokenizer showRun() put in its field
};

}  // namespace studio
