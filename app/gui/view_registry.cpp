#include "gui/view_registry.h"

#include <QCoreApplication>
#include <QMessageBox>
#include <cstring>

#include "gui/starter_run.h"

#include "gui/views/architecture_view.h"
#include "gui/views/diagnostics_view.h"
#include "gui/views/experiments_view.h"
#include "gui/views/lab_view.h"
#include "gui/views/losses_view.h"
#include "gui/views/playground_view.h"
#include "gui/views/presentation_mode.h"
#include "gui/views/probe_view.h"
#include "gui/views/start_page.h"
#include "gui/views/trace_view.h"
#include "gui/views/training_view.h"
#include "gui/views/weights_view.h"

namespace studio {

const std::vector<ViewEntry>& viewRegistry() {
  // One entry per view, in tab order. A new view: its files, its include above, one entry here.
  static const std::vector<ViewEntry> views = {
      {"architecture", QT_TRANSLATE_NOOP("views", "Architecture"), QT_TRANSLATE_NOOP("views", "&Architecture"),
       QKeySequence(Qt::CTRL | Qt::Key_1),
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
         "each layer.</p>"),
       ViewEntry::kCurrentRunsMixers,
       [](RunList* runs, EngineHost*) -> QWidget* { return new ArchitectureView(runs); }},
      {"training", QT_TRANSLATE_NOOP("views", "Training"), QT_TRANSLATE_NOOP("views", "&Training"),
       QKeySequence(Qt::CTRL | Qt::Key_2),
       QT_TRANSLATE_NOOP("help",
         "<p>Train a model on a text corpus and watch it learn.</p>"
         "<p><b>Loss</b> is how surprised the model is by the true next token, in nats (the negative "
         "log of the probability it gave it): lower is better; ln(vocabulary) is guessing. <b>Train "
         "loss</b> is measured on the batches it learns from, <b>validation loss</b> on held-out text it "
         "never learns from: when validation stops falling while train loss still falls, the model "
         "starts to memorise. <b>Accuracy</b>: how often its most likely token is the right one.</p>"
         "<p>Pause, resume and stop at any time: a checkpoint is written, and the run can be tried in "
         "the Playground from its first checkpoint on.</p>"),
       ViewEntry::kCurrentRunsMixers,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new TrainingView(runs, engine); }},
      {"weights", QT_TRANSLATE_NOOP("views", "Weights"), QT_TRANSLATE_NOOP("views", "&Weights"),
       QKeySequence(Qt::CTRL | Qt::Key_3),
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
         "never written; Save as writes a new one.</p>"),
       ViewEntry::kCurrentRunsMixers,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new WeightsView(runs, engine); }},
      {"diagnostics", QT_TRANSLATE_NOOP("views", "Diagnostics"), QT_TRANSLATE_NOOP("views", "&Diagnostics"),
       QKeySequence(Qt::CTRL | Qt::Key_4),
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
         "answers there and what is right. The row of a ▸ shows where the model looks to answer.</p>"),
       ViewEntry::kCurrentRunsMixers | ViewEntry::kIndicators,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new DiagnosticsView(runs, engine); }},
      {"playground", QT_TRANSLATE_NOOP("views", "Playground"), QT_TRANSLATE_NOOP("views", "&Playground"),
       QKeySequence(Qt::CTRL | Qt::Key_5),
       QT_TRANSLATE_NOOP("help",
         "<p>Type the start of a story and let the model continue it, one token (a word or a piece "
         "of one) at a time. Each token is tinted by the probability the model gave it (red unlikely, "
         "green likely); hover it for the other tokens it weighed; click it to see which earlier "
         "tokens it drew on.</p>"
         "<p><b>Temperature</b> sharpens (low) or flattens (high) the choice; <b>top-p</b> and "
         "<b>top-k</b> leave out the unlikely tail; the <b>seed</b> makes a story repeatable. "
         "<b>Compare</b> runs the same prompt and seed on every open model side by side (HSM Table 3). "
         "Ctrl+plus and Ctrl+minus (or Ctrl+wheel) set the text size; F11 presents a story full "
         "screen.</p>"),
       ViewEntry::kCurrentRunsMixers,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new PlaygroundView(runs, engine); }},
      {"probe", QT_TRANSLATE_NOOP("views", "Probe"), QT_TRANSLATE_NOOP("views", "P&robe"),
       QKeySequence(Qt::CTRL | Qt::Key_6),
       QT_TRANSLATE_NOOP("help",
         "<p>Looking inside the model while it predicts.</p>"
         "<p><b>Logit lens</b>: what each layer would already predict as the next token if the model "
         "stopped there. <b>Attention rollout</b>: how much each output draws on each input through all "
         "layers together (Abnar &amp; Zuidema: R<sub>l</sub> = (½A<sub>l</sub> + ½I)·R<sub>l−1</sub>). "
         "<b>Ablation</b>: switch one layer or head off and measure how much the validation loss rises: "
         "the bigger the rise, the more the model needs it.</p>"
         "<p>On a run trained on a synthetic task the lens and rollout read a test example of its task "
         "(as in Diagnostics); at a ▸ position the lens ranks the right answer.</p>"),
       ViewEntry::kCurrentRunsMixers,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new ProbeView(runs, engine); }},
      {"losses", QT_TRANSLATE_NOOP("views", "Losses"), QT_TRANSLATE_NOOP("views", "L&osses"),
       QKeySequence(Qt::CTRL | Qt::Key_7),
       QT_TRANSLATE_NOOP("help",
         "<p>Where a model loses. <b>Score every token</b> scores each predicted token of the current "
         "run's validation windows (the ones it was trained on), and every other open run with the "
         "same tokenizer on the same windows; the mean of the tokens' losses is the run's validation "
         "loss.</p>"
         "<p>The documents are listed hardest first; the chosen one's text is tinted by each token's "
         "loss (pale: easy, dark orange: hard); hover a token for each run's loss, probability and "
         "rank. The plots show the mean loss by position in the window, by how far back the token "
         "last occurred (a copy is easy, a new word hard), and a histogram of the losses.</p>"),
       ViewEntry::kCurrentRunsMixers,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new LossesView(runs, engine); }},
      {"lab", QT_TRANSLATE_NOOP("views", "Lab"), QT_TRANSLATE_NOOP("views", "&Lab"),
       QKeySequence(Qt::CTRL | Qt::Key_8),
       QT_TRANSLATE_NOOP("help",
         "<p>Which mixer solves which synthetic task (docs/lab.md): small models (d 64, one head, no "
         "MLP) trained on associative recall (MQAR), recall at a distance, MAD's tasks and state "
         "tracking (parity, permutations), scored on fresh test examples.</p>"
         "<p>The default lab asks the field's clearest question in about 14 minutes on two idle cores "
         "(a finished one ships with the studio and opens first): MQAR with keys up to 60 tokens back, "
         "where attention (Zoology's two-layer model) and the hybrid find them and a 4-layer hsm_ab "
         "cannot (its shifts 1, 2, 4, 8 reach 15 back: the distance plot below draws its reach), the "
         "same within that reach (context 16), and MAD's in-context recall; two learning rates and two "
         "seeds each. A run ends early when it reaches 0.99 or has stopped learning (its loss fell "
         "under 3 % in 1,000 steps).</p>"
         "<p>Check tasks (double-click one to change its difficulty), models and a budget, choose a "
         "folder and Run; a cancelled or reopened lab continues where it stopped. Each cell is the mean "
         "test answer accuracy over the seeds ± their spread, at the best learning rate (red: 0, green: "
         "1). <b>★</b> marks the task's best model, <b>=</b> a model a Welch's t-test cannot tell from it, "
         "<b>chance</b> a cell an exact binomial test cannot tell from guessing; the dashed line in the "
         "plots is chance. Hover for the numbers, double-click to open the cell's run in the other views; "
         "Export report… writes the answer as one page.</p>"),
       ViewEntry::kNoExtra,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new LabView(runs, engine); }},
      {"experiments", QT_TRANSLATE_NOOP("views", "Experiments"), QT_TRANSLATE_NOOP("views", "E&xperiments"),
       QKeySequence(Qt::CTRL | Qt::Key_9),
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
         "followed as it trains; Cancel stops it with a checkpoint, and starting it again continues.</p>"),
       ViewEntry::kNoExtra,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new ExperimentsView(runs, engine); }},
      {"trace", QT_TRANSLATE_NOOP("views", "Trace"), QT_TRANSLATE_NOOP("views", "T&race"),
       QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T),
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
                       "shift; attention can draw them from anywhere before.</p>"),
       ViewEntry::kNoExtra,
       [](RunList* runs, EngineHost* engine) -> QWidget* { return new TraceView(runs, engine); }},
  };
  return views;
}

