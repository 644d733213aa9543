#include "gui/help/view_help.h"

#include <QAction>
#include <QCoreApplication>
#include <QMenu>
#include <QMenuBar>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <iterator>
#include <set>

#include "gui/engine_types.h"
#include "gui/help/glossary.h"
#include "hsm/mixer_kind.h"

namespace studio::help {
namespace {

// The views in MainWindow::View's order.
struct ViewText {
  const char* title;
  const char* body;
};
// In MainWindow::View's order (a view's help is kViews[its index]).
constexpr int kLabView = 7, kExperimentsView = 8;
const ViewText kViews[] = {
    {QT_TRANSLATE_NOOP("help", "Architecture"),
     QT_TRANSLATE_NOOP("help",
                       "<p>A language model here is a stack of layers. Each layer first <b>mixes</b> tokens (its "
                       "<i>mixer</i> lets a token take in information from earlier tokens) and then transforms every "
                       "token on its own (the <i>FFN</i>, a small two-layer network).</p>"
                       "<p>GPT mixes with softmax attention: every token looks at every earlier token, so the work "
                       "grows with the square of the context. <b>Hierarchical Shift Mixing (HSM)</b> mixes each token "
                       "with just one earlier token, 2<sup>l</sup> places back in layer l: 1, 2, 4, 8, … Stacked, the "
                       "layers still reach every earlier token, at a cost that grows only linearly.</p>"
                       "<p><b>Why powers of two?</b> Every offset k is a sum of distinct powers of two (its binary "
                       "digits: 13 = 8 + 4 + 1). A path that takes the shifted branch in exactly the layers of those "
                       "digits (here layers 3, 2 and 0) and the unshifted one elsewhere goes k tokens back, so "
                       "log<sub>2</sub>T layers reach all T earlier positions, each by exactly one path.</p>"
                       "<p>Here: pick a preset (hover one for its paper and size) or edit the layers; the table gives "
                       "the parameters per layer. The <b>receptive field</b> diagram (HSM Fig. 4): click an output "
                       "token and see which earlier tokens can reach it, layer by layer; <b>s=</b> is the shift of "
                       "each layer.</p>")},
    {QT_TRANSLATE_NOOP("help", "Training"),
     QT_TRANSLATE_NOOP("help",
                       "<p>Train a model on a text corpus and watch it learn.</p>"
                       "<p><b>Loss</b> is how surprised the model is by the true next token, in nats (the negative "
                       "log of the probability it gave it): lower is better; ln(vocabulary) is guessing. <b>Train "
                       "loss</b> is measured on the batches it learns from, <b>validation loss</b> on held-out text it "
                       "never learns from: when validation stops falling while train loss still falls, the model "
                       "starts to memorise. <b>Accuracy</b>: how often its most likely token is the right one.</p>"
                       "<p>Pause, resume and stop at any time: a checkpoint is written, and the run can be tried in "
                       "the Playground from its first checkpoint on.</p>")},
    {QT_TRANSLATE_NOOP("help", "Weights"),
     QT_TRANSLATE_NOOP("help",
                       "<p>What the mixers learned. In HSM (a,b) each layer has two numbers: <b>a</b> weighs the "
                       "token itself and <b>b</b> the token <b>s</b> = 2<sup>layer</sup> places back "
                       "(y = a·x + b·x<sub>shifted</sub>, HSM Table 2). Why 2<sup>layer</sup>: every offset is a "
                       "sum of distinct powers of two, so the layers of its binary digits take it back exactly that "
                       "far, and log<sub>2</sub>T layers reach every earlier token. Vector variants learn one a and b "
                       "per channel (a heatmap), multihead ones one per head and shift.</p>"
                       "<p><b>End-to-end offset weights</b> multiply along the one path of each offset: b where the "
                       "path takes the shift, <b>1 + a</b> where it does not. The 1 is the <b>residual path</b>: a "
                       "block adds its mixer's output to its input (h + a·x + b·x<sub>shifted</sub>), so a token "
                       "keeps itself even where a is small. That is why these weights reach far above 1 (1.5 over "
                       "seven layers is 17) while every a and b is below 1.</p>"
                       "<p><b>What if…</b>: drag a bar, or knock out a layer or a head, and see at once what the "
                       "edit does to the validation loss and to the stories in the Playground. The run folder is "
                       "never written; Save as writes a new one.</p>")},
    {QT_TRANSLATE_NOOP("help", "Diagnostics"),
     QT_TRANSLATE_NOOP("help",
                       "<p>How each layer mixes the tokens of one prompt. The heatmap is a layer's (or head's) "
                       "mixing matrix: row i is a token, column j an earlier token, and the colour how much token i "
                       "draws on token j. For attention it is the softmax weights; for a linear mixer such as "
                       "HSM (a,b) the exact map; otherwise the Jacobian's size.</p>"
                       "<p>The indicators (Deconstructing Attention §4.4) sum a matrix up in one number each: "
                       "<b>ENTROPY</b> (spread out), <b>CONC</b> (focused), <b>HEADDIV</b> (heads differ), "
                       "<b>SINK</b> (weight on the first token), <b>LocFoc0-3</b> (weight on the token itself and "
                       "the 1-3 before it). Hover a column header for its definition. The radar draws them per layer; "
                       "the timeline shows how they changed during training.</p>"
                       "<p>A run trained on a synthetic task (the Lab) reads no text: its prompt is a test example of "
                       "its task, chosen by number. Its tokens are named by the task (k12 a key, v7 a value), "
                       "▸ marks the positions where an answer is asked, and the line above says what the model "
                       "answers there and what is right. The row of a ▸ shows where the model looks to answer.</p>")},
    {QT_TRANSLATE_NOOP("help", "Playground"),
     QT_TRANSLATE_NOOP("help",
                       "<p>Type the start of a story and let the model continue it, one token (a word or a piece "
                       "of one) at a time. Each token is tinted by the probability the model gave it (red unlikely, "
                       "green likely); hover it for the other tokens it weighed; click it to see which earlier "
                       "tokens it drew on.</p>"
                       "<p><b>Temperature</b> sharpens (low) or flattens (high) the choice; <b>top-p</b> and "
                       "<b>top-k</b> leave out the unlikely tail; the <b>seed</b> makes a story repeatable. "
                       "<b>Compare</b> runs the same prompt and seed on every open model side by side (HSM Table 3). "
                       "Ctrl+plus and Ctrl+minus (or Ctrl+wheel) set the text size; F11 presents a story full "
                       "screen.</p>")},
    {QT_TRANSLATE_NOOP("help", "Probe"),
     QT_TRANSLATE_NOOP("help",
                       "<p>Looking inside the model while it predicts.</p>"
                       "<p><b>Logit lens</b>: what each layer would already predict as the next token if the model "
                       "stopped there. <b>Attention rollout</b>: how much each output draws on each input through all "
                       "layers together (Abnar &amp; Zuidema: R<sub>l</sub> = (½A<sub>l</sub> + ½I)·R<sub>l−1</sub>). "
                       "<b>Ablation</b>: switch one layer or head off and measure how much the validation loss rises: "
                       "the bigger the rise, the more the model needs it.</p>"
                       "<p>On a run trained on a synthetic task the lens and rollout read a test example of its task "
                       "(as in Diagnostics); at a ▸ position the lens ranks the right answer.</p>")},
    {QT_TRANSLATE_NOOP("help", "Losses"),
     QT_TRANSLATE_NOOP("help",
                       "<p>Where a model loses. <b>Score every token</b> scores each predicted token of the current "
                       "run's validation windows (the ones it was trained on), and every other open run with the "
                       "same tokenizer on the same windows; the mean of the tokens' losses is the run's validation "
                       "loss.</p>"
                       "<p>The documents are listed hardest first; the chosen one's text is tinted by each token's "
                       "loss (pale: easy, dark orange: hard); hover a token for each run's loss, probability and "
                       "rank. The plots show the mean loss by position in the window, by how far back the token "
                       "last occurred (a copy is easy, a new word hard), and a histogram of the losses.</p>")},
    {QT_TRANSLATE_NOOP("help", "Lab"),
     QT_TRANSLATE_NOOP("help",
                       "<p>Which mixer solves which synthetic task (docs/lab.md): tiny models trained on associative "
                       "recall (MQAR), recall at a distance and MAD's tasks, scored on fresh test examples.</p>"
                       "<p>Check tasks (double-click one to change its difficulty), models and a budget, choose a "
                       "folder and Run; a cancelled or reopened lab continues where it stopped. Each cell is the test "
                       "answer accuracy of its model on its task at the best learning rate (red: 0, green: "
                       "1); hover for the numbers, double-click to open the cell's run in the other views.</p>")},
    {QT_TRANSLATE_NOOP("help", "Experiments"),
     QT_TRANSLATE_NOOP("help",
                       "<p>Many runs compared at once: a <b>sweep</b> (one spec, a run per combination of its axes: "
                       "mixers, layer placements, sizes, seeds; <code>hsm sweep</code>, or <b>New sweep</b> below), "
                       "or the runs open in the studio.</p>"
                       "<p>The table has a row per run with only the settings that differ, the model's parameters and "
                       "MACs per token, its final and best validation loss and accuracy, its speed and its state. "
                       "Click a header to sort; type in the filter to keep the rows with those words. <b>Group "
                       "by</b> a setting (usually seed) to see each metric's mean ± standard deviation over it: is a "
                       "difference larger than the noise between seeds?</p>"
                       "<p>The <b>parallel coordinates</b> draw each run as a line through its settings and metrics, "
                       "coloured by the chosen metric (dark purple low, yellow high); drag along an axis to keep only "
                       "the runs in that range. The <b>scatter</b> plots any two columns (parameters against loss). "
                       "<b>Show curves in Training</b> opens the selected runs there, overlaid. A running sweep is "
                       "followed as it trains; Cancel stops it with a checkpoint, and starting it again continues.</p>")},
    // Issue 51: the Trace view (MainWindow::kTrace).
    {QT_TRANSLATE_NOOP("help", "Trace"),
     QT_TRANSLATE_NOOP("help",
                       "<p><b>Why</b> the model answers as it does: which layer, at which position, carries what "
                       "makes the answer right (causal tracing, docs/diagnostics.md §9).</p>"
                       "<p>Give a <b>clean</b> prompt and a <b>corrupted</b> copy with one token replaced (the same "
                       "number of tokens), e.g. “… a girl named Lily. One day,” and “… a girl named Sue. One day,”. "
                       "The model reads both. Then, one at a time, a single activation of the corrupted run is "
                       "replaced by the clean run's, and we measure how much of the clean answer's log-probability "
                       "comes back: <b>1</b> (blue) means that one activation restores the answer, <b>0</b> (white) "
                       "that it does nothing, red that it pushes the answer away. A run trained on a task traces a "
                       "test example, its stored key replaced automatically.</p>"
                       "<p>Each heatmap is one <b>site</b>, rows the layers, columns the positions (✗ the corrupted "
                       "one, ▸ the answer): the <b>residual stream</b> entering the block, the <b>mixer's output</b> "
                       "and the <b>FFN's output</b>. Left, the <b>exact</b> map (activation patching: the corrupted "
                       "run rerun with each cell restored); right, the <b>attribution</b> estimate of the same map "
                       "from one backward pass, cheap for long prompts, with its correlation r to the exact one.</p>"
                       "<p>The circles are the <b>route</b>: in each layer the position whose activation matters "
                       "most. An arrow marks where an HSM layer's shift (↦2<sup>l</sup> in the row label) carries "
                       "that position: an HSM model can only move information along its shifts, so its route steps "
                       "by powers of two, where attention can jump anywhere at once. <b>Beside</b> traces a second "
                       "open run on the same prompts, to compare two mixers.</p>"
                       "<p>Under the maps, the <b>routes into the answer</b> (information flow, §10): nodes are the "
                       "residual stream at each position between layers (bottom: the embeddings, the red dot: the "
                       "answer position after the last layer). Each layer's update of a node is a sum of terms, the "
                       "residual itself (grey), the mixer's term from each earlier position (blue) and the FFN's "
                       "output (orange, drawn beside the grey); an edge's width and opacity is its term's share of "
                       "the node. Only edges of at least the share in <b>Routes ≥</b> that lead to the answer are "
                       "drawn; changing it re-prunes at once. An HSM layer can only draw blue edges along its "
                       "shift; attention can draw them from anywhere before.</p>")},
};

const char* kStartBody = QT_TRANSLATE_NOOP(
    "help",
    "<p>HSM Studio trains, inspects and plays with small GPT-style language models whose attention can be replaced "
    "by <b>Hierarchical Shift Mixing</b>: layer l mixes each token with the one 2<sup>l</sup> places back, so the "
    "stack reaches the whole context at a cost linear in its length.</p>"
    "<p>Start with the demo models (File › Open the demo models) and the Playground, train a small model in two "
    "minutes, or open a run folder. Help › Take the tour walks through the views.</p>");

QString mixers_html(const hsm::ModelConfig& model) {
  QString html = QObject::tr("<h3>The current run's mixers (its model: %1)</h3>").arg(qstr(model.name).toHtmlEscaped());
  std::set<std::string> seen;
  int layer = 0;
  for (const hsm::LayerSpec& l : model.layers) {
    ++layer;
    if (!seen.insert(l.mixer).second || !hsm::is_mixer_id(l.mixer)) continue;
    const hsm::MixerInfo& m = hsm::mixer_info(l.mixer);
    html += QObject::tr("<p><b>%1</b> (%2, from layer %3):<br><code>%4</code></p>")
                .arg(QString::fromUtf8(m.title).toHtmlEscaped(), QString::fromUtf8(m.equation).toHtmlEscaped())
                .arg(layer - 1)
                .arg(QString::fromUtf8(m.formula).toHtmlEscaped());
  }
  return html;
}

}  // namespace

QString viewTitle(int view) {
  if (view >= 0 && view < static_cast<int>(std::size(kViews)))
    return QCoreApplication::translate("help", kViews[view].title);
  return QObject::tr("Start page");
}

QString viewHelpHtml(int view, const hsm::ModelConfig* model) {
  const bool known = view >= 0 && view < static_cast<int>(std::size(kViews));
  QString html = QObject::tr("<h2>%1: what am I looking at?</h2>").arg(viewTitle(view));
  html += QCoreApplication::translate("help", known ? kViews[view].body : kStartBody);
  // The Lab and Experiments views show grids of their own models, not the current run's.
  const bool aboutTheCurrentRun = view != kLabView && view != kExperimentsView;
  if (model && aboutTheCurrentRun) html += mixers_html(*model);
  html += QObject::tr("<h3>Words</h3><p>%1</p><p>%2</p><p>%3</p><p>%4</p>")
              .arg(termToolTip(Term::kReceptiveField).toHtmlEscaped(), termToolTip(Term::kShift).toHtmlEscaped(),
                   termToolTip(Term::kWeightA).toHtmlEscaped(), termToolTip(Term::kWeightB).toHtmlEscaped());
  if (view == 3)
    html += QStringLiteral("<p>") +
            indicatorsToolTip().toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")) +
            QStringLiteral("</p>");
  return html;
}

HelpPanel::HelpPanel(QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("help_panel"));
  setWindowTitle(tr("What am I looking at?"));
  browser_ = new QTextBrowser;
  browser_->setObjectName(QStringLiteral("help_text"));
  browser_->setOpenExternalLinks(false);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(browser_);
  resize(460, 560);
}

