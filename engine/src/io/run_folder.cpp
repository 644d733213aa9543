// Run folders without LibTorch (hsm/run_folder.h, io/run_json.h): config.json's settings
// and state, and metrics.jsonl, written by the trainer and read by the CLI and the studio.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "hsm/run_folder.h"
#include "io/io_util.h"
#include "io/run_json.h"

namespace fs = std::filesystem;

namespace hsm {

// Field names in config.json are the struct's; missing fields keep their defaults, so runs
// written before a setting existed still load. (In namespace hsm, where ADL finds it.)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TrainSettings, steps, epochs, batch_size, lr, weight_decay, beta1,
                                                beta2, eps, grad_clip, warmup_steps, cosine, min_lr, eval_every,
                                                eval_batches, checkpoint_every, log_every, seed, device, threads, bf16,
                                                windows, keep_best)

nlohmann::json settings_to_json(const TrainSettings& s) { return s; }

TrainSettings settings_from_json(const nlohmann::json& j) { return j.get<TrainSettings>(); }

nlohmann::json metric_to_json(const MetricRecord& m) {
  nlohmann::json j = {{"kind", m.kind},   {"step", m.step},     {"total_steps", m.total_steps},
                      {"epoch", m.epoch}, {"wall_s", m.wall_s}};
  auto put = [&](const char* key, double v) {
    if (std::isfinite(v)) j[key] = v;
  };
  put("train_loss", m.train_loss);
  put("val_loss", m.val_loss);
  put("val_accuracy", m.val_accuracy);
  put("tokens_per_s", m.tokens_per_s);
  put("lr", m.lr);
  return j;
}

nlohmann::json read_run_config(const std::string& run_dir) {
  const std::string config = (fs::path(run_dir) / "config.json").string();
  if (!fs::exists(config))
    throw std::runtime_error("'" + run_dir + "' is not a run folder: no config.json (train one with `hsm train`)");
  nlohmann::json j = nlohmann::json::parse(read_text_file(config, "run config"), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("model"))
    throw std::runtime_error(config + ": not a valid run config (no \"model\" object)");
  if (j.value("format", "") != kCheckpointFormat)
    throw std::runtime_error(config + ": unknown format '" + j.value("format", "") + "', expected " +
                             kCheckpointFormat);
  return j;
}

TrainSettings stored_settings(const std::string& run_dir) {
  return settings_from_json(read_run_config(run_dir).value("training", nlohmann::json::object()));
}

std::string stored_data_path(const std::string& run_dir) {
  const auto run = read_run_config(run_dir);
  const std::string path = run.value("data", nlohmann::json::object()).value("path", "");
  if (path.empty()) throw std::runtime_error(run_dir + "/config.json names no training data; pass --data");
  return path;
}

namespace {

double number_or_nan(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

}  // namespace

std::string metric_to_json_line(const MetricRecord& m) { return metric_to_json(m).dump(); }

MetricRecord metric_from_json_line(const std::string& line) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind") || !j.contains("step"))
    throw std::invalid_argument("not a metrics record: " + line.substr(0, 80));
  MetricRecord m;
  m.kind = j.value("kind", "");
  m.step = j.value("step", int64_t{0});
  m.total_steps = j.value("total_steps", int64_t{0});
  m.epoch = j.value("epoch", 0.0);
  m.wall_s = j.value("wall_s", 0.0);
  m.train_loss = number_or_nan(j, "train_loss");
  m.val_loss = number_or_nan(j, "val_loss");
  m.val_accuracy = number_or_nan(j, "val_accuracy");
  m.tokens_per_s = number_or_nan(j, "tokens_per_s");
  m.lr = number_or_nan(j, "lr");
  return m;
}

RunInfo read_run_info(const std::string& run_dir) {
  const nlohmann::json run = read_run_config(run_dir);
  const std::string config = (fs::path(run_dir) / "config.json").string();
  RunInfo info;
  info.dir = run_dir;
  info.model = config_from_json(run["model"].dump(), config);
  info.training = settings_from_json(run.value("training", nlohmann::json::object()));
  info.data_path = run.value("data", nlohmann::json::object()).value("path", "");
  const auto state = run.value("state", nlohmann::json::object());
  info.step = state.value("step", int64_t{0});
  info.total_steps = state.value("total_steps", int64_t{0});
  info.wall_s = state.value("wall_s", 0.0);
  const auto metrics = run.value("metrics", nlohmann::json::object());
  info.val_loss = number_or_nan(metrics, "val_loss");
  info.val_accuracy = number_or_nan(metrics, "val_accuracy");
  return info;
}

bool is_run_folder(const std::string& dir) {
  try {
    read_run_config(dir);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

MetricsReader::MetricsReader(std::string run_dir) : path_((fs::path(run_dir) / "metrics.jsonl").string()) {}

std::vector<MetricRecord> MetricsReader::poll(uint64_t max_bytes) {
  reset_ = more_ = false;
  std::vector<MetricRecord> out;
  std::error_code ec;
  const uint64_t size = fs::file_size(path_, ec);
  if (ec) return out;  // not written yet
  if (size < offset_) {  // rewritten (a resume truncates records past its checkpoint)
    offset_ = 0;
    reset_ = true;
  }
  if (size == offset_) return out;
  uint64_t want = size - offset_;
  if (want > max_bytes) {
    want = std::max<uint64_t>(max_bytes, 1);
    more_ = true;
  }
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(want, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  if (more_ && chunk.find('\n') == std::string::npos) {
    // A single line longer than max_bytes: read on to its end.
    std::string rest;
    std::getline(in, rest);
    chunk += rest;
    if (!in.eof()) chunk += '\n';
  }
  size_t start = 0;
  for (size_t nl; (nl = chunk.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = chunk.substr(start, nl - start);
    if (line.empty()) continue;
    try {
      out.push_back(metric_from_json_line(line));
    } catch (const std::invalid_argument&) {
      // A foreign or damaged line: skip it rather than lose the rest of the curve.
    }
  }
  offset_ += start;  // a trailing partial line waits for the next poll
  return out;
}

std::vector<MetricRecord> read_metrics(const std::string& run_dir) { return MetricsReader(run_dir).poll(); }

}  // namespace hsm
