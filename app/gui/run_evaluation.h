#pragma once
// One headline loss per model (issue 48): a run's own evaluation of its checkpoint, on every
// window of its validation split in the layout it trained on, as `hsm eval` and the Training
// view's last validation give it. Every view shows that number as the model's loss; a loss on
// fewer windows (a quick what-if, the first N windows scored token by token) is shown beside
// it and named as such, never in its place.
#include <QString>
#include <optional>

namespace studio {

struct RunEntry;

struct RunEvaluation {
  double loss = 0;
  double accuracy = 0;
  qint64 step = 0;
};

// The validation record at the checkpoint's own step, when that validation scored every window
// (training's eval_batches 0) of the corpus `dataPath`: known without computing anything. None
// for a task run, a partial validation, a run without a record at its checkpoint's step, or
// another corpus.
std::optional<RunEvaluation> recorded_evaluation(const RunEntry& run, const QString& dataPath);

// The headline, e.g. "its evaluation: 3.5651 nats (all 617 story_start windows)"; a window
// count of 0 says "all validation windows" (a record does not count them).
QString evaluation_text(double loss, qint64 windows, const QString& layout);
// A loss on fewer windows, beside the headline: "3.9594 nats on the first 64 windows".
QString partial_loss_text(double loss, qint64 windows);

}  // namespace studio
