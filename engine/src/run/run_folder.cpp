// Run folders without LibTorch (hsm/run_folder.h, run/run_json.h): config.json's settings
// and state, and metrics.jsonl, written by the trainer and read by the CLI and the studio.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "hsm/errors.h"
#include "hsm/run_folder.h"
#include "hsm/tasks.h"
#include "hsm/tokenizer.h"
#include "io/io_util.h"
#include "run/run_json.h"
#include "run/staging.h"

namespace fs = std::filesystem;

namespace hsm {

// Field names in config.json are the struct's; missing fields keep their defaults, so runs
// written before a setting existed still load. (In namespace hsm, where ADL finds it.)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TrainSettings, steps, epochs, batch_size, lr, weight_decay, beta1,
                                                beta2, eps, grad_clip, warmup_steps, cosine, min_lr, eval_every,
                                                eval_batches, checkpoint_every, log_every, seed, device, threads, bf16,
                                                windows, keep_best, probe_text, stop_accuracy, stop_stall_steps,
                                                stop_stall_gain, trace_every, trace_example, trace_text,
                                                trace_corrupt, snapshot_every, snapshot_log)

// The early stops only where they are set: a run without them writes the config.json it always wrote.
nlohmann::json settings_to_json(const TrainSettings& s) {
  nlohmann::json j = s;
  if (s.stop_accuracy == 0) j.erase("stop_accuracy");
  if (s.stop_stall_steps == 0) {
    j.erase("stop_stall_steps");
    j.erase("stop_stall_gain");
  }
  return j;
}

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
  put("answer_accuracy", m.answer_accuracy);
  put("sequence_accuracy", m.sequence_accuracy);
  put("tokens_per_s", m.tokens_per_s);
  put("lr", m.lr);
  return j;
}

std::string run_config_text(const RunRecord& r) {
  nlohmann::json run;
  run["format"] = kCheckpointFormat;
  run["model"] = nlohmann::json::parse(r.model_json);
  run["training"] = settings_to_json(r.training);
  run["data"] = {{"path", r.data_path},
                 {"tokenizer_hash", r.tokenizer_hash},
                 {"train_tokens", r.train_tokens},
                 {"val_tokens", r.val_tokens},
                 {"documents", r.documents},
                 {"train_documents", r.train_documents},
                 {"val_documents", r.val_documents},
                 {"dropped_short", r.dropped_short},
                 {"val_fraction", r.val_fraction},
                 {"split_seed", r.split_seed}};
  run["state"] = {{"step", r.step},
                  {"total_steps", r.total_steps},
                  {"steps_per_epoch", r.steps_per_epoch},
                  {"batch_size", r.batch_size},
                  {"wall_s", r.wall_s},
                  {"finished", r.step >= r.total_steps}};
  if (r.best_step >= 0) {
    run["state"]["best_step"] = r.best_step;
    run["state"]["best_val_loss"] = r.best_val_loss;
  }
  nlohmann::json metrics = {{"step", r.step}, {"epoch", static_cast<double>(r.step) / r.steps_per_epoch}};
  if (std::isfinite(r.train_loss)) metrics["train_loss"] = r.train_loss;
  if (std::isfinite(r.last_eval.val_loss)) {
    metrics["val_loss"] = r.last_eval.val_loss;
    metrics["val_accuracy"] = r.last_eval.val_accuracy;
    metrics["val_step"] = r.last_eval.step;
  }
  if (std::isfinite(r.tokens_per_s)) metrics["tokens_per_s"] = r.tokens_per_s;
  run["metrics"] = metrics;
  return run.dump(2) + "\n";
}

