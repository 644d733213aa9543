#include "gui/views/playground_view.h"

#include <algorithm>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRandomGenerator>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_list.h"
#include "gui/widgets/field_error.h"
#include "gui/widgets/layout_helpers.h"
#include "gui/views/probe_view.h"
#include "gui/widgets/notice_bar.h"
#include "gui/widgets/token_text.h"
#include "hsm/files.h"
#include "hsm/presets.h"

namespace studio {

PlaygroundView::PlaygroundView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent), state_(new PlaygroundState(engine, this)) {
  build();
  connectSignals();
  connectState();
  textSize_ = QSettings().value(QStringLiteral("playground/text_size"), TokenText::defaultTextSize()).toDouble();
  bindTextSizeKeys(this, [this](double step) { setTextSize(textSize_ + step); });
  updateButtons();
}

void PlaygroundView::build() {
  buildPrompt();
  QWidget* left = buildLeft();
  QWidget* right = buildOutput();
  auto* layout = new QHBoxLayout(this);
  layout->addWidget(left);
  layout->addWidget(right, 1);
}

void PlaygroundView::buildPrompt() {
  promptEdit_ = new QPlainTextEdit;
  promptEdit_->setObjectName(QStringLiteral("prompt"));
  // An empty prompt is allowed (the model starts a story from nothing): the placeholder says
  // so rather than show words the model never sees.
  promptEdit_->setPlaceholderText(tr("(empty: the model starts a story from nothing)"));
  promptEdit_->setPlainText(QStringLiteral("Once upon a time"));
  promptEdit_->setMaximumHeight(110);

  paperList_ = new QListWidget;
  paperList_->setObjectName(QStringLiteral("paper_prompts"));
  paperList_->setWordWrap(true);
  paperList_->setAlternatingRowColors(true);
  paperList_->setSpacing(2);
  paperList_->setToolTip(tr("The HSM paper's Table 3 prompts: click to use one, double-click to generate"));
  loadPaperPrompts();
}

void PlaygroundView::buildSamplingControls() {
  const hsm::SampleSettings defaults;
  temperature_ = new QDoubleSpinBox;
  temperature_->setObjectName(QStringLiteral("temperature"));
  temperature_->setRange(0, 3);
  temperature_->setSingleStep(0.05);
  temperature_->setValue(defaults.temperature);
  temperature_->setToolTip(tr("0 = always the most likely token (greedy)"));
  topP_ = new QDoubleSpinBox;
  topP_->setObjectName(QStringLiteral("top_p"));
  topP_->setRange(0.01, 1);
  topP_->setSingleStep(0.05);
  topP_->setValue(defaults.top_p);
  topP_->setToolTip(tr("Nucleus sampling: the smallest set of tokens whose probability reaches p; 1 = off"));
  topK_ = new QSpinBox;
  topK_->setObjectName(QStringLiteral("top_k"));
  topK_->setRange(0, 65536);
  topK_->setValue(defaults.top_k);
  topK_->setSpecialValueText(tr("off"));
}

void PlaygroundView::buildSeedControls() {
  // A new story at every Generate by default (a fixed default seed told the same story twice);
  // the seed used is always shown, and unticking "random" (or typing a seed) keeps it fixed.
  seedEdit_ = new QLineEdit(QString::number(drawSeed()));
  seedEdit_->setObjectName(QStringLiteral("seed"));
  seedEdit_->setToolTip(
      tr("The seed of the last story (or the next, when not random): the same seed, prompt and "
         "settings tell the same story"));
  seedError_ = new FieldError(QStringLiteral("seed"));
  randomSeed_ = new QCheckBox(tr("random"));
  randomSeed_->setObjectName(QStringLiteral("random_seed"));
  randomSeed_->setChecked(true);
  randomSeed_->setToolTip(
      tr("Draw a new seed for every generation; the seed used is shown, so a story can be "
         "reproduced: untick to keep it"));
  maxTokens_ = new QSpinBox;
  maxTokens_->setObjectName(QStringLiteral("max_tokens"));
  maxTokens_->setRange(1, 4096);
  maxTokens_->setValue(200);
  compare_ = new QCheckBox(tr("Compare every open model"));
  compare_->setObjectName(QStringLiteral("compare"));
  compare_->setToolTip(tr("The same prompt, settings and seed on each open run, side by side (HSM Table 3)"));
}