int viewIndex(const char* id) {
  const std::vector<ViewEntry>& views = viewRegistry();
  for (size_t i = 0; i < views.size(); ++i)
    if (std::strcmp(views[i].id, id) == 0) return static_cast<int>(i);
  return -1;
}

const ViewEntry* viewEntry(int index) {
  const std::vector<ViewEntry>& views = viewRegistry();
  return index >= 0 && index < static_cast<int>(views.size()) ? &views[static_cast<size_t>(index)] : nullptr;
}

namespace {

// The registry's view with this id as its class (the registry made it so).
template <class V>
V* viewOf(const std::vector<QWidget*>& views, const char* id) {
  const int index = viewIndex(id);
  V* view = index >= 0 && index < static_cast<int>(views.size()) ? qobject_cast<V*>(views[static_cast<size_t>(index)]) : nullptr;
  if (!view) qFatal("view registry: no %s view '%s'", V::staticMetaObject.className(), id);
  return view;
}

}  // namespace

void linkViews(const std::vector<QWidget*>& views, StartPage* start, const ViewLinks& links) {
  auto* architecture = viewOf<ArchitectureView>(views, "architecture");
  auto* training = viewOf<TrainingView>(views, "training");
  auto* lab = viewOf<LabView>(views, "lab");
  auto* experiments = viewOf<ExperimentsView>(views, "experiments");
  const int trainingIndex = viewIndex("training"), diagnosticsIndex = viewIndex("diagnostics");
  lab->setArchitectureModel([architecture](const QString& path) { return architecture->saveConfig(path); });
  QObject::connect(lab, &LabView::runRequested, lab, [links, diagnosticsIndex](const QString& dir) {
    if (links.openRun(dir).isEmpty()) links.showView(diagnosticsIndex);
  });
  QObject::connect(architecture, &ArchitectureView::trainRequested, training,
                   [links, training, trainingIndex](const QString& configPath) {
                     if (training->setModel(configPath)) links.showView(trainingIndex);
                   });
  QObject::connect(experiments, &ExperimentsView::curvesRequested, training,
                   [links, trainingIndex] { links.showView(trainingIndex); });
  QObject::connect(training, &TrainingView::trainingFailed, training, [links](const QString& message) {
    links.showStatus(QCoreApplication::translate("studio::MainWindow", "Training failed: %1").arg(message));
  });
  QObject::connect(start, &StartPage::trainRequested, training,
                   [links, training, trainingIndex](const QString& preset, const QString& corpus) {
                     training->setModel(preset);
                     if (!corpus.isEmpty()) training->setCorpus(corpus);
                     links.showView(trainingIndex);
                   });
  QObject::connect(start, &StartPage::trainStarterRequested, training, [links, training, trainingIndex] {
    links.showView(trainingIndex);
    if (const QString error = startStarterRun(training); !error.isEmpty())
      QMessageBox::warning(training->window(), QCoreApplication::translate("studio::MainWindow", "Train a small model now"),
                           error);
  });
}

PresentationMode* makePresentation(const std::vector<QWidget*>& views, QWidget* window) {
  return new PresentationMode(viewOf<PlaygroundView>(views, "playground"), window);
}

}  // namespace studio
