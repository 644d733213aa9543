#include "gui/views/training_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>

#include "gui/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/studio_settings.h"
#include "gui/widgets/field_error.h"
#include "gui/widgets/plot_panel.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/settings.h"

namespace studio {

namespace {

QString format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("–");
  const qint64 t = static_cast<qint64>(s + 0.5);
  if (t >= 3600) return QStringLiteral("%1h %2m").arg(t / 3600).arg((t % 3600) / 60, 2, 10, QLatin1Char('0'));
  if (t >= 60) return QStringLiteral("%1m %2s").arg(t / 60).arg(t % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1s").arg(t);
}

QString default_runs_root() { return QDir::home().filePath(QStringLiteral("hsm-runs")); }

}  // namespace

QVector<double> TrainingView::smooth(const QVector<double>& y, double weight) {
  if (weight <= 0) return y;
  QVector<double> out;
  out.reserve(y.size());
  double ema = 0, debias = 1;
  for (double v : y) {
    ema = weight * ema + (1 - weight) * v;
    debias *= weight;
    out.push_back(ema / (1 - debias));
  }
  return out;
}

TrainingView::TrainingView(RunList* runs, EngineHost* engine, QWidget* parent)
    : QWidget(parent), runs_(runs), engine_(engine) {
  auto* formWidget = new QWidget;
  buildForm(formWidget);
  auto* scroll = new QScrollArea;
  scroll->setWidget(formWidget);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(formWidget->sizeHint().width() + 24);
  scroll->setMaximumWidth(520);
  scroll->setFrameShape(QFrame::NoFrame);

  // ---- plots ---------------------------------------------------------------------------
  smoothing_ = new QSlider(Qt::Horizontal);
  smoothing_->setObjectName(QStringLiteral("smoothing"));
  smoothing_->setRange(0, 99);
  smoothing_->setValue(60);
  smoothing_->setMaximumWidth(160);
  smoothing_->setToolTip(tr("Exponential moving average of the train loss; the raw curve stays faint behind it"));
  smoothingLabel_ = new QLabel;
  xAxis_ = new QComboBox;
  xAxis_->setObjectName(QStringLiteral("x_axis"));
  xAxis_->addItems({tr("Step"), tr("Wall time (s)")});
  overlay_ = new QCheckBox(tr("Overlay other open runs"));
  overlay_->setObjectName(QStringLiteral("overlay"));
  overlay_->setChecked(true);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Smoothing")));
  controls->addWidget(smoothing_);
  controls->addWidget(smoothingLabel_);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(tr("x axis")));
  controls->addWidget(xAxis_);
  controls->addSpacing(12);
  controls->addWidget(overlay_);
  controls->addStretch(1);

  lossPlot_ = new PlotPanel(tr("Loss"), tr("step"), tr("cross-entropy (nats)"));
  accuracyPlot_ = new PlotPanel(tr("Validation accuracy"), tr("step"), tr("top-1 next-token accuracy"));
  speedPlot_ = new PlotPanel(tr("Throughput"), tr("step"), tr("tokens/s"));
  lrPlot_ = new PlotPanel(tr("Learning rate"), tr("step"), tr("learning rate"));
  scatterPlot_ = new PlotPanel(tr("Accuracy vs loss"), tr("validation loss"), tr("validation accuracy"));
  // Rising curves keep their legend out of the way at the bottom.
  accuracyPlot_->setLegendAlignment(Qt::AlignBottom | Qt::AlignRight);
  speedPlot_->setLegendAlignment(Qt::AlignBottom | Qt::AlignRight);
  auto* grid = new QWidget;
  auto* gridLayout = new QGridLayout(grid);
  gridLayout->setContentsMargins(0, 0, 0, 0);
  gridLayout->addWidget(lossPlot_, 0, 0);
  gridLayout->addWidget(accuracyPlot_, 0, 1);
  gridLayout->addWidget(speedPlot_, 1, 0);
  gridLayout->addWidget(lrPlot_, 1, 1);
  gridLayout->setRowStretch(0, 3);
  gridLayout->setRowStretch(1, 2);
  auto* plotTabs = new QTabWidget;
  plotTabs->addTab(grid, tr("Curves"));
  plotTabs->addTab(scatterPlot_, tr("Accuracy vs loss (all runs)"));

