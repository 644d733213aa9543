#include "gui/views/start_page.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "gui/engine_types.h"
#include "gui/widgets/glossary.h"
#include "gui/studio_settings.h"
#include "gui/widgets/layout_helpers.h"
#include "hsm/presets.h"

namespace studio {

StartPage::StartPage(QWidget* parent) : QWidget(parent) {
  // In this order (the focus moves through the page as it was made).
  QLabel* title = buildTitle();
  QGroupBox* quick = buildQuickStart();
  QGroupBox* open = buildOpenCard();
  QGroupBox* train = buildTrainCard();
  layOut(title, quick, open, train);
  refreshRecent();
}

QLabel* StartPage::buildTitle() {
  auto* title = new QLabel(tr("<h1>HSM Studio</h1>"
                              "<p style='font-size:12pt'>Train, inspect and play with small language models whose "
                              "attention is replaced by <b>Hierarchical Shift Mixing</b>: layer <i>l</i> mixes token "
                              "<i>t</i> with token <i>t − 2<sup>l</sup></i>, so log<sub>2</sub>T layers reach every "
                              "earlier token in linear time.</p>"));
  title->setWordWrap(true);
  return title;
}

QGroupBox* StartPage::buildQuickStart() {
  // The first minute: one button from an empty studio to live training curves.
  auto* quick = new QGroupBox(tr("New here?"));
  auto* quickLayout = new QHBoxLayout(quick);
  auto* quickButton = new QPushButton(tr("Train a small model now"));
  quickButton->setObjectName(QStringLiteral("train_starter"));
  quickButton->setMinimumHeight(44);
  quickButton->setDefault(true);
  auto* quickText = new QLabel(
      tr("Trains the <b>starter</b> model (7 HSM layers, 1.2M parameters) on the bundled slice of "
         "TinyStories (1,728 short stories): about two minutes on a laptop CPU, with the loss and accuracy "
         "curves filling in as it learns. Then let it write a story in the <b>Playground</b>."));
  quickText->setWordWrap(true);
  quickLayout->addWidget(quickButton);
  quickLayout->addWidget(quickText, 1);
  quickButton->setEnabled(!hsm::starter_corpus().empty());
  if (!quickButton->isEnabled()) quickButton->setToolTip(tr("The starter corpus is not installed."));
  connect(quickButton, &QPushButton::clicked, this, &StartPage::trainStarterRequested);
  return quick;
}

QGroupBox* StartPage::buildOpenCard() {
  auto* open = new QGroupBox(tr("Open a trained model"));
  auto* openLayout = new QVBoxLayout(open);
  auto* openButton = new QPushButton(tr("Open run folder…"));
  openButton->setObjectName(QStringLiteral("open_run"));
  openButton->setMinimumHeight(36);
  recent_ = new QListWidget;
  recent_->setObjectName(QStringLiteral("recent_runs"));
  recent_->setMaximumHeight(220);
  auto* openText = new QLabel(tr("A folder written by the studio or by <code>hsm train</code> (config.json, "
                                 "model.safetensors, tokenizer.model, metrics.jsonl). A run that is still training "
                                 "in another process is followed live."));
  openText->setWordWrap(true);
  openLayout->addWidget(openText);
  openLayout->addWidget(openButton);
  openLayout->addWidget(new QLabel(tr("Recent:")));
  openLayout->addWidget(recent_, 1);
  connect(openButton, &QPushButton::clicked, this, &StartPage::openRunRequested);
  // The "(none yet)" placeholder has no folder: a click on it opens nothing (it asked to open "").
  auto openItem = [this](QListWidgetItem* item) {
    const QString dir = item->data(Qt::UserRole).toString();
    if (!dir.isEmpty()) emit openRecentRequested(dir);
  };
  connect(recent_, &QListWidget::itemActivated, this, openItem);
  connect(recent_, &QListWidget::itemClicked, this, openItem);
  return open;
}

QGroupBox* StartPage::buildTrainCard() {
  auto* train = new QGroupBox(tr("Train a new model"));
  auto* form = new QFormLayout(train);
  preset_ = new QComboBox;
  preset_->setObjectName(QStringLiteral("start_preset"));
  for (const std::string& name : hsm::preset_names()) preset_->addItem(qstr(name));
  help::setPresetToolTips(preset_);
  preset_->setCurrentText(QStringLiteral("hsm_ab"));
  corpus_ = new QLineEdit(StudioSettings::lastCorpus());
  corpus_->setObjectName(QStringLiteral("start_corpus"));
  corpus_->setPlaceholderText(tr("TinyStories .txt / .json(l), a text file or a folder"));
  auto* browse = new QPushButton(tr("Browse…"));
  auto* corpusRow = new QHBoxLayout;
  corpusRow->addWidget(corpus_, 1);
  corpusRow->addWidget(browse);
  auto* go = new QPushButton(tr("Set up training →"));
  go->setObjectName(QStringLiteral("setup_training"));
  go->setMinimumHeight(36);
  form->addRow(new QLabel(tr("Every row of the paper's Table 1 is a preset (about 5M parameters each).")));
  form->addRow(tr("Preset"), preset_);
  form->addRow(tr("Corpus"), corpusRow);
  form->addRow(go);
  auto* how = new QLabel(whatHappensNext());
  how->setWordWrap(true);
  form->addRow(how);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Corpus file"), StudioSettings::dialogFolder(corpus_->text()),
                                     tr("Text or JSON (*.txt *.json *.jsonl);;All files (*)"));
    if (path.isEmpty()) return;
    StudioSettings::setDialogFolder(path);
    corpus_->setText(path);
  });
  connect(go, &QPushButton::clicked, this, [this] { emit trainRequested(preset_->currentText(), corpus_->text()); });
  return train;
}