QWidget* PlaygroundView::buildSampling() {
  buildSamplingControls();
  buildSeedControls();
  auto* settings = new QGroupBox(tr("Sampling"));
  auto* form = new QFormLayout(settings);
  form->addRow(tr("Temperature"), temperature_);
  form->addRow(tr("Top-p"), topP_);
  form->addRow(tr("Top-k"), topK_);
  auto* seedRow = new QHBoxLayout;
  seedRow->addWidget(seedEdit_, 1);
  seedRow->addWidget(randomSeed_);
  form->addRow(tr("Seed"), seedRow);
  form->addRow(QString(), seedError_);
  form->addRow(tr("Max tokens"), maxTokens_);
  form->addRow(compare_);
  return settings;
}

QWidget* PlaygroundView::buildLeft() {
  QWidget* settings = buildSampling();
  generateButton_ = new QPushButton(tr("Generate"));
  generateButton_->setObjectName(QStringLiteral("generate"));
  generateButton_->setDefault(true);
  generateButton_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  generateButton_->setToolTip(tr("Generate (Ctrl+Enter)"));
  stopButton_ = new QPushButton(tr("Stop"));
  stopButton_->setObjectName(QStringLiteral("stop"));
  stopButton_->setShortcut(QKeySequence(Qt::Key_Escape));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(generateButton_, 1);
  buttons->addWidget(stopButton_);

  auto* left = new QWidget;
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 6, 0);
  leftLayout->addWidget(new QLabel(tr("<b>Prompt</b>")));
  leftLayout->addWidget(promptEdit_);
  leftLayout->addLayout(buttons);
  // The settings and the paper's prompts scroll when the window is short; the prompt and
  // Generate stay in view (issue 48).
  auto* lower = new QWidget;
  auto* lowerLayout = new QVBoxLayout(lower);
  lowerLayout->setContentsMargins(0, 0, 0, 0);
  lowerLayout->addWidget(settings);
  lowerLayout->addWidget(new QLabel(tr("<b>The paper's prompts</b> (HSM Table 3)")));
  lowerLayout->addWidget(paperList_, 1);
  leftLayout->addWidget(scrollWhenShort(lower, Qt::ScrollBarAlwaysOff), 1);
  left->setMinimumWidth(300);
  left->setMaximumWidth(420);
  return left;
}

QHBoxLayout* PlaygroundView::buildLegendRow() {
  auto* legend = new QLabel(
      tr("Each token is tinted by the probability the model gave it: "
         "<span style='background:%1'>&nbsp;1%&nbsp;</span> <span style='background:%2'>&nbsp;10%&nbsp;</span> "
         "<span style='background:%3'>&nbsp;30%&nbsp;</span> <span style='background:%4'>&nbsp;100%&nbsp;</span>"
         " · hover a token for the alternatives the model weighed")
          .arg(TokenText::tint(0.01).name(), TokenText::tint(0.1).name(), TokenText::tint(0.3).name(),
               TokenText::tint(1.0).name()));
  legend->setWordWrap(true);  // two lines on a narrow screen rather than a wider window
  // Tint on by default (what the view is for); off for reading a story as text, as the
  // presentation's toggle does. Remembered across sessions.
  tint_ = new QCheckBox(tr("Tint by probability"));
  tint_->setObjectName(QStringLiteral("playground_tint"));
  tint_->setToolTip(tr("Colour each token by the probability the model gave it; off shows plain text"));
  tint_->setChecked(QSettings().value(QStringLiteral("playground/tint"), true).toBool());
  auto* legendRow = new QHBoxLayout;
  legendRow->addWidget(legend, 1);
  legendRow->addWidget(tint_);
  return legendRow;
}

QWidget* PlaygroundView::buildOutput() {
  hint_ = new QLabel;
  hint_->setWordWrap(true);
  hint_->setObjectName(QStringLiteral("hint"));
  auto* columnsHost = new QWidget;
  columnsLayout_ = new QHBoxLayout(columnsHost);
  columnsLayout_->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea;
  scroll->setWidget(columnsHost);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  QHBoxLayout* legendRow = buildLegendRow();
  compareTrained_ = new QCheckBox(tr("Compare with trained (same seed)"));
  compareTrained_->setObjectName(QStringLiteral("compare_trained"));
  compareTrained_->setToolTip(tr("Also generate with the run's trained model, side by side with the edited one"));
  whatIfBar_ = makeWhatIfNotice(QStringLiteral("playground_whatif_box"),
                                tr("Generate again with the same seed to see what the edit changes; Reset it in "
                                   "the Weights view."),
                                {compareTrained_});
  auto* right = new QWidget;
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(6, 0, 0, 0);
  rightLayout->addWidget(whatIfBar_);
  rightLayout->addWidget(hint_);
  rightLayout->addWidget(scroll, 1);
  rightLayout->addLayout(legendRow);
  return right;
}

