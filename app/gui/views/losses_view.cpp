#include "gui/views/losses_view.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QDir>
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
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "gui/engine_types.h"
#include "gui/run_evaluation.h"
#include "gui/run_list.h"
#include "gui/widgets/notice_bar.h"
#include "gui/studio_settings.h"
#include "hsm/run_folder.h"
#include "gui/widgets/plot_panel.h"
#include "gui/widgets/widget_export.h"
#include "gui/widgets/colour_maps.h"
#include "gui/widgets/layout_helpers.h"

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

LossesView::LossesView(RunList* runs, EngineHost* engine, QWidget* parent)
    : StudioView(runs, engine, parent), state_(new LossesState(runs, engine, this)) {
  build();
  connectSignals();
  leaveRun();
}

void LossesView::build() {
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(makeWhatIfNotice(QStringLiteral("losses_whatif_box"), tr("The losses are of the edited model.")));
  layout->addLayout(buildControls());
  layout->addWidget(status_);
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(buildDocumentPane());
  split->addWidget(buildPlots());
  layout->addWidget(split, 1);
}

QHBoxLayout* LossesView::buildControls() {
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
  scoreButton_ = makeButton(tr("Score every token"), QStringLiteral("losses_score"),
                            tr("Score every predicted token of the current run's validation windows (the ones it was "
                               "trained on), and every other open run with the same tokenizer on the same windows"));
  cancelButton_ = makeButton(tr("Cancel"), QStringLiteral("losses_cancel"));
  exportButton_ = makeButton(tr("Export…"), QStringLiteral("losses_export"),
                             tr("The three plots as PNG, PDF and SVG, and their numbers as CSV, into a folder"));
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
  return makeRow({scoreButton_, cancelButton_, dataEdit_, maxWindows_, new QLabel(tr("windows")), progress_,
                  new QLabel(tr("compare with")), compare_, exportButton_},
                 {dataEdit_, progress_});
}

QWidget* LossesView::buildDocumentPane() {
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
  return top;
}

QWidget* LossesView::buildPlots() {
  byPosition_ = new PlotPanel(tr("Loss by position"), tr("position in the window"), tr("mean loss (nats)"));
  byPosition_->setObjectName(QStringLiteral("losses_by_position"));
  byDistance_ = new PlotPanel(tr("Loss by distance"), tr("tokens back to its previous occurrence"), tr("mean loss (nats)"));
  byDistance_->setObjectName(QStringLiteral("losses_by_distance"));
  byFrequency_ = new PlotPanel(tr("Loss by frequency"), tr("times the token occurs in the training split"),
                               tr("mean loss (nats)"));
  byFrequency_->setObjectName(QStringLiteral("losses_by_frequency"));
  histogram_ = new PlotPanel(tr("Loss histogram"), tr("loss (nats)"), tr("share of tokens"));
  histogram_->setObjectName(QStringLiteral("losses_histogram"));
  auto* plotsRow = new QSplitter(Qt::Horizontal);
  for (PlotPanel* p : {byPosition_, byDistance_, byFrequency_, histogram_}) {
    plotsRow->addWidget(p);  // legends under the axes
    // The slanted bucket names take half a short plot: the splitter above gives the axes room.
    p->setMinimumAxesHeight(PlotPanel::kMinimumAxesHeight);
  }
  return plotsRow;
}

void LossesView::connectSignals() {
  connect(scoreButton_, &QPushButton::clicked, this, [this] { score(); });
  connect(cancelButton_, &QPushButton::clicked, this, &LossesView::cancel);
  connect(exportButton_, &QPushButton::clicked, this, &LossesView::exportDialog);
  connect(compare_, &QComboBox::currentIndexChanged, this, [this] {
    if (hasScores() && !isScoring()) drawDocuments();
  });
  connect(documents_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) {
    if (row < 0) return;
    if (QTableWidgetItem* item = documents_->item(row, 0)) showDocument(item->data(Qt::UserRole).toLongLong());
  });
  connect(state_, &LossesState::progress, this, &LossesView::showProgress);
  connect(state_, &LossesState::finished, this, &LossesView::showScores);
  connect(state_, &LossesState::taskScored, this, &LossesView::showTaskScore);
  connect(state_, &LossesState::taskFailed, this, &LossesView::showTaskFailure);
}

