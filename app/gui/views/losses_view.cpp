#include "gui/views/losses_view.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QTextCursor>
#include <QTextEdit>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "gui/engine/engine_host.h"
#include "gui/engine_types.h"
#include "gui/run_evaluation.h"
#include "gui/run_list.h"
#include "gui/widgets/notice_bar.h"
#include "gui/studio_settings.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/widget_export.h"
#include "gui/widgets/colour_maps.h"
#include "hsm/dataset.h"
#include "hsm/evaluator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/task_run.h"
#include "hsm/tokenizer.h"

namespace studio {
namespace {


// The width of a histogram bin (nats).
constexpr double kHistogramBin = 0.25;

struct DocumentLoss {
  int64_t document = 0;
  int64_t tokens = 0;
  double loss = 0;
};

// Each document's mean loss, hardest first.
std::vector<DocumentLoss> documents_by_loss(const hsm::TokenScores& s) {
  std::map<int64_t, DocumentLoss> by;
  for (const hsm::TokenScore& t : s.tokens) {
    DocumentLoss& d = by[t.document];
    d.document = t.document;
    ++d.tokens;
    d.loss += t.loss;
  }
  std::vector<DocumentLoss> out;
  for (auto& [doc, d] : by) {
    d.loss /= static_cast<double>(d.tokens);
    out.push_back(d);
  }
  std::stable_sort(out.begin(), out.end(), [](const DocumentLoss& a, const DocumentLoss& b) { return a.loss > b.loss; });
  return out;
}

}  // namespace

LossesView::LossesView(RunList* runs, EngineHost* engine, QWidget* parent) : StudioView(runs, engine, parent) {
  build();
  connectSignals();
  leaveRun();
}

void LossesView::build() {
  dataEdit_ = new QLineEdit;
  dataEdit_->setObjectName(QStringLiteral("losses_data"));
  dataEdit_->setPlaceholderText(tr("the run's corpus"));
  dataEdit_->setToolTip(tr("The corpus whose validation split is scored (empty: the one the run was trained on)"));
  maxWindows_ = new QSpinBox;
  maxWindows_->setObjectName(QStringLiteral("losses_max_windows"));
  maxWindows_->setRange(0, 1000000);
  maxWindows_->setValue(64);
  maxWindows_->setSpecialValueText(tr("all"));
  maxWindows_->setToolTip(tr("Score the first N validation windows (0: all), as hsm eval --max-windows"));
  scoreButton_ = new QPushButton(tr("Score every token"));
  scoreButton_->setObjectName(QStringLiteral("losses_score"));
  scoreButton_->setToolTip(
      tr("Score every predicted token of the current run's validation windows (the ones it was trained on), and "
         "every other open run with the same tokenizer on the same windows"));
  cancelButton_ = new QPushButton(tr("Cancel"));
  cancelButton_->setObjectName(QStringLiteral("losses_cancel"));
  exportButton_ = new QPushButton(tr("Export…"));
  exportButton_->setObjectName(QStringLiteral("losses_export"));
  exportButton_->setToolTip(tr("The three plots as PNG, PDF and SVG, and their numbers as CSV, into a folder"));
  progress_ = new QProgressBar;
  progress_->setObjectName(QStringLiteral("losses_progress"));
  progress_->setRange(0, 1000);
  progress_->setTextVisible(true);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("losses_status"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  compare_ = new QComboBox;
  compare_->setObjectName(QStringLiteral("losses_compare"));
  compare_->setToolTip(tr("Compare the run with another one scored on the same windows: the difference B − A per token "
                          "(blue: B better, red: B worse), the documents sorted by it"));
  compare_->setSizeAdjustPolicy(QComboBox::AdjustToContents);

  auto* row = new QHBoxLayout;
  row->addWidget(scoreButton_);
  row->addWidget(cancelButton_);
  row->addWidget(dataEdit_, 1);
  row->addWidget(maxWindows_);
  row->addWidget(new QLabel(tr("windows")));
  row->addWidget(progress_, 1);
  row->addWidget(new QLabel(tr("compare with")));
  row->addWidget(compare_);
  row->addWidget(exportButton_);

  documents_ = new QTableWidget(0, 3);
  documents_->setObjectName(QStringLiteral("losses_documents"));
  documents_->setHorizontalHeaderLabels({tr("Document"), tr("Tokens"), tr("Mean loss")});
  documents_->verticalHeader()->hide();
  documents_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  documents_->setSelectionBehavior(QAbstractItemView::SelectRows);
  documents_->setSelectionMode(QAbstractItemView::SingleSelection);
  documents_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  documents_->setToolTip(tr("The validation documents, the hardest (highest mean loss) first"));

  text_ = new QTextEdit;
  text_->setObjectName(QStringLiteral("losses_text"));
  text_->setReadOnly(true);
  text_->viewport()->installEventFilter(this);

  byPosition_ = new PlotPanel(tr("Loss by position"), tr("position in the window"), tr("mean loss (nats)"));
  byPosition_->setObjectName(QStringLiteral("losses_by_position"));
  byDistance_ = new PlotPanel(tr("Loss by distance"), tr("tokens back to its previous occurrence"), tr("mean loss (nats)"));
  byDistance_->setObjectName(QStringLiteral("losses_by_distance"));
  byFrequency_ = new PlotPanel(tr("Loss by frequency"), tr("times the token occurs in the training split"),
                               tr("mean loss (nats)"));
  byFrequency_->setObjectName(QStringLiteral("losses_by_frequency"));
  histogram_ = new PlotPanel(tr("Loss histogram"), tr("loss (nats)"), tr("share of tokens"));
  histogram_->setObjectName(QStringLiteral("losses_histogram"));
  for (PlotPanel* p : {byPosition_, byDistance_, byFrequency_, histogram_}) p->setLegendBelow(3);  // over no curve

  // The colour key of the text's tint: the losses' palette, or the difference's in compare mode.
  tintKey_ = new QLabel;
  tintKey_->setObjectName(QStringLiteral("losses_tint_key"));
  tintKey_->setWordWrap(true);
  auto* textBox = new QWidget;
  auto* textLayout = new QVBoxLayout(textBox);
  textLayout->setContentsMargins(0, 0, 0, 0);
  textLayout->setSpacing(2);
  textLayout->addWidget(tintKey_);
  textLayout->addWidget(text_, 1);
  auto* top = new QSplitter(Qt::Horizontal);
  top->addWidget(documents_);
  top->addWidget(textBox);
  top->setStretchFactor(0, 1);
  top->setStretchFactor(1, 3);
  auto* plotsRow = new QSplitter(Qt::Horizontal);
  plotsRow->addWidget(byPosition_);
  plotsRow->addWidget(byDistance_);
  plotsRow->addWidget(byFrequency_);
  plotsRow->addWidget(histogram_);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(top);
  split->addWidget(plotsRow);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(makeWhatIfNotice(QStringLiteral("losses_whatif_box"), tr("The losses are of the edited model.")));
  layout->addLayout(row);
  layout->addWidget(status_);
  layout->addWidget(split, 1);
}

void LossesView::connectSignals() {
  connect(scoreButton_, &QPushButton::clicked, this, [this] { score(); });
  connect(cancelButton_, &QPushButton::clicked, this, &LossesView::cancel);
  connect(exportButton_, &QPushButton::clicked, this, [this] {
    const QString folder =
        QFileDialog::getExistingDirectory(this, tr("Export the losses' plots"), StudioSettings::dialogFolder(QString()));
    if (folder.isEmpty()) return;
    StudioSettings::setDialogFolder(folder);
    QString error;
    exportPlots(folder, &error);
    if (error.isEmpty())
      error = exportTokens(QDir(folder).filePath(export_stem(scoredRun_, QStringLiteral("losses")) +
                                                 QStringLiteral("-tokens.csv")));
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Export failed"), error);
  });
  connect(compare_, &QComboBox::currentIndexChanged, this, [this] {
    if (hasScores() && !isScoring()) drawDocuments();
  });
  connect(documents_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    if (row < 0) return;
    if (QTableWidgetItem* item = documents_->item(row, 0)) showDocument(item->data(Qt::UserRole).toLongLong());
  });
}

void LossesView::setMaxWindows(int windows) { maxWindows_->setValue(windows); }
void LossesView::setDataPath(const QString& path) { dataEdit_->setText(path); }

const hsm::TokenScores& LossesView::scores() const {
  static const hsm::TokenScores none;
  const auto it = scores_.constFind(scoredRun_);
  return it == scores_.constEnd() ? none : *it;
}

const hsm::TokenScores* LossesView::scoresOf(const QString& runDir) const {
  const auto it = scores_.constFind(runDir);
  return it == scores_.constEnd() ? nullptr : &*it;
}

QStringList LossesView::comparedRuns() const {
  QStringList out;
  for (const QString& dir : order_)
    if (dir != scoredRun_ && scores_.contains(dir)) out << dir;
  return out;
}

void LossesView::updateButtons() {
  // A task run scores its test examples: no corpus, windows or comparison to choose.
  const RunEntry* run = currentRun();
  const bool task = run && !run->task.empty();
  scoreButton_->setText(task ? tr("Score test examples") : tr("Score every token"));
  dataEdit_->setEnabled(!task);
  maxWindows_->setEnabled(!task);
  scoreButton_->setEnabled(!isScoring());
  cancelButton_->setEnabled(isScoring());
  exportButton_->setEnabled(hasScores() && !isScoring());
}

bool LossesView::score() {
  lastError_.clear();
  const RunEntry* run = currentRun();
  if (isScoring())
    lastError_ = tr("Scoring is already under way.");
  else if (!run)
    lastError_ = tr("Open a run first.");
  else if (!run->has_info)
    lastError_ = tr("%1 has no checkpoint yet.").arg(run->name());
  if (lastError_.isEmpty() && !run->task.empty()) {
    scoreTask(*run);
    return true;
  }
  QString data = dataEdit_->text().trimmed();
  if (data.isEmpty() && run && run->has_info) data = qstr(run->info.data_path);
  if (lastError_.isEmpty() && (data.isEmpty() || !QFileInfo::exists(data)))
    lastError_ = tr("Choose a corpus: %1").arg(data.isEmpty() ? tr("the run records none") : tr("%1 does not exist").arg(data));
  if (!lastError_.isEmpty()) {
    status_->setText(lastError_);
    return false;
  }
  // Every run on the current run's windows: its trained layout, named explicitly so that the
  // other runs are scored on the same windows whatever they were trained on.
  const std::string windows = run->info.training.windows;
  const int maxWindows = maxWindows_->value();
  clearShown();
  scores_.clear();
  notes_.clear();
  order_.clear();
  scoredRun_ = run->dir;
  scoredStamp_ = run->config_stamp;
  order_ << run->dir;
  for (int i = 0; i < runs_->count(); ++i)  // task runs read no text: not compared
    if (runs_->at(i).dir != run->dir && runs_->at(i).has_info && runs_->at(i).task.empty()) order_ << runs_->at(i).dir;
  asked_ = static_cast<int>(order_.size());
  // The headline is the run's own evaluation on every window: read from its record when it has
  // one, else computed beside the scores when fewer windows are scored.
  evaluationLoss_ = std::nan("");
  evaluationWindows_ = 0;
  const std::optional<RunEvaluation> recorded = recorded_evaluation(*run, data);
  if (recorded) evaluationLoss_ = recorded->loss;
  ask_ = {data, windows, maxWindows, maxWindows > 0 && !recorded};
  ask(0);  // the others once its tokenizer is known
  progress_->setValue(0);
  progress_->setFormat(tr("scoring %1 · %p%").arg(runName(run->dir)));
  status_->setText(tr("Scoring every token of %1…").arg(runName(run->dir)));
  updateButtons();
  return true;
}

void LossesView::ask(int index) {
  const QString dir = order_[index];
  // Another run is compared only with the same tokenizer: refused (by the engine's check, naming
  // both tokenizers) before anything of it is scored.
  struct Same {
    std::string run, hash;
    int64_t vocab = 0;
  } same;
  if (const hsm::TokenScores* a = index > 0 ? scoresOf(scoredRun_) : nullptr)
    same = {a->run, a->tokenizer_hash, a->vocab_size};
  Reply<LossScoring> reply = engine_->analysis().stream<LossScoring>(dir, [ask = ask_, same, index](const CallContext& c) {
    const std::shared_ptr<const hsm::Model> model = c.model();
    const hsm::Tokenizer& tok = model->tokenizer();
    if (!same.hash.empty())
      hsm::require_same_tokenizer(same.run, same.hash, same.vocab, c.runDir().toStdString(), tok.hash(),
                                  model->config().vocab_size);
    hsm::EvalOptions options;
    options.windows = ask.windows;
    options.max_windows = ask.maxWindows;
    options.cache_dir = hsm::default_cache_dir();
    options.cancel = c.cancelFlag();
    options.progress = [&](const std::string& stage, double f) { c.progress(stage, f); };
    LossScoring out;
    out.scores = hsm::Evaluator(model).score_tokens(c.evalSet(ask.data, options), options);
    if (index == 0 && ask.evaluateAll) {
      hsm::EvalOptions all = options;
      all.max_windows = 0;
      all.progress = [&](const std::string& stage, double f) { c.progress(stage + " (every window)", f); };
      out.evaluation = c.trainedLoss(ask.data, all);
    }
    out.pieces.reserve(static_cast<size_t>(out.scores.vocab_size));
    for (int32_t id = 0; id < out.scores.vocab_size; ++id) {
      std::string piece = tok.piece(id);
      if (piece == "<0x0A>") piece = "↵\n";  // a line break shows as one, marked so it can be hovered
      out.pieces.push_back(std::move(piece));
    }
    return out;
  });
  connect(reply.feed(), &CallFeed::progress, this, [this, index, name = runName(dir)](const QString& stage, double f) {
    progress_->setValue(static_cast<int>((index + f) / std::max(1, asked_) * 1000));
    progress_->setFormat(QStringLiteral("%1 · %2 · %p%").arg(name, stage));
  });
  reply.result()
      .then(this, [this, dir](const LossScoring& s) { onScored(dir, s); })
      .onFailed(this, [this, dir](const CallFailed& e) { onFailed(dir, e); });
  scoring_.insert(dir, reply);
}

QString LossesView::exportTokens(const QString& path) const {
  if (!hasScores()) return tr("No losses to export: score first.");
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text))
    return tr("Cannot write %1: %2").arg(path, file.errorString());
  QTextStream out(&file);
  QStringList header{"window", "position", "input", "target", "text", "document", "distance"};
  QList<const hsm::TokenScores*> runs;
  for (const QString& dir : order_)
    if (const hsm::TokenScores* r = scoresOf(dir)) {
      runs << r;
      for (const char* f : {"loss", "prob", "rank"}) header << runName(dir) + QLatin1Char(' ') + QLatin1String(f);
    }
  out << header.join(QLatin1Char(',')) << '\n';
  const hsm::TokenScores& a = scores();
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    const hsm::TokenScore& t = a.tokens[i];
    QString text = static_cast<size_t>(t.target) < pieces_.size() ? qstr(pieces_[static_cast<size_t>(t.target)]) : QString();
    text.remove(QLatin1Char('\n'));  // a line break is its ↵: one line per token
    text.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    out << t.window << ',' << t.position << ',' << t.input << ',' << t.target << ",\"" << text << "\"," << t.document
        << ',' << (t.distance > 0 ? QString::number(t.distance) : QString());
    for (const hsm::TokenScores* r : runs)
      out << ',' << QString::number(r->tokens[i].loss, 'g', 17) << ',' << QString::number(r->tokens[i].prob, 'g', 17)
          << ',' << r->tokens[i].rank;
    out << '\n';
  }
  out.flush();
  return file.error() == QFile::NoError ? QString() : tr("Cannot write %1: %2").arg(path, file.errorString());
}

