#include "gui/views/training_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>
#include <cmath>
#include <functional>

#include "gui/engine_types.h"
#include "gui/widgets/glossary.h"
#include "gui/studio_settings.h"
#include "gui/widgets/field_error.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "hsm/settings.h"

namespace studio {

namespace {

QString default_runs_root() { return QDir::home().filePath(QStringLiteral("hsm-runs")); }

}  // namespace

TrainingForm::TrainingForm(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->addWidget(buildDataGroup());
  v->addWidget(buildModelGroup());
  v->addWidget(buildTrainingGroup());
  v->addWidget(buildRunFolderGroup());
  v->addStretch(1);
  const int hsmAb = presetBox_->findData(QStringLiteral("hsm_ab"));
  if (hsmAb >= 0) presetBox_->setCurrentIndex(hsmAb);
  updateModelSummary();
  suggestRunDir();
}

QGroupBox* TrainingForm::buildDataGroup() {
  auto* data = new QGroupBox(tr("Data"));
  auto* dataForm = new QFormLayout(data);
  corpusEdit_ = addField(dataForm, QStringLiteral("corpus"), tr("Corpus"), StudioSettings::lastCorpus(),
                         tr("A TinyStories .txt (stories between <|endoftext|> lines), .json/.jsonl with a "
                            "\"story\" field, a plain text file, or a folder of them"));
  auto* corpusButtons = new QHBoxLayout;
  auto* fileButton = new QPushButton(tr("File…"));
  auto* folderButton = new QPushButton(tr("Folder…"));
  corpusButtons->addWidget(fileButton);
  corpusButtons->addWidget(folderButton);
  corpusButtons->addStretch(1);
  dataForm->addRow(QString(), corpusButtons);
  connect(fileButton, &QPushButton::clicked, this, [this] { chooseCorpus(false); });
  connect(folderButton, &QPushButton::clicked, this, [this] { chooseCorpus(true); });
  newTokenizer_ = new QRadioButton(tr("Train a new tokenizer"));
  newTokenizer_->setChecked(true);
  reuseTokenizer_ = new QRadioButton(tr("Reuse a tokenizer.model"));
  dataForm->addRow(newTokenizer_);
  addField(dataForm, QStringLiteral("vocab"), tr("Vocabulary"), QStringLiteral("5000"),
           tr("Tokens of the new sentencepiece BPE tokenizer (the paper: 5000)"));
  dataForm->addRow(reuseTokenizer_);
  tokenizerEdit_ = addField(dataForm, QStringLiteral("tokenizer"), tr("Tokenizer"), QString(),
                            tr("An existing tokenizer.model, e.g. from another run folder"));
  tokenizerEdit_->setEnabled(false);
  connect(reuseTokenizer_, &QRadioButton::toggled, this, [this](bool on) {
    tokenizerEdit_->setEnabled(on);
    fields_[QStringLiteral("vocab")]->setEnabled(!on);
  });
  return data;
}

QGroupBox* TrainingForm::buildModelGroup() {
  auto* model = new QGroupBox(tr("Model"));
  auto* modelForm = new QFormLayout(model);
  presetBox_ = new QComboBox;
  presetBox_->setObjectName(QStringLiteral("preset"));
  for (const std::string& name : hsm::preset_names()) presetBox_->addItem(qstr(name), qstr(name));
  help::setPresetToolTips(presetBox_);
  auto* configButton = new QPushButton(tr("Config file…"));
  auto* presetRow = new QHBoxLayout;
  presetRow->addWidget(presetBox_, 1);
  presetRow->addWidget(configButton);
  modelForm->addRow(tr("Preset"), presetRow);
  auto* presetError = new FieldError(QStringLiteral("preset"));
  errors_.insert(QStringLiteral("preset"), presetError);
  modelForm->addRow(QString(), presetError);
  modelSummary_ = new QLabel;
  modelSummary_->setWordWrap(true);
  modelSummary_->setObjectName(QStringLiteral("model_summary"));
  modelForm->addRow(modelSummary_);
  addField(modelForm, QStringLiteral("dropout"), tr("Dropout"), QString(), tr("Dropout of the model (the paper: 0.1)"));
  connect(presetBox_, &QComboBox::currentIndexChanged, this, &TrainingForm::presetChosen);
  connect(configButton, &QPushButton::clicked, this, &TrainingForm::chooseConfigFile);
  return model;
}

QGroupBox* TrainingForm::buildTrainingGroup() {
  const hsm::TrainSettings d;  // the paper's defaults (HSM §7)
  auto* training = trainingBox_ = new QGroupBox(tr("Training (paper defaults)"));
  auto* trainForm = new QFormLayout(training);
  // The fields of the training settings come from their declarations (hsm/settings.h): the
  // label, the help and the check are those of `hsm train` and of the trainer.
  auto setting = [&](const char* key) {
    const hsm::SettingSpec& spec = hsm::train_setting(key);
    return addField(trainForm, QString::fromLatin1(spec.key), tr(spec.label), qstr(spec.get(d)), tr(spec.help));
  };
  for (const char* key : {"steps", "epochs", "batch_size", "lr", "warmup_steps"}) setting(key);
  cosineBox_ = new QCheckBox(tr("Cosine decay to 0 over the run"));
  cosineBox_->setObjectName(QStringLiteral("cosine"));
  cosineBox_->setToolTip(tr(hsm::train_setting("cosine").help));
  trainForm->addRow(QString(), cosineBox_);
  for (const char* key : {"weight_decay", "grad_clip", "eval_every", "checkpoint_every"}) setting(key);
  addWindowsAndBest(trainForm);
  setting("seed");
  // What the Diagnostics view's timeline draws (diagnostics.jsonl): diagnosed at every validation;
  // what the Trace view's step slider draws (traces.jsonl) and the models kept to open at a step.
  setting("probe_text");
  setting("trace_text");
  setting("snapshot_every");
  deviceBox_ = new QComboBox;
  deviceBox_->setObjectName(QStringLiteral("device"));
  deviceBox_->addItems({QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda")});
  deviceBox_->setCurrentText(StudioSettings::device());
  trainForm->addRow(tr("Device"), deviceBox_);
  setting("threads")->setText(QString::number(StudioSettings::threads()));
  return training;
}

void TrainingForm::addWindowsAndBest(QFormLayout* trainForm) {
  windowsBox_ = new QComboBox;
  windowsBox_->setObjectName(QStringLiteral("windows"));
  windowsBox_->addItem(tr("packed (across stories)"), QStringLiteral("packed"));
  windowsBox_->addItem(tr("story starts"), QStringLiteral("story_start"));
  windowsBox_->setToolTip(tr("packed: windows every context tokens of the joined corpus (GPT-2 style); story starts: "
                             "every window begins at a story's first token and none mixes two stories"));
  trainForm->addRow(tr("Windows"), windowsBox_);
  keepBestBox_ = new QCheckBox(tr("Keep the best validation weights"));
  keepBestBox_->setObjectName(QStringLiteral("keep_best"));
  keepBestBox_->setToolTip(tr("Also write best.safetensors at the lowest validation loss, so a run that starts to "
                              "over-fit still has its best weights"));
  trainForm->addRow(QString(), keepBestBox_);
}

QGroupBox* TrainingForm::buildRunFolderGroup() {
  auto* output = new QGroupBox(tr("Run folder"));
  auto* outForm = new QFormLayout(output);
  runDirEdit_ = addField(outForm, QStringLiteral("run_dir"), tr("Folder"), QString(),
                         tr("Where weights, config.json, tokenizer.model and metrics.jsonl go"));
  connect(runDirEdit_, &QLineEdit::textEdited, this, [this] { runDirEdited_ = true; });
  return output;
}

QLineEdit* TrainingForm::addField(QFormLayout* layout, const QString& name, const QString& label, const QString& value,
                                  const QString& tip) {
  auto* edit = new QLineEdit(value);
  edit->setObjectName(name);
  edit->setToolTip(tip);
  auto* error = new FieldError(name);
  auto* box = new QWidget;
  auto* v = new QVBoxLayout(box);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(1);
  v->addWidget(edit);
  v->addWidget(error);
  layout->addRow(label, box);
  fields_.insert(name, edit);
  errors_.insert(name, error);
  connect(edit, &QLineEdit::textEdited, error, &FieldError::clearError);
  return edit;
}

void TrainingForm::chooseCorpus(bool folder) {
  const QString start = StudioSettings::dialogFolder(corpusEdit_->text());  // not the bundled starter corpus's
  const QString path = folder ? QFileDialog::getExistingDirectory(this, tr("Corpus folder"), start)
                              : QFileDialog::getOpenFileName(this, tr("Corpus file"), start,
                                                             tr("Text or JSON (*.txt *.json *.jsonl);;All files (*)"));
  if (path.isEmpty()) return;
  StudioSettings::setDialogFolder(path);
  setCorpus(path);
}

void TrainingForm::setCorpus(const QString& path) {
  corpusEdit_->setText(path);
  errors_[QStringLiteral("corpus")]->clearError();
}

void TrainingForm::chooseConfigFile() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Model config"), StudioSettings::dialogFolder(), tr("JSON (*.json)"));
  if (path.isEmpty()) return;
  StudioSettings::setDialogFolder(path);
  setModel(path);
}

bool TrainingForm::setModel(const QString& presetOrConfig) {
  int i = presetBox_->findData(presetOrConfig);
  if (i < 0) {
    try {
      const hsm::ModelConfig c = hsm::load_preset_or_config(sstr(presetOrConfig));
      presetBox_->addItem(QStringLiteral("%1 (%2)").arg(qstr(c.name), QFileInfo(presetOrConfig).fileName()),
                          presetOrConfig);
      i = presetBox_->count() - 1;
    } catch (const std::exception& e) {
      errors_[QStringLiteral("preset")]->showError(QString::fromUtf8(e.what()));
      return false;
    }
  }
  // The preset chosen again (the Start page's "Set up training" on the current run's preset): a
  // new design all the same, from the paper's defaults and the preset's own settings.
  if (i == presetBox_->currentIndex()) presetChosen();
  presetBox_->setCurrentIndex(i);
  return true;
}

void TrainingForm::presetChosen() {
  trainingBox_->setTitle(tr("Training (paper defaults)"));
  updateModelSummary();
  fillPresetTraining();  // a run's values shown (showRun), unless edited since, go back to the defaults too
  if (!runTokenizer_.isEmpty() && tokenizerEdit_->text() == runTokenizer_) setField(QStringLiteral("tokenizer"), QString());
  runTokenizer_.clear();
  suggestRunDir();
}

void TrainingForm::updateModelSummary() {
  errors_[QStringLiteral("preset")]->clearError();
  try {
    const hsm::ModelConfig c = hsm::load_preset_or_config(sstr(presetBox_->currentData().toString()));
    const int64_t params = hsm::count_params(c).total();
    QStringList mixers;
    for (const auto& l : c.layers) mixers << qstr(l.mixer);
    modelSummary_->setText(tr("%1 parameters · d %2 · context %3 · %4 layers: %5")
                               .arg(QLocale().toString(static_cast<qlonglong>(params)))
                               .arg(c.d_model)
                               .arg(c.context)
                               .arg(c.layers.size())
                               .arg(mixers.join(QStringLiteral(", "))));
    modelSummary_->setToolTip(qstr(c.description));
    fields_[QStringLiteral("dropout")]->setText(QString::number(c.dropout));
    fields_[QStringLiteral("vocab")]->setText(QString::number(c.vocab_size));
  } catch (const std::exception& e) {
    modelSummary_->clear();
    errors_[QStringLiteral("preset")]->showError(QString::fromUtf8(e.what()));
  }
}

void TrainingForm::fillPresetTraining() {
  const hsm::TrainSettings defaults;
  // What the last preset filled goes back to the paper's defaults, unless edited since.
  for (auto it = presetFilled_.cbegin(); it != presetFilled_.cend(); ++it)
    if (fieldText(it.key()) == it.value()) setField(it.key(), qstr(hsm::train_setting(sstr(it.key())).get(defaults)));
  presetFilled_.clear();
  hsm::TrainSettings own;
  try {
    own = hsm::preset_train_settings(sstr(presetBox_->currentData().toString()));
  } catch (const std::exception&) {
    return;  // a config file (no training settings of its own), or a broken preset: the summary says so
  }
  for (const hsm::SettingSpec& s : hsm::train_setting_specs()) {
    const QString key = QString::fromLatin1(s.key);
    const QString value = qstr(s.get(own));
    // The device and thread count are this machine's (Preferences), whatever the preset says.
    if (key == QLatin1String("device") || key == QLatin1String("threads") || value == qstr(s.get(defaults))) continue;
    setField(key, value);
    if (fieldText(key) == value) presetFilled_.insert(key, value);
  }
}

QString TrainingForm::fieldText(const QString& name) const {
  auto flag = [](bool on) { return on ? QStringLiteral("true") : QStringLiteral("false"); };
  if (name == QLatin1String("cosine")) return flag(cosineBox_->isChecked());
  if (name == QLatin1String("keep_best")) return flag(keepBestBox_->isChecked());
  if (name == QLatin1String("windows")) return windowsBox_->currentData().toString();
  if (name == QLatin1String("device")) return deviceBox_->currentText();
  const QLineEdit* e = fields_.value(name);
  return e ? e->text() : QString();
}

void TrainingForm::suggestRunDir() {
  if (runDirEdited_) return;
  QString name = QFileInfo(presetBox_->currentData().toString()).completeBaseName();
  if (name.isEmpty()) name = QStringLiteral("run");
  runDirEdit_->setText(QDir(default_runs_root())
                           .filePath(name + QLatin1Char('-') +
                                     QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
}

void TrainingForm::setField(const QString& name, const QString& value) {
  if (name == QLatin1String("cosine")) {
    cosineBox_->setChecked(value == QLatin1String("1") || value == QLatin1String("true"));
    return;
  }
  if (name == QLatin1String("windows")) {
    windowsBox_->setCurrentIndex(std::max(0, windowsBox_->findData(value)));
    return;
  }
  if (name == QLatin1String("keep_best")) {
    keepBestBox_->setChecked(value == QLatin1String("1") || value == QLatin1String("true"));
    return;
  }
  if (name == QLatin1String("device")) {
    deviceBox_->setCurrentText(value);
    return;
  }
  if (QLineEdit* e = fields_.value(name)) {
    e->setText(value);
    if (name == QLatin1String("run_dir")) runDirEdited_ = true;
    // (An auto-exclusive radio button is not unchecked by setChecked(false): its partner is checked.)
    if (name == QLatin1String("tokenizer")) (value.isEmpty() ? newTokenizer_ : reuseTokenizer_)->setChecked(true);
  }
}

bool TrainingForm::buildSpec(hsm::RunSpec& spec, QString* firstRefusal) {
  clearErrors();
  bool ok = true;
  auto refuse = [&](const QString& field, const QString& message) {
    if (FieldError* error = errors_.value(field)) error->showError(message);
    if (firstRefusal && firstRefusal->isEmpty()) *firstRefusal = field + QStringLiteral(": ") + message;
    ok = false;
  };
  auto integer = [&](const QString& field, qint64 lo, qint64 hi, const QString& what) -> qint64 {
    bool good = false;
    const qint64 v = fields_[field]->text().trimmed().toLongLong(&good);
    if (!good) {
      refuse(field, tr("'%1' is not a whole number; %2").arg(fields_[field]->text(), what));
      return lo;
    }
    if (v < lo || v > hi) refuse(field, tr("%1 is out of range; %2").arg(v).arg(what));
    return v;
  };
  auto real = [&](const QString& field, double lo, double hi, bool openLo, const QString& what) -> double {
    bool good = false;
    const double v = fields_[field]->text().trimmed().toDouble(&good);
    if (!good || !std::isfinite(v)) {
      refuse(field, tr("'%1' is not a number; %2").arg(fields_[field]->text(), what));
      return lo;
    }
    if ((openLo ? v <= lo : v < lo) || v > hi) refuse(field, tr("%1 is out of range; %2").arg(v).arg(what));
    return v;
  };

  // Data
  const QString corpus = corpusEdit_->text().trimmed();
  if (corpus.isEmpty()) refuse(QStringLiteral("corpus"), tr("choose a corpus file or folder"));
  else if (!QFileInfo::exists(corpus)) refuse(QStringLiteral("corpus"), tr("'%1' does not exist").arg(corpus));
  spec.data_path = sstr(corpus);
  spec.tokenizer_path.clear();
  if (reuseTokenizer_->isChecked()) {
    const QString tok = tokenizerEdit_->text().trimmed();
    if (tok.isEmpty()) refuse(QStringLiteral("tokenizer"), tr("choose a tokenizer.model, or train a new one"));
    else if (!QFileInfo(tok).isFile()) refuse(QStringLiteral("tokenizer"), tr("'%1' is not a file").arg(tok));
    spec.tokenizer_path = sstr(tok);
  }
  const qint64 vocab = reuseTokenizer_->isChecked()
                           ? 0
                           : integer(QStringLiteral("vocab"), 64, 65536, tr("use 64 to 65536 tokens (the paper: 5000)"));

  // Model
  try {
    spec.model = hsm::load_preset_or_config(sstr(presetBox_->currentData().toString()));
  } catch (const std::exception& e) {
    refuse(QStringLiteral("preset"), QString::fromUtf8(e.what()));
  }
  if (vocab > 0) spec.model.vocab_size = vocab;
  spec.model.dropout = real(QStringLiteral("dropout"), 0, 0.95, false, tr("use 0 to 0.95 (the paper: 0.1)"));

  // Training: each field through its setting's declaration, then the settings together.
  hsm::TrainSettings& t = spec.train;
  t = hsm::TrainSettings{};
  auto checked = [&](const std::function<void()>& set) {
    try {
      set();
    } catch (const hsm::SettingError& e) {
      refuse(qstr(e.key), qstr(e.problem));
    }
  };
  for (const hsm::SettingSpec& setting : hsm::train_setting_specs())
    if (QLineEdit* field = fields_.value(QString::fromLatin1(setting.key)))
      checked([&] { setting.set(t, sstr(field->text().trimmed())); });
  t.cosine = cosineBox_->isChecked();
  t.device = sstr(deviceBox_->currentText());
  t.windows = sstr(windowsBox_->currentData().toString());
  t.keep_best = keepBestBox_->isChecked();
  if (ok) checked([&] { hsm::validate_train_settings(t); });

  // Run folder
  const QString dir = runDirEdit_->text().trimmed();
  if (dir.isEmpty()) refuse(QStringLiteral("run_dir"), tr("choose a folder for the run"));
  else if (QFileInfo::exists(QString::fromStdString(hsm::RunFolder(sstr(dir)).config)))
    refuse(QStringLiteral("run_dir"), tr("already holds a run: open it and use Continue, or choose another folder"));
  spec.run_dir = sstr(dir);
  spec.resume = false;
  if (ok) {
    try {
      hsm::validate(spec.model);
    } catch (const std::exception& e) {
      refuse(QStringLiteral("preset"), QString::fromUtf8(e.what()));
    }
  }
  return ok;
}

QString TrainingForm::corpus() const { return corpusEdit_->text().trimmed(); }

void TrainingForm::runStarted() {
  runDirEdited_ = false;
  suggestRunDir();
}

void TrainingForm::showRun(const hsm::RunInfo& run, const QString& name) {
  // The model: the preset of its name when the run's is that preset's, else the run folder's.
  QString model = qstr(run.dir);
  try {
    if (hsm::load_preset(run.model.name) == run.model) model = qstr(run.model.name);
  } catch (const std::exception&) {
    // not a preset's name: the run folder's config
  }
  setModel(model);  // its summary, dropout and vocabulary, and a fresh run folder named after it
  for (const hsm::SettingSpec& s : hsm::train_setting_specs()) {
    const QString key = QString::fromLatin1(s.key);
    if (key != QLatin1String("device") && key != QLatin1String("threads")) setField(key, qstr(s.get(run.training)));
  }
  // A run trained for a number of steps records no epochs (0), which a new run's form refuses:
  // the field keeps its default, unused while Steps is set.
  if (run.training.steps > 0 && run.training.epochs <= 0)
    setField(QStringLiteral("epochs"), qstr(hsm::train_setting("epochs").get(hsm::TrainSettings{})));
  // Choosing a preset afterwards starts from the paper's defaults again, as the Start page says
  // (fillPresetTraining puts back what still holds the run's values).
  presetFilled_.clear();
  for (const hsm::SettingSpec& s : hsm::train_setting_specs()) {
    const QString key = QString::fromLatin1(s.key);
    if (key != QLatin1String("device") && key != QLatin1String("threads")) presetFilled_.insert(key, fieldText(key));
  }
  fields_[QStringLiteral("dropout")]->setText(QString::number(run.model.dropout));
  fields_[QStringLiteral("vocab")]->setText(QString::number(run.model.vocab_size));
  // Its tokenizer (the same pieces, so the losses compare) and corpus, where they are here.
  const QString tokenizer = qstr(hsm::RunFolder(run.dir).tokenizer);
  runTokenizer_ = QFileInfo::exists(tokenizer) ? tokenizer : QString();
  setField(QStringLiteral("tokenizer"), runTokenizer_);
  if (!run.data_path.empty() && QFileInfo::exists(qstr(run.data_path))) setCorpus(qstr(run.data_path));
  clearErrors();
  trainingBox_->setTitle(tr("Training (as %1)").arg(name));
}

void TrainingForm::clearErrors() {
  for (FieldError* e : errors_) e->clearError();
}

}  // namespace studio