void HelpPanel::showHelp(int view, const hsm::ModelConfig* model) {
  view_ = view;
  browser_->setHtml(viewHelpHtml(view, model));
}

QString HelpPanel::text() const { return browser_->toPlainText(); }

namespace {

void collect(const QMenu* menu, const QString& path, QStringList& rows) {
  for (QAction* a : menu->actions()) {
    const QString name = path + a->text().remove(QLatin1Char('&'));
    if (a->menu())
      collect(a->menu(), name + QStringLiteral(" › "), rows);
    else if (!a->shortcut().isEmpty())
      rows << QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>")
                  .arg(name.toHtmlEscaped(), a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped());
  }
}

}  // namespace

QString shortcutsHtml(const QMenuBar* menus) {
  QStringList rows;
  for (QAction* a : menus->actions())
    if (a->menu()) collect(a->menu(), a->text().remove(QLatin1Char('&')) + QStringLiteral(" › "), rows);
  const QPair<QString, QString> own[] = {
      {QObject::tr("Playground › Generate"), QObject::tr("Ctrl+Return")},
      {QObject::tr("Playground › Stop"), QObject::tr("Esc")},
      {QObject::tr("Playground and presentation › Larger / smaller text"),
       QObject::tr("Ctrl++ / Ctrl+- (or Ctrl+wheel)")},
      {QObject::tr("Presentation › New story"), QObject::tr("Space or N")},
      {QObject::tr("Presentation › Next / previous model"), QObject::tr("Page Down / Page Up")},
      {QObject::tr("Presentation › Leave"), QObject::tr("Esc or F11")},
  };
  for (const auto& [name, keys] : own)
    rows << QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>").arg(name.toHtmlEscaped(), keys.toHtmlEscaped());
  return QObject::tr("<h3>Keyboard shortcuts</h3><table cellspacing='4'>%1</table>").arg(rows.join(QString()));
}

}  // namespace studio::help