QString LossesView::statusText() const { return status_->text(); }

QString LossesView::taskRunLine(const RunEntry& run) {
  return tr("%1 was trained on a task (%2) and reads no text, so it has no losses per token of a corpus: see each "
            "answer of a test example in the Diagnostics and Probe views.")
      .arg(run.name(), qstr(run.task));
}

void LossesView::scoreTask(const RunEntry& run) {
  // As `hsm eval RUN` on a task run: fresh test examples (never trained on), scored on the
  // answers. Cheap for the tiny models a task trains: one batch pass over them.
  constexpr int64_t kExamples = 256;
  cancel();
  scores_.clear();
  clearShown();
  scoredRun_ = run.dir;
  taskScoring_ = true;
  updateButtons();
  const QString intro = taskRunLine(run);
  status_->setText(intro + tr(" Scoring %1 test examples…").arg(kExamples));
  // The run's model as the other views read it: with its what-if edit (the Weights view), if any.
  const bool edited = !engine_->whatIf(run.dir).empty();
  engine_->analysis()
      .call<hsm::TaskScore>(run.dir,
                            [](const CallContext& c) { return hsm::Evaluator(c.model()).score_task(kExamples); })
      .then(this,
            [this, intro, edited, dir = run.dir](const hsm::TaskScore& s) {
              taskScoring_ = false;
              updateButtons();
              if (dir != currentRunDir()) return;
              status_->setText(intro + tr(" Its first %1 test examples: answer accuracy %2 (%3 answers), sequence "
                                          "accuracy %4, loss %5 nats on the answers (%6).")
                                           .arg(s.examples)
                                           .arg(s.answer_accuracy, 0, 'f', 3)
                                           .arg(s.answers)
                                           .arg(s.sequence_accuracy, 0, 'f', 3)
                                           .arg(s.loss, 0, 'f', 4)
                                           .arg(edited ? tr("the edited model: its what-if edit is in")
                                                       : tr("as hsm eval scores them")));
            })
      .onFailed(this, [this, intro, dir = run.dir](const CallFailed& e) {
        taskScoring_ = false;
        updateButtons();
        lastError_ = e.message();
        if (dir == currentRunDir()) status_->setText(intro + tr(" Scoring its test examples failed: %1").arg(e.message()));
      });
}

