// What the one trainer of a run folder writes into it (hsm/run_folder.h, "Writing"): its record
// files appended one line at a time, its task or tokenizer, and the clean-up of a failed start.
// The trainer and the diagnostics recorder open none of these files themselves.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hsm/run_folder.h"
#include "hsm/tokenizer.h"
#include "io/io_util.h"
#include "io/record_log.h"

namespace fs = std::filesystem;

namespace hsm {

namespace {

// A record file started for a run: kept (a resumed run) -> the file becomes `kept` and goes on;
// none (a new run) -> it starts afresh: emptied when recording, else removed (no file).
std::shared_ptr<RecordLog> start_records(const std::string& path, const std::optional<std::string>& kept,
                                         bool recording) {
  if (kept) {
    write_file_atomic(path, *kept);
  } else if (!recording) {
    std::error_code ec;
    fs::remove(path, ec);
  }
  if (!recording) return nullptr;
  return std::make_shared<RecordLog>(path, !kept);
}

std::string append_record(const std::shared_ptr<RecordLog>& log, const std::string& path, const std::string& line) {
  if (!log) throw std::logic_error(path + ": appended to before the run started it");
  return log->append(line);
}

}  // namespace

void RunFolder::start_metrics(const std::optional<std::string>& kept) {
  metrics_log_ = start_records(metrics, kept, true);
}

std::string RunFolder::append_metric(const MetricRecord& m) {
  return append_record(metrics_log_, metrics, metric_to_json_line(m));
}

size_t RunFolder::flush_metrics() {
  if (!metrics_log_) return 0;
  metrics_log_->flush();
  return metrics_log_->held() + metrics_log_->dropped();
}

void RunFolder::start_diagnoses(const std::optional<std::string>& kept, bool recording) {
  diagnoses_log_ = start_records(diagnostics, kept, recording);
}

std::string RunFolder::append_diagnosis(const std::string& json_line) {
  return append_record(diagnoses_log_, diagnostics, json_line);
}

void RunFolder::start_traces(bool resumed, bool recording) {
  if (resumed) {
    traces_log_ = recording ? std::make_shared<RecordLog>(traces, false) : nullptr;
    return;
  }
  traces_log_ = start_records(traces, std::nullopt, recording);
}

std::string RunFolder::append_trace(const std::string& json_line) {
  return append_record(traces_log_, traces, json_line);
}

void RunFolder::write_task(const std::string& task_spec) const {
  write_file_atomic(task, nlohmann::json{{"task", task_spec}}.dump(2) + "\n");
}

void RunFolder::write_tokenizer(const Tokenizer& t) const { t.save(tokenizer); }

void RunFolder::clear(bool made_here) const {
  std::error_code ec;
  if (made_here) {
    fs::remove_all(dir, ec);
    return;
  }
  for (const std::string& f : {tokenizer, task, metrics, diagnostics, traces, config, weights, lock}) fs::remove(f, ec);
  fs::remove_all(checkpoints, ec);
  fs::remove_all(snapshots, ec);
}

}  // namespace hsm