  // ---- progress and log ----------------------------------------------------------------
  stageLabel_ = new QLabel(tr("Idle. Choose a corpus and a model, then Start."));
  stageLabel_->setObjectName(QStringLiteral("stage"));
  dataProgress_ = new QProgressBar;
  dataProgress_->setObjectName(QStringLiteral("data_progress"));
  dataProgress_->setMaximumWidth(220);
  dataProgress_->setVisible(false);
  trainProgress_ = new QProgressBar;
  trainProgress_->setObjectName(QStringLiteral("train_progress"));
  trainProgress_->setRange(0, 1000);
  trainProgress_->setValue(0);
  trainProgress_->setFormat(tr("no training"));
  trainProgress_->setTextVisible(true);
  auto* progressRow = new QHBoxLayout;
  progressRow->addWidget(stageLabel_, 1);
  progressRow->addWidget(dataProgress_);
  logToggle_ = new QToolButton;
  logToggle_->setText(tr("Engine log"));
  logToggle_->setCheckable(true);
  logToggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  logToggle_->setArrowType(Qt::RightArrow);
  logToggle_->setAutoRaise(true);
  log_ = new QPlainTextEdit;
  log_->setObjectName(QStringLiteral("log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setMaximumHeight(140);
  log_->setVisible(false);
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  log_->setFont(mono);
  connect(logToggle_, &QToolButton::toggled, this, [this](bool on) {
    log_->setVisible(on);
    logToggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
  });

  auto* right = new QWidget;
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(6, 0, 0, 0);
  rightLayout->addLayout(controls);
  rightLayout->addWidget(plotTabs, 1);
  rightLayout->addLayout(progressRow);
  rightLayout->addWidget(trainProgress_);
  rightLayout->addWidget(logToggle_, 0, Qt::AlignLeft);
  rightLayout->addWidget(log_);

  // The actions stay in view below the scrolling form.
  auto* left = new QWidget;
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(scroll, 1);
  leftLayout->addWidget(actions_);
  left->setMaximumWidth(520);
  auto* layout = new QHBoxLayout(this);
  layout->addWidget(left);
  layout->addWidget(right, 1);

  // ---- wiring ------------------------------------------------------------------------
  auto schedule = [this] {
    if (replotPending_) return;
    replotPending_ = true;
    QTimer::singleShot(0, this, [this] {
      replotPending_ = false;
      rebuildPlots();
    });
  };
  connect(smoothing_, &QSlider::valueChanged, this, schedule);
  connect(xAxis_, &QComboBox::currentIndexChanged, this, schedule);
  connect(overlay_, &QCheckBox::toggled, this, schedule);
  connect(runs_, &RunList::metricsAppended, this, schedule);
  connect(runs_, &RunList::metricsReset, this, schedule);
  connect(runs_, &RunList::currentChanged, this, schedule);
  connect(runs_, &RunList::runAdded, this, schedule);
  connect(runs_, &RunList::runRemoved, this, schedule);
  connect(runs_, &RunList::currentChanged, this, &TrainingView::updateButtons);
  connect(engine_, &EngineHost::trainingStateChanged, this, &TrainingView::updateButtons);
  connect(engine_, &EngineHost::trainingProgress, this, &TrainingView::onProgress);
  connect(engine_, &EngineHost::trainingMetric, this, &TrainingView::onMetric);
  connect(engine_, &EngineHost::trainingLog, this, &TrainingView::appendLog);
  connect(engine_, &EngineHost::trainingFinished, this, &TrainingView::onFinished);
  connect(engine_, &EngineHost::trainingFailed, this, &TrainingView::onFailed);
  connect(engine_, &EngineHost::trainingPaused, this, [this](bool p) {
    stageLabel_->setText(p ? tr("Paused. Resume continues from the same step.") : tr("Training…"));
  });
  rebuildPlots();
  updateButtons();
}

QLineEdit* TrainingView::addField(QFormLayout* layout, const QString& name, const QString& label, const QString& value,
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

void TrainingView::buildForm(QWidget* form) {
  const hsm::TrainSettings d;  // the paper's defaults (HSM §7)
  auto* v = new QVBoxLayout(form);

  // Data
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
  v->addWidget(data);

  // Model
  auto* model = new QGroupBox(tr("Model"));
  auto* modelForm = new QFormLayout(model);
  presetBox_ = new QComboBox;
  presetBox_->setObjectName(QStringLiteral("preset"));
  for (const std::string& name : hsm::preset_names()) presetBox_->addItem(qstr(name), qstr(name));
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
  connect(presetBox_, &QComboBox::currentIndexChanged, this, [this] {
    updateModelSummary();
    suggestRunDir();
  });
  connect(configButton, &QPushButton::clicked, this, &TrainingView::chooseConfigFile);
  v->addWidget(model);

  // Training
  auto* training = new QGroupBox(tr("Training (paper defaults)"));
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
  setting("seed");
  deviceBox_ = new QComboBox;
  deviceBox_->setObjectName(QStringLiteral("device"));
  deviceBox_->addItems({QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda")});
  deviceBox_->setCurrentText(StudioSettings::device());
  trainForm->addRow(tr("Device"), deviceBox_);
  setting("threads")->setText(QString::number(StudioSettings::threads()));
  v->addWidget(training);

  // Output and actions
  auto* output = new QGroupBox(tr("Run folder"));
  auto* outForm = new QFormLayout(output);
  runDirEdit_ = addField(outForm, QStringLiteral("run_dir"), tr("Folder"), QString(),
                         tr("Where weights, config.json, tokenizer.model and metrics.jsonl go"));
  connect(runDirEdit_, &QLineEdit::textEdited, this, [this] { runDirEdited_ = true; });
  v->addWidget(output);

  startButton_ = new QPushButton(tr("Start training"));
  startButton_->setObjectName(QStringLiteral("start"));
  startButton_->setDefault(true);
  pauseButton_ = new QPushButton(tr("Pause"));
  pauseButton_->setObjectName(QStringLiteral("pause"));
  stopButton_ = new QPushButton(tr("Stop"));
  stopButton_->setObjectName(QStringLiteral("stop"));
  stopButton_->setToolTip(tr("Finish the current step, write a checkpoint and stop"));
  continueButton_ = new QPushButton(tr("Continue current run"));
  continueButton_->setObjectName(QStringLiteral("continue_run"));
  continueButton_->setToolTip(tr("Resume the current run from its last checkpoint (set Steps to extend a finished run)"));
  auto* buttons = new QGridLayout;
  buttons->addWidget(startButton_, 0, 0, 1, 2);
  buttons->addWidget(pauseButton_, 1, 0);
  buttons->addWidget(stopButton_, 1, 1);
  buttons->addWidget(continueButton_, 2, 0, 1, 2);
  actions_ = new QWidget;
  actions_->setLayout(buttons);
  v->addStretch(1);

  connect(startButton_, &QPushButton::clicked, this, [this] { start(); });
  connect(pauseButton_, &QPushButton::clicked, this, [this] {
    if (engine_->isPaused()) engine_->resumeTraining();
    else engine_->pauseTraining();
  });
  connect(stopButton_, &QPushButton::clicked, this, [this] {
    engine_->stopTraining();
    stageLabel_->setText(tr("Stopping after this step; writing a checkpoint…"));
  });
  connect(continueButton_, &QPushButton::clicked, this, [this] { continueCurrentRun(); });

  const int hsmAb = presetBox_->findData(QStringLiteral("hsm_ab"));
  if (hsmAb >= 0) presetBox_->setCurrentIndex(hsmAb);
  updateModelSummary();
  suggestRunDir();
}

void TrainingView::chooseCorpus(bool folder) {
  const QString start = corpusEdit_->text().isEmpty() ? QDir::homePath() : QFileInfo(corpusEdit_->text()).path();
  const QString path = folder ? QFileDialog::getExistingDirectory(this, tr("Corpus folder"), start)
                              : QFileDialog::getOpenFileName(this, tr("Corpus file"), start,
                                                             tr("Text or JSON (*.txt *.json *.jsonl);;All files (*)"));
  if (!path.isEmpty()) setCorpus(path);
}

void TrainingView::setCorpus(const QString& path) {
  corpusEdit_->setText(path);
  errors_[QStringLiteral("corpus")]->clearError();
}

void TrainingView::chooseConfigFile() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Model config"), QDir::homePath(), tr("JSON (*.json)"));
  if (!path.isEmpty()) setModel(path);
}

bool TrainingView::setModel(const QString& presetOrConfig) {
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
  presetBox_->setCurrentIndex(i);
  return true;
}

void TrainingView::updateModelSummary() {
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

void TrainingView::suggestRunDir() {
  if (runDirEdited_) return;
  QString name = QFileInfo(presetBox_->currentData().toString()).completeBaseName();
  if (name.isEmpty()) name = QStringLiteral("run");
  runDirEdit_->setText(QDir(default_runs_root())
                           .filePath(name + QLatin1Char('-') +
                                     QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
}

void TrainingView::setField(const QString& name, const QString& value) {
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
    if (name == QLatin1String("tokenizer")) reuseTokenizer_->setChecked(!value.isEmpty());
  }
}

void TrainingView::clearErrors() {
  for (FieldError* e : errors_) e->clearError();
  lastError_.clear();
}

bool TrainingView::buildSpec(hsm::RunSpec& spec) {
  clearErrors();
  bool ok = true;
  auto refuse = [&](const QString& field, const QString& message) {
    if (FieldError* error = errors_.value(field)) error->showError(message);
    if (lastError_.isEmpty()) lastError_ = field + QStringLiteral(": ") + message;
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
  else if (QFileInfo::exists(dir + QStringLiteral("/config.json")))
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

bool TrainingView::start() {
  if (engine_->isTraining()) {
    lastError_ = tr("a run is already training");
    return false;
  }
  hsm::RunSpec spec;
  if (!buildSpec(spec)) {
    stageLabel_->setText(tr("Some fields need attention (marked in red)."));
    return false;
  }
  StudioSettings::setLastCorpus(corpusEdit_->text().trimmed());
  const int row = runs_->addPending(qstr(spec.run_dir), spec.model);
  runs_->setCurrent(row);
  firstStep_ = -1;
  runClock_.start();
  log_->clear();
  appendLog(tr("Starting %1 on %2").arg(qstr(spec.model.name), qstr(spec.data_path)));
  engine_->startTraining(spec);
  runDirEdited_ = false;
  suggestRunDir();  // the next run gets a fresh folder
  return true;
}

bool TrainingView::continueCurrentRun() {
  const RunEntry* run = runs_->currentRun();
  if (!run || engine_->isTraining()) return false;
  clearErrors();
  hsm::RunSpec spec;
  spec.run_dir = sstr(run->dir);
  spec.resume = true;
  try {
    spec.train = hsm::stored_settings(spec.run_dir);
    spec.data_path = hsm::stored_data_path(spec.run_dir);
  } catch (const std::exception& e) {
    lastError_ = QString::fromUtf8(e.what());
    stageLabel_->setText(lastError_);
    return false;
  }
  bool good = false;
  const qint64 steps = fields_[QStringLiteral("steps")]->text().toLongLong(&good);
  if (good && steps > 0) spec.train.steps = steps;
  if (run->has_info && run->info.total_steps > 0 && run->info.step >= run->info.total_steps &&
      spec.train.steps <= run->info.step) {
    errors_[QStringLiteral("steps")]->showError(
        tr("the run is finished at step %1: set Steps above it to continue").arg(run->info.step));
    lastError_ = errors_[QStringLiteral("steps")]->text();
    return false;
  }
  firstStep_ = -1;
  runClock_.start();
  appendLog(tr("Continuing %1").arg(run->dir));
  engine_->startTraining(spec);
  return true;
}

void TrainingView::updateButtons() {
  const bool training = engine_->isTraining();
  startButton_->setEnabled(!training);
  pauseButton_->setEnabled(training);
  pauseButton_->setText(engine_->isPaused() ? tr("Resume") : tr("Pause"));
  stopButton_->setEnabled(training);
  const RunEntry* run = runs_->currentRun();
  continueButton_->setEnabled(!training && run && run->has_info);
}

void TrainingView::onProgress(const QString& stage, double fraction) {
  if (stage == QLatin1String("training")) {
    dataProgress_->setVisible(false);
    return;
  }
  stageLabel_->setText(stage + QStringLiteral("…"));
  dataProgress_->setVisible(true);
  if (fraction < 0) {
    dataProgress_->setRange(0, 0);  // busy indicator
  } else {
    dataProgress_->setRange(0, 100);
    dataProgress_->setValue(static_cast<int>(fraction * 100));
  }
}

void TrainingView::onMetric(const QString&, const hsm::MetricRecord& m) {
  if (firstStep_ < 0) {
    firstStep_ = m.step;
    runClock_.restart();
  }
  dataProgress_->setVisible(false);
  if (!engine_->isPaused()) stageLabel_->setText(tr("Training…"));
  const double done = m.total_steps > 0 ? static_cast<double>(m.step) / m.total_steps : 0;
  const double elapsed = runClock_.elapsed() / 1000.0;
  const int64_t stepsHere = m.step - firstStep_;
  const double eta = stepsHere > 0 ? elapsed / stepsHere * (m.total_steps - m.step) : NAN;
  trainProgress_->setValue(static_cast<int>(done * 1000));
  trainProgress_->setFormat(tr("step %1 / %2 · epoch %3 · ETA %4")
                                .arg(m.step)
                                .arg(m.total_steps)
                                .arg(QString::number(m.epoch, 'f', 2))
                                .arg(format_duration(eta)));
  // Make sure the curves are current even between poll ticks.
  runs_->poll();
}

void TrainingView::onFinished(const hsm::TrainSummary& s) {
  trainProgress_->setFormat(tr("%1 at step %2 / %3 · val loss %4 · accuracy %5")
                                .arg(s.stopped ? tr("stopped") : tr("finished"))
                                .arg(s.steps)
                                .arg(s.total_steps)
                                .arg(QString::number(s.val_loss, 'f', 3))
                                .arg(QString::number(s.val_accuracy, 'f', 3)));
  stageLabel_->setText(s.stopped ? tr("Stopped; the checkpoint in %1 is complete.").arg(qstr(s.run_dir))
                                 : tr("Finished; try the model in the Playground."));
  runs_->poll();
  updateButtons();
}

void TrainingView::onFailed(const QString& runDir, const QString& message) {
  lastError_ = message;
  stageLabel_->setText(tr("Training failed: %1").arg(message));
  appendLog(tr("error: %1").arg(message));
  dataProgress_->setVisible(false);
  if (!logToggle_->isChecked()) logToggle_->setChecked(true);
  // A run that never wrote a checkpoint is no run: take it off the list.
  const int row = runs_->indexOf(runDir);
  if (row >= 0 && !runs_->at(row).has_info) runs_->close(row);
  emit trainingFailed(message);
}

void TrainingView::appendLog(const QString& line) {
  log_->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + line);
}

QList<PlotPanel*> TrainingView::plots() const { return {lossPlot_, accuracyPlot_, speedPlot_, lrPlot_, scatterPlot_}; }

void TrainingView::rebuildPlots() {
  QElapsedTimer timer;
  timer.start();
  const double weight = smoothing_->value() / 100.0;
  smoothingLabel_->setText(QString::number(weight, 'f', 2));
  const bool wall = xAxis_->currentIndex() == 1;
  const QString xLabel = wall ? tr("wall time (s)") : tr("step");
  for (PlotPanel* p : {lossPlot_, accuracyPlot_, speedPlot_, lrPlot_}) p->setXLabel(xLabel);

  QVector<PlotSeries> loss, acc, speed, lr, scatter;
  const int current = runs_->current();
  for (int i = 0; i < runs_->count(); ++i) {
    const RunEntry& run = runs_->at(i);
    const bool isCurrent = i == current;
    QVector<double> tx, ty, vx, vy, ax, sx, sy, lx, ly;
    for (const hsm::MetricRecord& m : run.metrics) {
      const double x = wall ? m.wall_s : static_cast<double>(m.step);
      if (m.kind == "train") {
        if (std::isfinite(m.train_loss)) {
          tx << x;
          ty << m.train_loss;
        }
        if (std::isfinite(m.tokens_per_s)) {
          sx << x;
          sy << m.tokens_per_s;
        }
        if (std::isfinite(m.lr)) {
          lx << x;
          ly << m.lr;
        }
      } else if (m.kind == "eval" && std::isfinite(m.val_loss)) {
        vx << x;
        vy << m.val_loss;
        ax << (std::isfinite(m.val_accuracy) ? m.val_accuracy : NAN);
      }
    }
    // Scatter: every validation of every open run (HSM Fig. 8).
    PlotSeries sc{run.name(), run.color, {}, {}, PlotSeries::Style::kScatter};
    for (int k = 0; k < vx.size(); ++k)
      if (std::isfinite(ax[k])) {
        sc.x << vy[k];
        sc.y << ax[k];
      }
    if (!sc.x.isEmpty()) scatter << sc;
    if (!isCurrent && !overlay_->isChecked()) continue;
    const QString n = run.name();
    if (isCurrent && weight > 0) loss << PlotSeries{n + tr(" train (raw)"), run.color, tx, ty, PlotSeries::Style::kFaintLine, false};
    loss << PlotSeries{n + tr(" train"), run.color, tx, smooth(ty, weight), PlotSeries::Style::kLine};
    loss << PlotSeries{n + tr(" validation"), run.color.darker(130), vx, vy, PlotSeries::Style::kDashedLine};
    QVector<double> accX, accY;
    for (int k = 0; k < vx.size(); ++k)
      if (std::isfinite(ax[k])) {
        accX << vx[k];
        accY << ax[k];
      }
    acc << PlotSeries{n, run.color, accX, accY, PlotSeries::Style::kLine};
    speed << PlotSeries{n, run.color, sx, smooth(sy, weight), PlotSeries::Style::kLine};
    lr << PlotSeries{n, run.color, lx, ly, PlotSeries::Style::kLine};
  }
  lossPlot_->setSeries(loss);
  accuracyPlot_->setSeries(acc);
  speedPlot_->setSeries(speed);
  lrPlot_->setSeries(lr);
  scatterPlot_->setSeries(scatter);
  if (qEnvironmentVariableIsSet("HSM_STUDIO_TRACE")) qInfo("rebuildPlots: %lld ms", timer.elapsed());
}

}  // namespace studio