void LossesView::cancel() {
  for (const Reply<LossScoring>& r : scoring_) r.cancel();
}

void LossesView::onScored(const QString& dir, const LossScoring& s) {
  if (scoring_.contains(dir) && following()) {
    if (dir == scoredRun_) {
      scores_.insert(dir, s.scores);
      if (ask_.maxWindows == 0) {  // every window scored: the scores' mean is the evaluation
        evaluationLoss_ = s.scores.result.loss;
        evaluationWindows_ = s.scores.result.window_count;
      } else if (s.evaluation.window_count > 0) {
        evaluationLoss_ = s.evaluation.loss;
        evaluationWindows_ = s.evaluation.window_count;
      }
      pieces_ = s.pieces;
      for (int i = 1; i < order_.size(); ++i) ask(i);
    } else if (const hsm::TokenScores* a = scoresOf(scoredRun_); a && a->tokenizer_hash != s.scores.tokenizer_hash) {
      notes_ << tr("%1 left out: another tokenizer").arg(runName(dir));
    } else if (a && a->tokens.size() != s.scores.tokens.size()) {
      notes_ << tr("%1 left out: other windows (another context)").arg(runName(dir));
    } else {
      scores_.insert(dir, s.scores);
    }
  }
  finishOne(dir);
}

void LossesView::onFailed(const QString& dir, const CallFailed& e) {
  if (following()) {
    if (e.cancelled())
      lastError_ = tr("Scoring cancelled.");
    else if (dir == scoredRun_)
      lastError_ = tr("Scoring %1 failed: %2").arg(runName(dir), e.message());
    else
      notes_ << tr("%1 left out: %2").arg(runName(dir), e.message());
  }
  finishOne(dir);
}