nlohmann::json parse_run_config(const std::string& text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw std::runtime_error(path + ": not a valid run config (no \"model\" object)");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kCheckpointFormat)
    throw std::runtime_error(path + ": unknown format " + (format == j.end() ? std::string("(none)") : format->dump()) +
                             ", expected " + kCheckpointFormat);
  // Every value the tools read, of the type they read it as, so that a damaged file is named
  // here and not by the JSON library later ("type must be number, but is string").
  auto damaged = [&](const std::string& what) {
    throw std::runtime_error(path + ": " + what + " (the file is damaged; a run folder's checkpoints/ keeps a copy)");
  };
  for (const char* section : {"training", "data", "state", "metrics"})
    if (j.contains(section) && !j[section].is_object()) damaged(std::string("\"") + section + "\" is not an object");
  if (j.contains("training")) {
    try {
      settings_from_json(j["training"]);
    } catch (const nlohmann::json::exception& e) {
      damaged("\"training\" holds a value of the wrong type (" + json_error_text(e.what()) + ")");
    }
  }
  const auto check = [&](const char* section, const char* key, bool integer) {
    if (!j.contains(section) || !j[section].contains(key)) return;
    const nlohmann::json& v = j[section][key];
    if (integer ? !(v.is_number_integer() || v.is_number_unsigned()) : !v.is_number())
      damaged(std::string("\"") + section + "\".\"" + key + "\" is not " + (integer ? "a whole number" : "a number"));
  };
  for (const char* key : {"step", "total_steps", "steps_per_epoch", "batch_size", "best_step"}) check("state", key, true);
  for (const char* key : {"wall_s", "best_val_loss"}) check("state", key, false);
  for (const char* key : {"val_loss", "val_accuracy", "train_loss", "tokens_per_s", "epoch"}) check("metrics", key, false);
  if (j.contains("data") && j["data"].contains("path") && !j["data"]["path"].is_string())
    damaged("\"data\".\"path\" is not text");
  if (j.contains("what_if")) what_if_knock_outs(j["what_if"], path);
  return j;
}

nlohmann::json what_if_to_json(const WhatIf& w, const std::string& source_dir) {
  nlohmann::json knock_out = nlohmann::json::array(), ab = nlohmann::json::array();
  for (const KnockOut& k : w.knock_out) knock_out.push_back({{"layer", k.layer}, {"head", k.head}});
  for (const AbEdit& e : w.ab) ab.push_back({{"layer", e.layer}, {"a", e.a}, {"b", e.b}});
  return {{"source", source_dir}, {"label", what_if_label(w)}, {"knock_out", knock_out}, {"ab", ab}};
}

std::vector<KnockOut> what_if_knock_outs(const nlohmann::json& what_if, const std::string& path) {
  auto damaged = [&](const std::string& what) -> void {
    throw std::runtime_error(path + ": \"what_if\" " + what + " (the file is damaged)");
  };
  if (!what_if.is_object()) damaged("is not an object");
  std::vector<KnockOut> out;
  const auto list = what_if.find("knock_out");
  if (list == what_if.end()) return out;
  if (!list->is_array()) damaged("has a \"knock_out\" that is not a list");
  auto index = [&](const nlohmann::json& k, const char* key, int64_t lowest) {
    const auto it = k.find(key);
    if (it == k.end() || !it->is_number_integer() || it->get<int64_t>() < lowest || it->get<int64_t>() > 1'000'000)
      damaged(std::string("has a knock-out whose \"") + key + "\" is not an index");
    return it->get<int64_t>();
  };
  for (const nlohmann::json& k : *list) {
    if (!k.is_object()) damaged("has a knock-out that is not an object");
    out.push_back({index(k, "layer", 0), k.contains("head") ? index(k, "head", -1) : -1});
  }
  return out;
}

nlohmann::json read_run_config(const std::string& run_dir) {
  const std::string config = RunFolder(run_dir).config;
  if (!fs::exists(config))
    throw std::runtime_error("'" + run_dir + "' is not a run folder: no config.json (train one with `hsm train`)");
  return parse_run_config(read_text_file(config, "run config"), config);
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

// A metrics field, checked: absent reads as `missing`; present but not a number is refused
// (one line with "step": "12" stopped runs from opening before).
double metric_number(const nlohmann::json& j, const char* key, double missing) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return missing;
  if (!it->is_number()) throw std::invalid_argument(std::string("\"") + key + "\" is not a number");
  return it->get<double>();
}

