#include "train/diagnostics_recorder.h"

#include <chrono>
#include <filesystem>

#include "eval/diagnose.h"
#include "hsm/diagnostics_log.h"
#include "hsm/run_folder.h"
#include "train/eval_mode.h"
#include "io/io_util.h"

namespace fs = std::filesystem;

namespace hsm {

DiagnosticsRecorder::DiagnosticsRecorder(const std::string& run_dir, const std::string& prompt, bool resume,
                                         int64_t start_step, const std::function<void(const std::string&)>& log)
    : path_(RunFolder(run_dir).diagnostics), prompt_(prompt) {
  std::error_code ec;
  if (resume && fs::exists(path_, ec)) {  // as the metrics: records past the checkpoint go
    std::string kept;
    DiagnosticsLogReader reader(run_dir);
    for (const DiagnosticsRecord& r : reader.poll())
      if (r.step <= start_step) kept += diagnostics_record_to_json_line(r) + "\n";
    for (const std::string& problem : reader.problems()) log(problem);
    if (reader.skipped() > 0) log(std::to_string(reader.skipped()) + " damaged line(s) of diagnostics.jsonl dropped");
    write_file_atomic(path_, kept);
  } else if (!resume) {
    fs::remove(path_, ec);  // a new run's records start afresh (a killed start may have left some)
  }
  if (!on()) return;
  out_.emplace(path_, false);
}

void DiagnosticsRecorder::record(Gpt& model, const Tokenizer& tokenizer, int64_t step, const torch::Device& device) {
  if (!on()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const EvalModeScope eval_mode(model);  // no dropout: the same model `hsm diagnose` loads
  const DiagnosticsRecord r = diagnostics_record(model, tokenizer, prompt_, step, device);
  if (const std::string failure = out_->append(diagnostics_record_to_json_line(r)); !failure.empty())
    throw std::runtime_error("cannot write " + path_ + " (" + failure + ")");
  ++records_;
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace hsm