void PlaygroundView::connectSignals() {
  connect(tint_, &QCheckBox::toggled, this, [this](bool on) {
    for (Column& c : columns_) c.text->setTinted(on);
    QSettings().setValue(QStringLiteral("playground/tint"), on);
  });
  connect(paperList_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { setPrompt(item->data(Qt::UserRole).toString()); });
  connect(paperList_, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) {
    setPrompt(item->data(Qt::UserRole).toString());
    generate();
  });
  connect(seedEdit_, &QLineEdit::textEdited, this, [this] { randomSeed_->setChecked(false); });
  connect(generateButton_, &QPushButton::clicked, this, [this] { generate(); });
  connect(stopButton_, &QPushButton::clicked, this, &PlaygroundView::stop);
  connect(runs_, &RunList::currentChanged, this, &PlaygroundView::updateButtons);
  connect(runs_, &RunList::runAdded, this, &PlaygroundView::updateButtons);
  connect(runs_, &RunList::infoChanged, this, &PlaygroundView::updateButtons);
  connect(runs_, &RunList::runRemoved, this, &PlaygroundView::updateButtons);
  connect(compare_, &QCheckBox::toggled, this, &PlaygroundView::updateButtons);
}

void PlaygroundView::connectState() {
  connect(state_, &PlaygroundState::columnStarted, this,
          [this](int column) { columns_[column].status->setText(tr("loading and generating…")); });
  connect(state_, &PlaygroundState::tokenGenerated, this, [this](int column, const hsm::GeneratedToken& token) {
    columns_[column].text->appendToken(token);
    columns_[column].status->setText(tr("%1 tokens…").arg(columns_[column].text->tokenCount()));
    emit tokenGenerated(column, token);
  });
  connect(state_, &PlaygroundState::columnGenerated, this, &PlaygroundView::onGenerated);
  connect(state_, &PlaygroundState::columnFailed, this, &PlaygroundView::onFailed);
  connect(state_, &PlaygroundState::finished, this, &PlaygroundView::onFinished);
  connect(state_, &PlaygroundState::probed, this, &PlaygroundView::onProbed);
  connect(state_, &PlaygroundState::probeFailed, this, [this](int column, const QString& message) {
    columns_[column].status->setText(tr("provenance failed: %1").arg(message));
    lastError_ = message;
    emit provenanceFinished();
  });
}

void PlaygroundView::setTextSize(double points) {
  textSize_ = std::clamp(points, TokenText::kMinTextSize, TokenText::kMaxTextSize);
  for (Column& c : columns_) c.text->setTextSize(textSize_);
  QSettings().setValue(QStringLiteral("playground/text_size"), textSize_);
}

bool PlaygroundView::generateStory(const QString& prompt, int minTokens, int maxTokens) {
  setPrompt(prompt);
  const bool compare = compare_->isChecked(), random = randomSeed_->isChecked();
  compare_->setChecked(false);
  randomSeed_->setChecked(true);
  story_ = Story{minTokens, maxTokens};
  const bool started = generate();
  story_.reset();
  // Issue 69: the Playground now shows the story's one column; its box says so (re-ticked, it
  // claimed a comparison of every open model beside one story after Esc).
  if (!started) compare_->setChecked(compare);
  randomSeed_->setChecked(random);
  return started;
}

void PlaygroundView::setCompareTrained(bool on) { compareTrained_->setChecked(on); }

void PlaygroundView::loadPaperPrompts() {
  // Read as every small file is (hsm/files.h): a FIFO or a device there never holds the GUI thread.
  std::string text;
  try {
    text = hsm::read_text_file(hsm::resources_dir() + "/prompts/hsm_table3.json", "prompt set");
  } catch (const std::exception&) {
    return;
  }
  const QJsonArray prompts =
      QJsonDocument::fromJson(QByteArray::fromStdString(text)).object().value(QStringLiteral("prompts")).toArray();
  for (const QJsonValue& v : prompts) {
    const QJsonObject o = v.toObject();
    const QString prompt = o.value(QStringLiteral("prompt")).toString();
    paperPrompts_ << prompt;
    auto* item = new QListWidgetItem(prompt, paperList_);
    item->setData(Qt::UserRole, prompt);
    QString tip = tr("<b>The paper's continuations</b><br>");
    const QJsonObject cont = o.value(QStringLiteral("paper_continuations")).toObject();
    for (auto it = cont.begin(); it != cont.end(); ++it)
      tip += QStringLiteral("%1: <i>%2</i><br>").arg(it.key().toHtmlEscaped(), it.value().toString().toHtmlEscaped());
    item->setToolTip(tip);
  }
}