void LossesView::finishOne(const QString& dir) {
  scoring_.remove(dir);
  if (isScoring()) return;
  updateButtons();
  if (!following()) return;  // the view follows another run by now
  // The runs asked after the scored run are only kept beside it.
  if (!hasScores()) {
    scores_.clear();
    progress_->setValue(0);
    progress_->setFormat(tr("idle"));
    if (lastError_.isEmpty()) lastError_ = tr("Scoring %1 failed.").arg(runName(scoredRun_));
    status_->setText(lastError_);
    return;
  }
  progress_->setValue(1000);
  progress_->setFormat(tr("done"));
  const hsm::TokenScores& s = scores();
  // The headline first: the run's own evaluation on every window; the windows scored token by
  // token beside it, named as fewer when they are.
  const QString layout = qstr(s.result.windows);
  QString text = tr("%1: %2").arg(runName(scoredRun_), std::isnan(evaluationLoss_)
                                                            ? tr("its evaluation on every window unknown")
                                                            : evaluation_text(evaluationLoss_, evaluationWindows_, layout));
  text += ask_.maxWindows == 0 ? tr(" · every token of them below (%1 tokens)").arg(s.tokens.size())
                               : tr(" · below, %1 (%2 tokens)")
                                     .arg(partial_loss_text(s.result.loss, s.result.window_count))
                                     .arg(s.tokens.size());
  for (const QString& other : comparedRuns())
    text += tr("; %1 on the same %2 windows: %3 nats")
                .arg(runName(other))
                .arg(scores_[other].result.window_count)
                .arg(scores_[other].result.loss, 0, 'f', 4);
  if (!notes_.isEmpty()) text += QStringLiteral(". ") + notes_.join(QStringLiteral("; "));
  status_->setText(text);
  fillCompareBox();
  drawDocuments();
  drawPlots();
}