int64_t metric_integer(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (!it->is_number_integer() && !it->is_number_unsigned())
    throw std::invalid_argument(std::string("\"") + key + "\" is not a whole number");
  const auto v = it->get<int64_t>();
  if (v < 0) throw std::invalid_argument(std::string("\"") + key + "\" is negative");
  return v;
}

}  // namespace

std::string metric_to_json_line(const MetricRecord& m) { return metric_to_json(m).dump(); }

MetricRecord metric_from_json_line(const std::string& line) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("not a JSON object");
  auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string()) throw std::invalid_argument("no \"kind\" text");
  if (!j.contains("step")) throw std::invalid_argument("no \"step\"");
  MetricRecord m;
  m.kind = kind->get<std::string>();
  m.step = metric_integer(j, "step");
  m.total_steps = metric_integer(j, "total_steps");
  m.epoch = metric_number(j, "epoch", 0.0);
  m.wall_s = metric_number(j, "wall_s", 0.0);
  m.train_loss = metric_number(j, "train_loss", NAN);
  m.val_loss = metric_number(j, "val_loss", NAN);
  m.val_accuracy = metric_number(j, "val_accuracy", NAN);
  m.answer_accuracy = metric_number(j, "answer_accuracy", NAN);
  m.sequence_accuracy = metric_number(j, "sequence_accuracy", NAN);
  m.tokens_per_s = metric_number(j, "tokens_per_s", NAN);
  m.lr = metric_number(j, "lr", NAN);
  return m;
}

RunInfo read_run_info(const std::string& run_dir) {
  const nlohmann::json run = read_run_config(run_dir);
  const std::string config = RunFolder(run_dir).config;
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

MetricsReader::MetricsReader(std::string run_dir) : tail_(RunFolder(run_dir).metrics) {}

std::vector<MetricRecord> MetricsReader::poll(uint64_t max_bytes) {
  std::vector<MetricRecord> out;
  tail_.poll(max_bytes, kMaxLineBytes, "metrics record",
             [&](const std::string& line) { out.push_back(metric_from_json_line(line)); });
  return out;
}

std::vector<MetricRecord> read_metrics(const std::string& run_dir) { return MetricsReader(run_dir).poll(); }

Tokenizer load_run_tokenizer(const std::string& run_dir, const nlohmann::json& run_config) {
  const RunFolder paths(run_dir);
  if (!fs::exists(paths.tokenizer))
    throw std::runtime_error(paths.tokenizer + " is missing: a run folder keeps the tokenizer it was trained with");
  Tokenizer tokenizer = Tokenizer::load(paths.tokenizer);
  const nlohmann::json data = run_config.value("data", nlohmann::json::object());
  const auto recorded = data.find("tokenizer_hash");
  if (recorded != data.end() && recorded->is_string() && recorded->get<std::string>() != tokenizer.hash())
    throw std::runtime_error(paths.tokenizer + " is not the tokenizer this model was trained with (its hash is " +
                             tokenizer.hash() + ", config.json records " + recorded->get<std::string>() +
                             "): the same text would become other token ids. Put the run's own tokenizer.model "
                             "back, or train a new run with this tokenizer (hsm train --tokenizer)");
  const int64_t vocab = run_config.value("model", nlohmann::json::object()).value("vocab_size", int64_t{0});
  if (vocab > 0 && tokenizer.vocab_size() != vocab)
    throw std::runtime_error(paths.tokenizer + " has " + std::to_string(tokenizer.vocab_size()) +
                             " tokens, but config.json's model has vocab_size " + std::to_string(vocab));
  return tokenizer;
}

void check_run_fits_task(const std::string& run_dir, const ModelConfig& model, const Task& task) {
  try {
    check_model_fits_task(model, task);
  } catch (const TaskError& e) {
    throw TaskError(RunFolder(run_dir).task + " does not match the run's model (config.json): " + e.what() +
                    "; a task run's task.json must be the one it was trained on");
  }
}

}  // namespace hsm