QString StartPage::whatHappensNext() {
  return tr("<p><b>What happens next</b></p><ol>"
            "<li>The Training view opens with the paper's hyper-parameters filled in; every field "
            "says what it does when you hover it.</li>"
            "<li><b>Start</b> trains a tokenizer on the corpus (cached for the next run), encodes "
            "it, and trains; the curves update live, and Pause / Stop keep a checkpoint.</li>"
            "<li>The <b>Playground</b> generates from the run as soon as its first checkpoint is "
            "written.</li></ol>"
            "<p>On a laptop CPU a batch of 16–32 keeps steps short: the paper's batch of 256 takes "
            "15–20 s per step on two cores.</p>");
}

void StartPage::layOut(QLabel* title, QGroupBox* quick, QGroupBox* open, QGroupBox* train) {
  auto* cards = new QHBoxLayout;
  cards->addWidget(open, 1);
  cards->addWidget(train, 1);
  auto* inner = new QWidget;
  inner->setMaximumWidth(1000);
  auto* innerLayout = new QVBoxLayout(inner);
  innerLayout->addStretch(1);
  innerLayout->addWidget(title);
  innerLayout->addWidget(quick);
  innerLayout->addLayout(cards);
  innerLayout->addStretch(2);
  auto* centred = new QWidget;
  auto* centredLayout = new QHBoxLayout(centred);
  centredLayout->addStretch(1);
  centredLayout->addWidget(inner, 4);
  centredLayout->addStretch(1);
  // On a short window the page scrolls rather than set the window's smallest height (issue 48).
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scrollWhenShort(centred));
}

void StartPage::refreshRecent() {
  recent_->clear();
  for (const QString& dir : StudioSettings::recentRuns()) {
    auto* item = new QListWidgetItem(QDir(dir).dirName() + QStringLiteral("   ") + dir, recent_);
    item->setData(Qt::UserRole, dir);
  }
  if (recent_->count() == 0) (new QListWidgetItem(tr("(none yet)"), recent_))->setFlags(Qt::NoItemFlags);
}

}  // namespace studio