void PlaygroundView::setPrompt(const QString& prompt) { promptEdit_->setPlainText(prompt); }
QString PlaygroundView::prompt() const { return promptEdit_->toPlainText(); }

void PlaygroundView::setSeed(quint64 seed) {
  randomSeed_->setChecked(false);
  seedEdit_->setText(QString::number(seed));
}

void PlaygroundView::setRandomSeed(bool random) { randomSeed_->setChecked(random); }
bool PlaygroundView::randomSeed() const { return randomSeed_->isChecked(); }
QString PlaygroundView::seedText() const { return seedEdit_->text(); }

quint64 PlaygroundView::drawSeed() {
  // 1 .. 999,999: a number people read off the screen and type again, whole in the seed field
  // at 1024x600 (issue 69: a 19-digit draw was clipped); any seed up to 2^63 - 1 is still typed in.
  return seedDraws_.bounded(quint64{1}, quint64{kMaxDrawnSeed} + 1);
}
void PlaygroundView::setCompare(bool on) { compare_->setChecked(on); }

TokenText* PlaygroundView::output(int column) const {
  return column >= 0 && column < columns_.size() ? columns_[column].text : nullptr;
}

bool PlaygroundView::options(hsm::GenerateOptions& out) {
  seedError_->clearError();
  out = hsm::GenerateOptions{};
  out.sampling.temperature = temperature_->value();
  out.sampling.top_p = topP_->value();
  out.sampling.top_k = topK_->value();
  out.sampling.max_new_tokens = maxTokens_->value();
  out.sampling.stop_at_end = true;
  if (story_) {
    out.sampling.max_new_tokens = story_->maxTokens;
    out.sampling.end_at_sentence_after = story_->minTokens;
  }
  if (randomSeed_->isChecked()) {
    // Drawn here (not by the engine) so every model of a comparison shares it.
    seedEdit_->setText(QString::number(drawSeed()));
  }
  bool ok = false;
  const quint64 seed = seedEdit_->text().trimmed().toULongLong(&ok);
  if (!ok || seed == 0) {
    seedError_->showError(tr("use a whole number from 1 (or tick random)"));
    lastError_ = tr("seed: ") + seedError_->text();
    return false;
  }
  out.sampling.seed = seed;
  return true;
}

void PlaygroundView::rebuildColumns(const QVector<QPair<QString, bool>>& runDirs) {
  for (Column& c : columns_) delete c.box;
  columns_.clear();
  for (const auto& [dir, trained] : runDirs) {
    Column c;
    c.box = new QWidget;
    auto* v = new QVBoxLayout(c.box);
    v->setContentsMargins(0, 0, 0, 0);
    const int row = runs_->indexOf(dir);
    const RunEntry& run = runs_->at(row);
    const hsm::WhatIf edits = engine_->whatIf(dir);
    const QString which = edits.empty() ? QString()
                          : trained     ? tr(" · <i>trained</i>")
                                        : tr(" · <span style='color:#a05a00'><i>edited: %1</i></span>")
                                              .arg(qstr(hsm::what_if_label(edits)).toHtmlEscaped());
    c.title = new QLabel(QStringLiteral("<span style='color:%1'>■</span> <b>%2</b> · %3")
                             .arg(run.color.name(), run.name().toHtmlEscaped(), qstr(run.model.name).toHtmlEscaped()) +
                         which);
    c.text = new TokenText;
    c.text->setTinted(tint_->isChecked());
    c.text->setObjectName(QStringLiteral("output_%1").arg(columns_.size()));
    c.text->setTextSize(textSize_);
    connect(c.text, &TokenText::textSizeStep, this, [this](double step) { setTextSize(textSize_ + step); });
    c.status = new QLabel(tr("waiting…"));
    c.status->setObjectName(QStringLiteral("status_%1").arg(columns_.size()));
    c.status->setWordWrap(true);
    const int index = static_cast<int>(columns_.size());
    connect(c.text, &TokenText::tokenClicked, this, [this, index](int token, bool add) {
      QVector<int> tokens = add ? columns_[index].selected : QVector<int>();
      if (tokens.contains(token))
        tokens.removeAll(token);  // shift-click on a chosen token takes it out
      else
        tokens << token;
      if (tokens.isEmpty()) {
        columns_[index].selected.clear();
        columns_[index].text->clearProvenance();
        return;
      }
      showProvenance(index, tokens);
    });
    // Leaving provenance mode takes its caption with it.
    connect(c.text, &TokenText::provenanceCleared, this, [this, index] {
      columns_[index].selected.clear();
      columns_[index].status->setText(columns_[index].generationNote);
    });
    v->addWidget(c.title);
    v->addWidget(c.text, 1);
    v->addWidget(c.status);
    // Four columns (three demo models and a run of one's own) fit beside the form at 1280 pixels.
    c.box->setMinimumWidth(runDirs.size() > 2 ? 200 : runDirs.size() > 1 ? 280 : 400);
    columnsLayout_->addWidget(c.box, 1);
    columns_.push_back(c);
  }
}

