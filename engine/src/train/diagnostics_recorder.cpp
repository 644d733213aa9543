#include "train/diagnostics_recorder.h"

#include <chrono>
#include <filesystem>

#include "eval/diagnose.h"
#include "hsm/diagnostics_log.h"
#include "hsm/run_folder.h"
#include "train/eval_mode.h"

namespace fs = std::filesystem;

namespace hsm {

DiagnosticsRecorder::DiagnosticsRecorder(RunFolder& folder, const std::string& prompt, bool resume,
                                         int64_t start_step, const std::function<void(const std::string&)>& log)
    : folder_(folder), prompt_(prompt) {
  // A new run's records start afresh (a killed start may have left some).
  std::optional<std::string> kept;
  std::error_code ec;
  if (resume && fs::exists(folder.diagnostics, ec)) {  // as the metrics: records past the checkpoint go
    kept.emplace();
    DiagnosticsLogReader reader(folder.dir);
    for (const DiagnosticsRecord& r : reader.poll())
      if (r.step <= start_step) *kept += diagnostics_record_to_json_line(r) + "\n";
    for (const std::string& problem : reader.problems()) log(problem);
    if (reader.skipped() > 0) log(std::to_string(reader.skipped()) + " damaged line(s) of diagnostics.jsonl dropped");
  }
  folder.start_diagnoses(kept, on());
}

void DiagnosticsRecorder::record(Gpt& model, const Tokenizer& tokenizer, int64_t step, const torch::Device& device) {
  if (!on()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const EvalModeScope eval_mode(model);  // no dropout: the same model `hsm diagnose` loads
  const DiagnosticsRecord r = diagnostics_record(model, tokenizer, prompt_, step, device);
  if (const std::string failure = folder_.append_diagnosis(diagnostics_record_to_json_line(r)); !failure.empty())
    throw std::runtime_error("cannot write " + folder_.diagnostics + " (" + failure + ")");
  ++records_;
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace hsm