void LossesView::exportDialog() {
  const QString folder =
      QFileDialog::getExistingDirectory(this, tr("Export the losses' plots"), StudioSettings::dialogFolder(QString()));
  if (folder.isEmpty()) return;
  StudioSettings::setDialogFolder(folder);
  QString error;
  exportPlots(folder, &error);
  if (error.isEmpty())
    error = exportTokens(QDir(folder).filePath(export_stem(scoredRun(), QStringLiteral("losses")) +
                                               QStringLiteral("-tokens.csv")));
  if (!error.isEmpty()) QMessageBox::warning(this, tr("Export failed"), error);
}

void LossesView::setMaxWindows(int windows) { maxWindows_->setValue(windows); }
void LossesView::setDataPath(const QString& path) { dataEdit_->setText(path); }

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
  QString error;
  const RunEntry* run = currentRun();
  if (isScoring())
    error = tr("Scoring is already under way.");
  else if (!run)
    error = tr("Open a run first.");
  else if (!run->has_info)
    error = tr("%1 has no checkpoint yet.").arg(run->name());
  state_->setLastError(error);
  if (error.isEmpty() && !run->task.empty()) {
    scoreTask(*run);
    return true;
  }
  QString data = dataEdit_->text().trimmed();
  if (data.isEmpty() && run && run->has_info) data = qstr(run->info.data_path);
  // The bundled models name the corpus they were trained from on the machine that trained them;
  // where it is missing (a user's machine, a fresh one) they are scored on the TinyStories starter
  // corpus that ships beside them, named in the corpus field.
  QString instead;
  if (error.isEmpty() && dataEdit_->text().trimmed().isEmpty() && !data.isEmpty()) {
    const hsm::ScoringCorpus corpus = hsm::scoring_corpus(sstr(run->dir), sstr(data));
    if (!corpus.instead_of.empty()) {
      instead = tr(" (its corpus %1 is not on this machine: the TinyStories starter corpus instead)").arg(data);
      data = qstr(corpus.path);
      dataEdit_->setText(data);
    }
  }
  if (error.isEmpty() && (data.isEmpty() || !QFileInfo::exists(data)))
    error = tr("Choose a corpus: %1").arg(data.isEmpty() ? tr("the run records none") : tr("%1 does not exist").arg(data));
  if (!error.isEmpty()) {
    state_->setLastError(error);
    status_->setText(error);
    return false;
  }
  clearShown();
  state_->start(*run, data, maxWindows_->value());
  progress_->setValue(0);
  progress_->setFormat(tr("scoring %1 · %p%").arg(runName(run->dir)));
  status_->setText(tr("Scoring every token of %1…").arg(runName(run->dir)) + instead);
  updateButtons();
  return true;
}

void LossesView::showProgress(int index, int of, const QString& runName, const QString& stage, double fraction) {
  progress_->setValue(static_cast<int>((index + fraction) / std::max(1, of) * 1000));
  progress_->setFormat(QStringLiteral("%1 · %2 · %p%").arg(runName, stage));
}

QString LossesView::statusText() const { return status_->text(); }

QString LossesView::taskRunLine(const RunEntry& run) {
  return tr("%1 was trained on a task (%2) and reads no text, so it has no losses per token of a corpus: see each "
            "answer of a test example in the Diagnostics and Probe views.")
      .arg(run.name(), qstr(run.task));
}

void LossesView::scoreTask(const RunEntry& run) {
  clearShown();
  state_->startTask(run);  // as `hsm eval RUN` on a task run: fresh test examples
  updateButtons();
  status_->setText(taskRunLine(run) + tr(" Scoring %1 test examples…").arg(LossesState::kTaskExamples));
}

void LossesView::showTaskScore(const QString& runDir, const hsm::TaskScore& s, bool edited) {
  updateButtons();
  const RunEntry* run = currentRun();
  if (runDir != currentRunDir() || !run) return;
  status_->setText(taskRunLine(*run) + tr(" Its first %1 test examples: answer accuracy %2 (%3 answers), sequence "
                                          "accuracy %4, loss %5 nats on the answers (%6).")
                                           .arg(s.examples)
                                           .arg(s.answer_accuracy, 0, 'f', 3)
                                           .arg(s.answers)
                                           .arg(s.sequence_accuracy, 0, 'f', 3)
                                           .arg(s.loss, 0, 'f', 4)
                                           .arg(edited ? tr("the edited model: its what-if edit is in")
                                                       : tr("as hsm eval scores them")));
}

void LossesView::showTaskFailure(const QString& runDir, const QString& message) {
  updateButtons();
  const RunEntry* run = currentRun();
  if (runDir == currentRunDir() && run)
    status_->setText(taskRunLine(*run) + tr(" Scoring its test examples failed: %1").arg(message));
}

void LossesView::cancel() { state_->cancel(); }