bool PlaygroundView::generate() {
  lastError_.clear();
  if (isGenerating()) {
    lastError_ = tr("a generation is running");
    return false;
  }
  QVector<QPair<QString, bool>> dirs;
  auto add = [&](const QString& dir) {
    dirs.append({dir, false});
    // An edited run's trained model beside it, for the same seed.
    if (compareTrained_->isChecked() && !engine_->whatIf(dir).empty()) dirs.append({dir, true});
  };
  if (compare_->isChecked()) {
    for (int i = 0; i < runs_->count(); ++i)  // a task run reads no text: left out
      if (runs_->at(i).has_info && runs_->at(i).task.empty()) add(runs_->at(i).dir);
  } else if (const RunEntry* run = runs_->currentRun(); run && run->has_info && !run->task.empty()) {
    lastError_ = taskRunLine(*run);
    hint_->setText(lastError_);
    return false;
  } else if (run && run->has_info) {
    if (story_) dirs.append({run->dir, false});  // a story: the current model alone
    else add(run->dir);
  }
  if (dirs.isEmpty()) {
    lastError_ = tr("no model: open a run folder (File › Open run folder) or train one first");
    hint_->setText(lastError_);
    return false;
  }
  hsm::GenerateOptions settings;
  if (!options(settings)) return false;
  const QString text = prompt();
  rebuildColumns(dirs);
  for (Column& c : columns_) c.text->setPrompt(text);
  hint_->setText(dirs.size() > 1 ? tr("Same prompt and seed %1 on %2 models.").arg(settings.sampling.seed).arg(dirs.size())
                                 : QString());
  state_->start(dirs, text, settings);
  updateButtons();
  return true;
}

void PlaygroundView::onFinished(const QVector<int>& notRun) {
  for (int i : notRun) columns_[i].status->setText(tr("not run (stopped)"));
  updateButtons();
  emit generationFinished();
}

void PlaygroundView::stop() { state_->stop(); }

void PlaygroundView::demoModelsOpened() {
  if (!paperPrompts_.isEmpty()) setPrompt(paperPrompts_.first());
}

void PlaygroundView::onGenerated(int column, const hsm::GenerationResult& r) {
  Column& c = columns_[column];
  const bool stopping = state_->isStopping();
  QString end = r.ended          ? tr("reached the end of the story")
                : r.sentence_end ? tr("ended at a sentence end")
                : stopping       ? tr("stopped")
                                 : tr("reached max tokens");
  if (stopping && !r.ended) c.text->appendNote(tr("[stopped]"));
  c.status->setText(tr("%1 tokens · %2 tok/s · seed %3 · %4")
                        .arg(r.tokens.size())
                        .arg(QString::number(r.tokens_per_s, 'f', 0))
                        .arg(r.seed)
                        .arg(end) +
                    (r.decode_threads == 1   ? tr(" · decoding on 1 thread")
                     : r.decode_threads > 1 ? tr(" · decoding on %1 threads").arg(r.decode_threads)
                                            : QString()) +
                    (r.prompt_tokens_cut > 0 ? tr(" · the prompt is %1 tokens: the model saw only its last %2 (its context)")
                                                   .arg(r.prompt_tokens)
                                                   .arg(r.prompt_tokens - r.prompt_tokens_cut)
                                             : QString()));
  c.generationNote = c.status->text();
  emit columnFinished(column, r);
}

