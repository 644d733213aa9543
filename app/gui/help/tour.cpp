#include "gui/help/tour.h"

#include <QCoreApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>
#include <algorithm>
#include <cstring>
#include <iterator>

#include "gui/help/view_help.h"
#include "gui/widgets/glossary.h"

namespace studio::help {
namespace {

constexpr const char* kSeenKey = "help/tour_seen";

struct Step {
  const char* view;  // the view's id in the registry (view_registry.h), nullptr = start page
  const char* text;
};
// The order a newcomer meets the ideas: what a model is, what it says, how it learns, what it
// learned, how it mixes, what drives it; then comparing models and running experiments.
const Step kSteps[] = {
    {nullptr, QT_TRANSLATE_NOOP("tour",
                           "Welcome. HSM Studio shows small language models that continue stories. Some use GPT's "
                           "attention (every token looks at every earlier one); others use Hierarchical Shift "
                           "Mixing (each layer looks back at just one token, twice as far as the layer below: 1, 2, 4, 8, … tokens). The bundled demo models are gpt, hsm_ab and "
                           "hybrid_0_6; the Run selector above switches between the open ones.")},
    {"playground", QT_TRANSLATE_NOOP("tour",
                          "The Playground: pick one of the paper's prompts and press Generate. Each token is tinted "
                          "by how likely the model found it; hover one for the alternatives. Tick “Compare every open "
                          "model” to see gpt and hsm_ab side by side. F11 presents a story full screen.")},
    {"architecture", QT_TRANSLATE_NOOP("tour",
                          "Architecture: the layers of the current model, its parameters, and the receptive field: "
                          "click a token in the diagram to see which earlier tokens can reach it, layer by layer.")},
    {"training", QT_TRANSLATE_NOOP("tour",
                          "Training: the curves of how the model learned (lower loss is better), and the form to "
                          "train your own, for example “Train a small model now” on the start page.")},
    {"weights", QT_TRANSLATE_NOOP("tour",
                          "Weights: what the mixers learned; for hsm_ab the two numbers a and b of each layer. Drag a "
                          "bar to try a what-if edit and see the loss change; the model on disk is never touched.")},
    {"diagnostics", QT_TRANSLATE_NOOP("tour",
                          "Diagnostics: for a prompt, how each layer mixes the tokens, and eight indicators that sum "
                          "it up (hover a column header for its meaning).")},
    {"probe", QT_TRANSLATE_NOOP("tour",
                          "Probe: what each layer would predict, what an output drew on through all layers, and which "
                          "layers the model needs most. Help › What am I looking at? (F1) explains any view; this tour "
                          "is under Help too.")},
    // Issue 51: the Trace view.
    {"trace", QT_TRANSLATE_NOOP("tour",
                          "Trace: why the model answers as it does. Replace one word of a prompt (Lily by Sue) and "
                          "see, layer by layer and position by position, which activation brings the answer back; "
                          "an HSM model can only carry it along its shifts. Beside traces a second model on the same "
                          "prompts.")},
    {"losses", QT_TRANSLATE_NOOP("tour",
                          "Losses: the loss of each open model token by token on the same text: where one model "
                          "beats the other, by position, by distance back to a token's last occurrence and by "
                          "document.")},
    {"lab", QT_TRANSLATE_NOOP("tour",
                          "Lab: a grid of small models trained on synthetic tasks (recall, copying, compression), "
                          "one row per model, one column per task; each cell is the best accuracy over the learning "
                          "rates. Double-click a cell to open its run in the other views.")},
    {"experiments", QT_TRANSLATE_NOOP("tour",
                          "Experiments: a sweep's runs in one table, its settings beside their results, the mean "
                          "and spread over seeds; select rows to overlay their curves in Training.")},
};

}  // namespace

Tour::Tour(const std::vector<ViewEntry>& views, std::function<void(int)> showView, std::function<int()> openDemo,
           QWidget* parent)
    : QDialog(parent), views_(views), showView_(std::move(showView)), openDemo_(std::move(openDemo)) {
  setObjectName(QStringLiteral("tour"));
  setWindowTitle(tr("A tour of HSM Studio"));
  title_ = new QLabel;
  body_ = new QLabel;
  body_->setObjectName(QStringLiteral("tour_text"));
  body_->setWordWrap(true);
  body_->setMinimumWidth(380);
  counter_ = new QLabel;
  auto* skip = new QPushButton(tr("Skip the tour"));
  skip->setObjectName(QStringLiteral("tour_skip"));
  back_ = new QPushButton(tr("Back"));
  next_ = new QPushButton(tr("Next"));
  next_->setObjectName(QStringLiteral("tour_next"));
  next_->setDefault(true);
  connect(skip, &QPushButton::clicked, this, &Tour::skip);
  connect(back_, &QPushButton::clicked, this, [this] { goTo(step_ - 1); });
  connect(next_, &QPushButton::clicked, this, &Tour::next);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(counter_);
  buttons->addStretch(1);
  buttons->addWidget(skip);
  buttons->addWidget(back_);
  buttons->addWidget(next_);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(body_, 1);
  layout->addLayout(buttons);
  // Closing the window is skipping it: it does not come back by itself.
  connect(this, &QDialog::finished, this, [] { setSeen(true); });
}

int Tour::stepCount() const { return static_cast<int>(std::size(kSteps)); }

void Tour::goTo(int step) {
  step_ = std::clamp(step, 0, stepCount() - 1);
  if (step_ == 0 && openDemo_) openDemo_();
  const Step& s = kSteps[step_];
  if (showView_) showView_(stepView());
  const int view = stepView();
  title_->setText(QStringLiteral("<h3>%1</h3>").arg(viewTitle(view >= 0 ? &views_[static_cast<size_t>(view)] : nullptr)));
  body_->setText(QCoreApplication::translate("tour", s.text));
  counter_->setText(tr("%1 of %2").arg(step_ + 1).arg(stepCount()));
  back_->setEnabled(step_ > 0);
  next_->setText(step_ + 1 < stepCount() ? tr("Next") : tr("Done"));
}

void Tour::next() {
  if (step_ + 1 < stepCount())
    goTo(step_ + 1);
  else
    skip();
}

void Tour::skip() {
  setSeen(true);
  done(QDialog::Rejected);
}

QString Tour::stepText() const { return body_->text(); }
int Tour::stepView() const {
  if (!kSteps[step_].view) return -1;
  for (size_t i = 0; i < views_.size(); ++i)
    if (std::strcmp(views_[i].id, kSteps[step_].view) == 0) return static_cast<int>(i);
  return -1;
}

bool Tour::seen() { return QSettings().value(QLatin1String(kSeenKey), false).toBool(); }
void Tour::setSeen(bool seen) { QSettings().setValue(QLatin1String(kSeenKey), seen); }

}  // namespace studio::help