void LossesView::leaveRun() {
  const QString dir = currentRunDir();
  // The same run at the same checkpoint: its scores still hold (a new checkpoint's do not).
  const RunEntry* run = currentRun();
  if (dir == scoredRun_ && run && run->config_stamp == scoredStamp_ && (hasScores() || isScoring())) return;
  cancel();
  scoredRun_.clear();
  scores_.clear();
  evaluationLoss_ = std::nan("");
  evaluationWindows_ = 0;
  pieces_.clear();
  clearShown();
  progress_->setValue(0);
  progress_->setFormat(tr("idle"));
  if (run && !run->task.empty())
    status_->setText(taskRunLine(*run) + tr(" “Score test examples” scores the answers of fresh ones."));
  else
    status_->setText(dir.isEmpty() ? tr("No run open.")
                                   : tr("No losses of %1 yet: press “Score every token”.").arg(runName(dir)));
  updateButtons();
}

void LossesView::clearShown() {
  comparison_ = {};
  alternatives_.clear();
  {
    const QSignalBlocker block(compare_);
    compare_->clear();
    compare_->addItem(tr("none"), QString());
    compare_->setEnabled(false);
  }
  documents_->setRowCount(0);
  // The header names the runs compared ("Δ loss (gpt − hsm_ab)"): none is left after a switch.
  documents_->setHorizontalHeaderLabels({tr("Document"), tr("Tokens"), tr("Mean loss")});
  tintKey_->clear();
  text_->clear();
  spans_.clear();
  shownDocument_ = -1;
  byPosition_->setSeries({});
  byDistance_->setSeries({});
  byFrequency_->setSeries({});
  histogram_->setSeries({});
}

void LossesView::setCompareRun(const QString& runDir) {
  const int i = compare_->findData(runDir);
  compare_->setCurrentIndex(i < 0 ? 0 : i);
}

QString LossesView::compareRun() const { return compare_->currentData().toString(); }