void LossesView::showScores() {
  updateButtons();
  if (!state_->following()) return;  // the view follows another run by now
  if (!hasScores()) {
    progress_->setValue(0);
    progress_->setFormat(tr("idle"));
    status_->setText(lastError());
    return;
  }
  progress_->setValue(1000);
  progress_->setFormat(tr("done"));
  const hsm::TokenScores& s = scores();
  // The headline first: the run's own evaluation on every window; the windows scored token by
  // token beside it, named as fewer when they are.
  const QString layout = qstr(s.result.windows), scored = runName(scoredRun());
  const double evaluation = state_->evaluationLoss();
  QString text = tr("%1: %2").arg(scored, std::isnan(evaluation)
                                              ? tr("its evaluation on every window unknown")
                                              : evaluation_text(evaluation, state_->evaluationWindows(), layout));
  text += state_->maxWindows() == 0 ? tr(" · every token of them below (%1 tokens)").arg(s.tokens.size())
                                    : tr(" · below, %1 (%2 tokens)")
                                          .arg(partial_loss_text(s.result.loss, s.result.window_count))
                                          .arg(s.tokens.size());
  for (const QString& other : comparedRuns())
    text += tr("; %1 on the same %2 windows: %3 nats")
                .arg(runName(other))
                .arg(scoresOf(other)->result.window_count)
                .arg(scoresOf(other)->result.loss, 0, 'f', 4);
  if (!state_->notes().isEmpty()) text += QStringLiteral(". ") + state_->notes().join(QStringLiteral("; "));
  status_->setText(text);
  fillCompareBox();
  drawDocuments();
  drawPlots();
}

void LossesView::leaveRun() {
  const QString dir = currentRunDir();
  // The same run at the same checkpoint: its scores still hold (a new checkpoint's do not).
  const RunEntry* run = currentRun();
  if (dir == scoredRun() && run && run->config_stamp == state_->scoredStamp() && (hasScores() || isScoring())) return;
  state_->clear();
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
  state_->clearAlternatives();
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
        {tr("Document"), tr("Tokens"), tr("Δ loss (%1 − %2)").arg(runName(b), runName(scoredRun()))});
  } else {
    docs = documents_by_loss(scores());
    documents_->setHorizontalHeaderLabels(
        {tr("Document"), tr("Tokens"), tr("Mean loss (%1)").arg(runName(scoredRun()))});
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
  using colours::swatch;
  if (compared.isEmpty()) {
    tintKey_->setText(tr("Each token tinted by its loss: %1 %2 %3 %4")
                          .arg(swatch(lossTint(0), tr("0")), swatch(lossTint(2), tr("2")), swatch(lossTint(4), tr("4")),
                               swatch(lossTint(kTintMaxLoss), tr("%1+ nats").arg(kTintMaxLoss))));
    return;
  }
  const QString a = runName(scoredRun()), b = runName(compared);
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
    return id >= 0 && static_cast<size_t>(id) < state_->pieces().size() ? state_->pieces()[static_cast<size_t>(id)] : std::string("?");
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
  state_->askAlternatives(document);
}

bool LossesView::hasAlternatives() const { return state_->hasAlternatives() && !spans_.empty(); }

QString LossesView::tooltipAt(int position) const {
  const auto it = std::find_if(spans_.begin(), spans_.end(),
                               [position](const Span& s) { return position >= s.start && position < s.end; });
  if (it == spans_.end()) return {};
  const hsm::TokenScore& t = scores().tokens[it->token];
  QString piece = t.target >= 0 && static_cast<size_t>(t.target) < state_->pieces().size()
                      ? qstr(state_->pieces()[static_cast<size_t>(t.target)])
                      : QString();
  QString out = tr("“%1” (window %2, position %3, %4)")
                    .arg(piece.toHtmlEscaped(), QString::number(t.window), QString::number(t.position),
                         t.distance > 0 ? tr("last seen %1 back").arg(t.distance) : tr("not earlier in the window"));
  for (const QString& dir : state_->order()) {
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
               .arg(runName(compareRun()).toHtmlEscaped(), runName(scoredRun()).toHtmlEscaped())
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
  for (const QString& dir : state_->order()) {
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
  // The current run's curves above the compared runs', thicker (issue 48).
  const RunEntry* current = runs_->currentRun();
  int k = 0;
  for (const QString& dir : state_->order()) {
    if (!scoresOf(dir)) continue;
    for (QVector<PlotSeries>* plot : {&position, &distance, &frequency, &histogram})
      (*plot)[k].emphasised = current && dir == current->dir;
    ++k;
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