bool PlaygroundView::showProvenance(int column, const QVector<int>& tokens) {
  lastError_.clear();
  if (column < 0 || column >= columns_.size())
    lastError_ = tr("no output column %1").arg(column);
  else if (isGenerating())
    lastError_ = tr("wait for the generation to finish");
  else if (state_->column(column).probing)
    lastError_ = tr("the provenance is still being read");
  else if (tokens.isEmpty())
    lastError_ = tr("choose a generated token");
  if (lastError_.isEmpty())
    for (int t : tokens)
      if (t < 0 || t >= columns_[column].text->tokenCount()) lastError_ = tr("no generated token %1").arg(t);
  if (!lastError_.isEmpty()) {
    hint_->setText(lastError_);
    return false;
  }
  Column& c = columns_[column];
  c.selected = tokens;
  const int last = *std::max_element(tokens.begin(), tokens.end());
  // The text the model saw up to the newest chosen token: <|endoftext|>, the prompt, and the
  // generated tokens so far (the engine keeps the last context of them).
  c.status->setText(tr("reading what the chosen tokens drew on…"));
  state_->startProvenance(column, c.text->tokenIds().mid(0, last + 1));
  return true;
}

void PlaygroundView::onProbed(int column) {
  {
    Column& c = columns_[column];
    const hsm::Probe& p = state_->column(column).probe;
    const int last = *std::max_element(c.selected.begin(), c.selected.end());
    const int firstGenerated = static_cast<int>(p.length) - 1 - last;  // piece index of generated token 0
    std::vector<int64_t> positions;
    QVector<int> shown;
    int outside = 0;
    for (int t : c.selected) {
      if (firstGenerated + t < 0) {
        ++outside;  // before the last context of tokens: the rollout does not reach it
        continue;
      }
      positions.push_back(firstGenerated + t);
      shown << firstGenerated + t;
    }
    QStringList pieces;
    for (const std::string& piece : p.tokens) pieces << QString::fromStdString(piece);
    c.text->showProvenance(pieces, hsm::rollout_provenance(p, positions), firstGenerated, shown);
    c.provenanceNote =
        tr("What %n chosen token(s) drew on (blue), the sum of their rows of the attention rollout through all %1 "
           "layers. %2 Click another token, shift-click to add one, click elsewhere to go back.",
           "", static_cast<int>(shown.size()))
            .arg(p.rollout.size())
            .arg(rollout_kind_text(p.matrix_kinds));
    if (outside > 0)
      c.provenanceNote += tr(" %n chosen token(s) lie before the model's context and are left out.", "", outside);
    c.status->setText(c.provenanceNote);
    emit provenanceFinished();
  }
}

void PlaygroundView::onFailed(int column, const QString& message) {
  columns_[column].text->appendNote(tr("[error: %1]").arg(message));
  columns_[column].status->setText(tr("failed"));
  lastError_ = message;
}

QString PlaygroundView::taskRunLine(const RunEntry& run) {
  return tr("%1 was trained on a task (%2): a task run generates no text. See its answers on the task's test "
            "examples in the Diagnostics and Probe views.")
      .arg(run.name(), QString::fromStdString(run.task));
}

void PlaygroundView::updateButtons() {
  bool any = false;
  for (int i = 0; i < runs_->count(); ++i) any = any || (runs_->at(i).has_info && runs_->at(i).task.empty());
  const RunEntry* current = runs_->currentRun();
  const bool task = current && !current->task.empty();
  const bool ready = compare_->isChecked() ? any : (current && current->has_info && !task);
  generateButton_->setEnabled(ready && !isGenerating());
  stopButton_->setEnabled(isGenerating());
  if (!isGenerating() && !compare_->isChecked() && task)
    hint_->setText(taskRunLine(*current));  // said whatever the columns show: they are of text runs
  else if (!isGenerating() && columns_.isEmpty())
    hint_->setText(ready ? tr("Ready: %1. Type a prompt or pick one of the paper's, then Generate.")
                               .arg(compare_->isChecked() ? tr("every open model") : current->name())
                         : tr("No model yet: open a run folder (Ctrl+O) or train one in the Training view. A run "
                              "can be tried here as soon as it has written its first checkpoint."));
}

}  // namespace studio