void LossesView::fillCompareBox() {
  const QSignalBlocker block(compare_);
  const QString keep = compare_->currentData().toString();
  compare_->clear();
  compare_->addItem(tr("none"), QString());
  for (const QString& dir : comparedRuns()) compare_->addItem(runName(dir), dir);
  const int i = compare_->findData(keep);
  compare_->setCurrentIndex(i < 0 ? 0 : i);
  compare_->setEnabled(compare_->count() > 1);
}

void LossesView::drawDocuments() {
  const QString b = compareRun();
  std::vector<DocumentLoss> docs;
  const hsm::TokenScores* sb = b.isEmpty() ? nullptr : scoresOf(b);
  comparison_ = {};
  if (sb) {
    try {
      comparison_ = hsm::compare(scores(), *sb, 0);
    } catch (const std::exception& e) {  // other windows: kept out when scored, so not expected
      status_->setText(qstr(e.what()));
      sb = nullptr;
    }
  }
  updateTintKey(sb ? b : QString());
  if (sb) {
    for (const hsm::DocumentDifference& d : comparison_.documents) docs.push_back({d.document, d.tokens, d.difference});
    documents_->setHorizontalHeaderLabels(
        {tr("Document"), tr("Tokens"), tr("Δ loss (%1 − %2)").arg(runName(b), runName(scoredRun_))});
  } else {
    docs = documents_by_loss(scores());
    documents_->setHorizontalHeaderLabels(
        {tr("Document"), tr("Tokens"), tr("Mean loss (%1)").arg(runName(scoredRun_))});
  }
  const QSignalBlocker block(documents_);
  documents_->setRowCount(static_cast<int>(docs.size()));
  for (int r = 0; r < static_cast<int>(docs.size()); ++r) {
    auto* doc = new QTableWidgetItem(QString::number(docs[r].document));
    doc->setData(Qt::UserRole, static_cast<qlonglong>(docs[r].document));
    documents_->setItem(r, 0, doc);
    documents_->setItem(r, 1, new QTableWidgetItem(QString::number(docs[r].tokens)));
    documents_->setItem(r, 2, new QTableWidgetItem(QString::number(docs[r].loss, 'f', 3)));
  }
  if (docs.empty()) return;
  documents_->setCurrentCell(0, 0);  // the hardest document (or B's best) shown
  showDocument(docs.front().document);
}

QString LossesView::tintKey() const { return tintKey_->text(); }

void LossesView::updateTintKey(const QString& compared) {
  auto swatch = [](const QColor& c, const QString& text) {
    return QStringLiteral("<span style='background:%1'>&nbsp;%2&nbsp;</span>").arg(c.name(), text.toHtmlEscaped());
  };
  if (compared.isEmpty()) {
    tintKey_->setText(tr("Each token tinted by its loss: %1 %2 %3 %4")
                          .arg(swatch(lossTint(0), tr("0")), swatch(lossTint(2), tr("2")), swatch(lossTint(4), tr("4")),
                               swatch(lossTint(kTintMaxLoss), tr("%1+ nats").arg(kTintMaxLoss))));
    return;
  }
  const QString a = runName(scoredRun_), b = runName(compared);
  tintKey_->setText(tr("Each token tinted by Δ loss = %1 − %2: %3 %4 %5 %6 %7")
                        .arg(b, a)
                        .arg(swatch(differenceTint(-kTintMaxDifference), tr("%1 better by %2+").arg(b).arg(kTintMaxDifference)),
                             swatch(differenceTint(-1), tr("−1")), swatch(differenceTint(0), tr("equal")),
                             swatch(differenceTint(1), tr("+1")),
                             swatch(differenceTint(kTintMaxDifference), tr("%1 better by %2+").arg(a).arg(kTintMaxDifference))));
}

QColor LossesView::differenceTint(double difference) {
  // ColorBrewer RdBu (colour-blind safe): blue (B better) · near white (equal) · red (B worse).
  return colours::rdbuFromWhite(difference / kTintMaxDifference);
}

QColor LossesView::lossTint(double loss) {
  // ColorBrewer "Oranges", pale at 0 nats to dark at kTintMaxLoss: one hue, so the order reads
  // without telling colours apart; black text stays readable throughout.
  return colours::oranges(loss / kTintMaxLoss);
}

