#pragma once
// RUN/traces.jsonl while training (issue 67, hsm/formation.h): at validations the trainer traces
// one fixed example — a task run's test example with its key replaced (as `hsm trace --example`),
// a corpus run's clean/corrupted prompt pair (TrainSettings::trace_text, trace_corrupt) — and
// appends one record: the exact patching maps and the routes, as `hsm trace` gives them on that
// step's weights (the same code: eval/causal_trace.h), and the validation's loss and accuracy.
#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>

#include "eval/causal_trace.h"
#include "hsm/train_settings.h"
#include "model/model.h"

namespace hsm {

class Tokenizer;
class RunFolder;

class TraceRecorder {
 public:
  // Starts the folder's traces.jsonl (RunFolder::start_traces). A resumed run keeps the records up to start_step (later ones
  // are made again) and appends; a new run starts the file afresh. The example: task's test
  // example settings.trace_example (a task run), else settings.trace_text against trace_corrupt
  // tokenised by `tokenizer`; off (no file for a new run) when those say so. A pair that cannot
  // be traced (different token counts) is named to `log` and leaves the recorder off.
  TraceRecorder(RunFolder& folder, const TrainSettings& settings, const Task* task, const Tokenizer* tokenizer,
                const ModelConfig& config, bool resume, int64_t start_step,
                const std::function<void(const std::string&)>& log);
  bool on() const { return request_.has_value(); }
  // Whether a validation at `step` is recorded: every one (trace_every 0) or the first at least
  // trace_every steps after the last record, while the log holds fewer than kMaxTraceRecords.
  bool due(int64_t step) const;
  // Appends the record of `model` at `step` (flushed), with the validation's loss and accuracy.
  // The model is traced in eval mode without gradients and put back in the mode it was in.
  void record(Gpt& model, int64_t step, double val_loss, double accuracy);
  double seconds() const { return seconds_; }  // spent in record() so far
  int64_t records() const { return records_; }  // in the log (a resumed run's kept ones too)

 private:
  RunFolder& folder_;
  std::string example_;
  int64_t every_ = 0, last_step_ = -1;
  std::optional<TraceRequest> request_;
  TokenLabel label_;
  double seconds_ = 0;
  int64_t records_ = 0;
};

}  // namespace hsm
