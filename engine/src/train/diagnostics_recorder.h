#pragma once
// RUN/diagnostics.jsonl while training (issue 23, hsm/diagnostics_log.h): at every validation
// the trainer diagnoses its probe text (TrainSettings::probe_text) and appends one record.
#include <torch/torch.h>

#include <functional>
#include <string>

#include "hsm/run_folder.h"
#include "hsm/tokenizer.h"
#include "model/model.h"

namespace hsm {

class DiagnosticsRecorder {
 public:
  // Starts the folder's diagnostics.jsonl (RunFolder::start_diagnoses; the folder outlives the
  // recorder). A resumed run keeps the records up to start_step (later ones were made after its
  // checkpoint and are made again) and appends; a new run starts the file afresh. An empty
  // prompt records nothing (a new run then has no file). Problems with the old file's lines go
  // to `log`.
  DiagnosticsRecorder(RunFolder& folder, const std::string& prompt, bool resume, int64_t start_step,
                      const std::function<void(const std::string&)>& log);
  bool on() const { return !prompt_.empty(); }
  // Appends the record of `model` at `step` (flushed). The model is diagnosed in eval mode
  // without gradients and put back in the mode it was in; nothing of its state changes.
  void record(Gpt& model, const Tokenizer& tokenizer, int64_t step, const torch::Device& device);
  double seconds() const { return seconds_; }  // spent in record() so far
  int64_t records() const { return records_; }

 private:
  RunFolder& folder_;
  std::string prompt_;
  double seconds_ = 0;
  int64_t records_ = 0;
};

}  // namespace hsm