void LossesView::showDocument(int64_t document) {
  text_->clear();
  spans_.clear();
  shownDocument_ = document;
  const hsm::TokenScores& s = scores();
  // The document's predicted tokens in window order: its text as the model was asked to
  // predict it (the first input of each window is not a target and is not shown).
  std::vector<size_t> tokens;
  for (size_t i = 0; i < s.tokens.size(); ++i)
    if (s.tokens[i].document == document) tokens.push_back(i);
  const auto pieceOf = [&](size_t i) {
    const int32_t id = s.tokens[i].target;
    return id >= 0 && static_cast<size_t>(id) < pieces_.size() ? pieces_[static_cast<size_t>(id)] : std::string("?");
  };
  // A character of several bytes comes as byte-fallback tokens ("<0xE2><0x80><0x99>"): the
  // character is shown on its first byte's token, the others as zero-width spaces (still
  // tinted and hoverable), so the text reads as text.
  std::vector<QString> shown(tokens.size());
  for (size_t k = 0; k < tokens.size();) {
    const auto byteOf = [&](size_t j) -> int {
      const std::string p = pieceOf(tokens[j]);
      return p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>' ? std::stoi(p.substr(3, 2), nullptr, 16) : -1;
    };
    const int lead = byteOf(k);
    if (lead < 0x80) {
      shown[k] = qstr(pieceOf(tokens[k]));
      ++k;
      continue;
    }
    QByteArray bytes(1, static_cast<char>(lead));
    size_t j = k + 1;
    for (; j < tokens.size(); ++j) {
      const int b = byteOf(j);
      if (b < 0x80 || b >= 0xC0) break;  // not a continuation byte
      bytes.append(static_cast<char>(b));
    }
    shown[k] = QString::fromUtf8(bytes);
    for (size_t m = k + 1; m < j; ++m) shown[m] = QStringLiteral("\u200B");
    k = j;
  }
  QTextCursor cursor(text_->document());
  const bool comparing = comparison_.difference.size() == s.tokens.size();
  for (size_t k = 0; k < tokens.size(); ++k) {
    const size_t i = tokens[k];
    QTextCharFormat format;
    format.setBackground(comparing ? differenceTint(comparison_.difference[i]) : lossTint(s.tokens[i].loss));
    // Black on the pale tints, white on the dark ones (a large difference).
    format.setForeground(comparing && std::abs(comparison_.difference[i]) > 0.6 * kTintMaxDifference ? Qt::white
                                                                                                     : Qt::black);
    Span span;
    span.start = cursor.position();
    cursor.insertText(shown[k], format);
    span.end = cursor.position();
    span.token = i;
    spans_.push_back(span);
  }
  askAlternatives();
}

void LossesView::askAlternatives() {
  alternatives_.clear();
  const hsm::TokenScores& s = scores();
  // The shown document's windows and their inputs (the same for every run: same windows).
  QMap<qint64, std::vector<int32_t>> inputs;
  for (const Span& span : spans_) {
    const int64_t w = s.tokens[span.token].window;
    if (inputs.contains(w)) continue;
    std::vector<int32_t> in;
    for (const hsm::TokenScore& t : s.tokens)
      if (t.window == w) in.push_back(t.input);
    inputs.insert(w, in);
  }
  if (inputs.isEmpty()) return;
  const int64_t document = shownDocument_;
  for (const QString& dir : order_) {
    if (!scores_.contains(dir)) continue;
    engine_->interactive()
        .call<WindowTops>(dir,
                          [inputs](const CallContext& c) {
                            const hsm::Prober prober(c.model());
                            WindowTops out;
                            for (auto it = inputs.cbegin(); it != inputs.cend(); ++it)
                              out.insert(it.key(), prober.probe_tokens(it.value(), kAlternatives).lens.back().top);
                            return out;
                          })
        .then(this, [this, dir, document, run = scoredRun_](const WindowTops& tops) {
          if (run == scoredRun_ && document == shownDocument_ && scores_.contains(dir)) alternatives_.insert(dir, tops);
        });
  }
}

std::vector<hsm::LensToken> LossesView::alternatives(const QString& runDir, int64_t window, int32_t position) const {
  const auto tops = alternatives_.constFind(runDir);
  if (tops == alternatives_.constEnd() || !tops->contains(window)) return {};
  const auto& top = tops->value(window);
  return static_cast<size_t>(position) < top.size() ? top[static_cast<size_t>(position)] : std::vector<hsm::LensToken>{};
}

bool LossesView::hasAlternatives() const {
  for (const QString& dir : order_)
    if (scores_.contains(dir) && !alternatives_.contains(dir)) return false;
  return !spans_.empty();
}

QString LossesView::tooltipAt(int position) const {
  const auto it = std::find_if(spans_.begin(), spans_.end(),
                               [position](const Span& s) { return position >= s.start && position < s.end; });
  if (it == spans_.end()) return {};
  const hsm::TokenScore& t = scores().tokens[it->token];
  QString piece = t.target >= 0 && static_cast<size_t>(t.target) < pieces_.size()
                      ? qstr(pieces_[static_cast<size_t>(t.target)])
                      : QString();
  QString out = tr("“%1” (window %2, position %3, %4)")
                    .arg(piece.toHtmlEscaped(), QString::number(t.window), QString::number(t.position),
                         t.distance > 0 ? tr("last seen %1 back").arg(t.distance) : tr("not earlier in the window"));
  for (const QString& dir : order_) {
    const hsm::TokenScores* s = scoresOf(dir);
    if (!s || it->token >= s->tokens.size()) continue;
    const hsm::TokenScore& u = s->tokens[it->token];
    out += tr("<br>%1: loss %2 nats, p %3, rank %4")
               .arg(runName(dir).toHtmlEscaped())
               .arg(u.loss, 0, 'f', 3)
               .arg(u.prob, 0, 'g', 3)
               .arg(u.rank);
    QStringList alts;
    for (const hsm::LensToken& a : alternatives(dir, u.window, u.position))
      alts << QStringLiteral("“%1” %2").arg(qstr(a.piece).toHtmlEscaped()).arg(a.prob, 0, 'g', 2);
    if (!alts.isEmpty()) out += tr("; its first choices: %1").arg(alts.join(QStringLiteral(", ")));
  }
  if (comparison_.difference.size() == scores().tokens.size())
    out += tr("<br>Δ loss %1 − %2: %3 nats")
               .arg(runName(compareRun()).toHtmlEscaped(), runName(scoredRun_).toHtmlEscaped())
               .arg(comparison_.difference[it->token], 0, 'f', 3);
  return out;
}

bool LossesView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == text_->viewport() && event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString tip = tooltipAt(text_->cursorForPosition(help->pos()).position());
    if (tip.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), tip, text_->viewport());
    return true;
  }
  return StudioView::eventFilter(watched, event);
}

void LossesView::drawPlots() {
  QVector<PlotSeries> position, distance, frequency, histogram;
  QStringList labels, frequencyLabels;
  for (const QString& dir : order_) {
    const hsm::TokenScores* s = scoresOf(dir);
    if (!s) continue;
    const RunEntry* entry = nullptr;
    for (int i = 0; i < runs_->count(); ++i)
      if (runs_->at(i).dir == dir) entry = &runs_->at(i);
    const QColor color = entry ? entry->color : QColor(Qt::darkGray);
    const hsm::TokenAggregates agg = hsm::aggregate(*s);
    PlotSeries p{runName(dir), color, {}, {}};
    for (size_t i = 0; i < agg.by_position.size(); ++i)
      if (agg.by_position[i].tokens > 0) {
        p.x << static_cast<double>(i);
        p.y << agg.by_position[i].mean_loss;
      }
    position << p;
    PlotSeries d{runName(dir), color, {}, {}};
    labels.clear();
    for (size_t i = 0; i < agg.by_distance.size(); ++i) {
      labels << qstr(agg.by_distance[i].label);
      if (agg.by_distance[i].tokens > 0) {
        d.x << static_cast<double>(i);
        d.y << agg.by_distance[i].mean_loss;
      }
    }
    distance << d;
    PlotSeries f{runName(dir), color, {}, {}};
    for (size_t i = 0; i < agg.by_frequency.size(); ++i) {
      if (frequencyLabels.size() <= static_cast<int>(i)) frequencyLabels << qstr(agg.by_frequency[i].label);
      if (agg.by_frequency[i].tokens > 0) {
        f.x << static_cast<double>(i);
        f.y << agg.by_frequency[i].mean_loss;
      }
    }
    frequency << f;
    double top = 0;
    for (const hsm::TokenScore& t : s->tokens) top = std::max(top, t.loss);
    QVector<double> counts(static_cast<int>(std::floor(top / kHistogramBin)) + 1, 0.0);
    for (const hsm::TokenScore& t : s->tokens) counts[static_cast<int>(std::floor(t.loss / kHistogramBin))] += 1;
    PlotSeries h{runName(dir), color, {}, {}};
    for (int i = 0; i < counts.size(); ++i) {
      h.x << (i + 0.5) * kHistogramBin;
      h.y << counts[i] / static_cast<double>(s->tokens.size());
    }
    histogram << h;
  }
  byPosition_->setSeries(position);
  byDistance_->setSeries(distance);
  byFrequency_->setSeries(frequency);
  // The buckets by name on the axis (1, 2-3, 4-7, …, never; 0, 1-9, 10-99, …), not by index,
  // every bucket in view even where none has a token, slanted so that "32-63" and "64-127"
  // do not run into each other at 1280 px.
  for (const auto& [panel, names] : {std::pair{byDistance_, labels}, std::pair{byFrequency_, frequencyLabels}}) {
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (int i = 0; i < names.size(); ++i) ticker->addTick(i, names[i]);
    panel->plot()->xAxis->setTicker(ticker);
    panel->plot()->xAxis->setTickLabelRotation(-40);
    panel->plot()->xAxis->setRange(-0.5, names.size() - 0.5);
    panel->plot()->replot();
  }
  histogram_->setSeries(histogram);
}

}  // namespace studio
