#include "hsm/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace hsm {
namespace {

using Kind = SettingSpec::Kind;
constexpr double kManySteps = 1e12;

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// `text` as a whole number, or false (with trailing text, a fraction, or past int64).
bool parse_integer(const std::string& text, int64_t& out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

// `text` as a finite number, or false (nan, inf and trailing text are not numbers here).
bool parse_real(const std::string& text, double& out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno == ERANGE || end == text.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  out = v;
  return true;
}

bool parse_bool(const std::string& text, bool& out) {
  if (text == "true" || text == "1" || text == "on" || text == "yes") return out = true, true;
  if (text == "false" || text == "0" || text == "off" || text == "no") return out = false, true;
  return false;
}

// auto, cpu, cuda or cuda:N: what compat::parse_device takes (checked there for the machine).
bool is_device_name(const std::string& text) {
  if (text == "auto" || text == "cpu" || text == "cuda") return true;
  if (text.rfind("cuda:", 0) != 0 || text.size() == 5 || text.size() > 8) return false;
  for (size_t i = 5; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9') return false;
  return true;
}

SettingSpec spec(const char* key, const char* flag, const char* label, const char* help, Kind kind,
                 SettingSpec::Field field, double min = 0, double max = 0, bool min_exclusive = false,
                 std::vector<std::string> choices = {}) {
  return SettingSpec{key, flag, label, help, kind, field, min, max, min_exclusive, std::move(choices)};
}

SettingSpec device_spec() {
  SettingSpec s = spec("device", "--device", "Device", "cpu, cuda, cuda:N or auto (default)", Kind::kText,
                       &TrainSettings::device);
  s.accepts = is_device_name;
  s.accepts_what = "a device";
  s.accepts_range = "use cpu, cuda, cuda:N or auto";
  return s;
}

}  // namespace

const std::vector<SettingSpec>& train_setting_specs() {
  static const std::vector<SettingSpec> specs = {
      spec("steps", "--steps", "Steps", "Optimizer steps in total; 0 = run for Epochs", Kind::kInteger,
           &TrainSettings::steps, 0, kManySteps),
      spec("epochs", "--epochs", "Epochs", "Passes over the training split when Steps is 0 (fractions allowed; the paper: 20)",
           Kind::kReal, &TrainSettings::epochs, 0, 1e6, true),
      spec("batch_size", "--batch", "Batch size",
           "Sequences per step (the paper: 256; 16-32 keeps a CPU responsive)", Kind::kInteger,
           &TrainSettings::batch_size, 1, 65536),
      spec("lr", "--lr", "Learning rate", "Peak AdamW learning rate (the paper: 0.002)", Kind::kReal, &TrainSettings::lr,
           0, 10, true),
      spec("warmup_steps", "--warmup", "Warm-up steps", "Linear warm-up from 0 over this many steps (default 0)",
           Kind::kInteger, &TrainSettings::warmup_steps, 0, kManySteps),
      spec("cosine", "--cosine", "Cosine decay", "Cosine decay from the learning rate to the final rate over the run",
           Kind::kSwitch, &TrainSettings::cosine),
      spec("min_lr", "--min-lr", "Final learning rate",
           "Where the cosine decay ends (default 0; at most the learning rate)", Kind::kReal, &TrainSettings::min_lr, 0,
           10),
      spec("weight_decay", "--weight-decay", "Weight decay", "AdamW decoupled decay, on weight matrices only (default 0.01)",
           Kind::kReal, &TrainSettings::weight_decay, 0, 1),
      spec("beta1", "--beta1", "AdamW beta1", "AdamW's first-moment decay (default 0.9)", Kind::kReal,
           &TrainSettings::beta1, 0, 0.999999),
      spec("beta2", "--beta2", "AdamW beta2", "AdamW's second-moment decay (default 0.999)", Kind::kReal,
           &TrainSettings::beta2, 0, 0.999999),
      spec("eps", "--adam-eps", "AdamW epsilon", "AdamW's epsilon (default 1e-8)", Kind::kReal, &TrainSettings::eps, 0,
           1, true),
      spec("grad_clip", "--grad-clip", "Gradient clip", "Maximum global gradient norm; 0 = off (default 1)", Kind::kReal,
           &TrainSettings::grad_clip, 0, 1e6),
      spec("eval_every", "--eval-every", "Validate every",
           "Steps between validations (also at every epoch end); 0 = epoch ends only (default 200)", Kind::kInteger,
           &TrainSettings::eval_every, 0, kManySteps),
      spec("eval_batches", "--eval-batches", "Validation batches",
           "Batches per periodic validation; 0 = the whole split (default 20)", Kind::kInteger,
           &TrainSettings::eval_batches, 0, 1e9),
      spec("checkpoint_every", "--checkpoint-every", "Checkpoint every",
           "Steps between checkpoints (also at epoch ends, on stop and at the end); 0 = only those (default 500)",
           Kind::kInteger, &TrainSettings::checkpoint_every, 0, kManySteps),
      spec("log_every", "--log-every", "Log every", "Steps between train-loss records (default 10)", Kind::kInteger,
           &TrainSettings::log_every, 1, 1e9),
      spec("windows", "--windows", "Windows",
           "packed (default; every context tokens across stories) or story_start (windows begin at story starts)",
           Kind::kChoice, &TrainSettings::windows, 0, 0, false, {"packed", "story_start"}),
      spec("keep_best", "--keep-best", "Keep the best weights",
           "Also keep best.safetensors, the weights of the lowest validation loss", Kind::kSwitch,
           &TrainSettings::keep_best),
      spec("stop_accuracy", "--stop-accuracy", "Stop at answer accuracy",
           "A task run stops early, done, at the first validation whose answer accuracy reaches this (Zoology: "
           "0.99); 0 = off (default)",
           Kind::kReal, &TrainSettings::stop_accuracy, 0, 1),
      spec("stop_stall_steps", "--stop-stall-steps", "Stop a stalled run after",
           "A run stops early, done, when its best validation loss fell by less than --stop-stall-gain over this "
           "many steps (checked from the end of the warm-up plus these steps); 0 = off (default)",
           Kind::kInteger, &TrainSettings::stop_stall_steps, 0, kManySteps),
      spec("stop_stall_gain", "--stop-stall-gain", "Stalled below a gain of",
           "The fraction of its validation loss a run must shed over --stop-stall-steps to go on (default 0.03)",
           Kind::kReal, &TrainSettings::stop_stall_gain, 0, 1),
      spec("seed", "--seed", "Seed", "Random seed: the same seed gives the same run on one machine (default 1337)",
           Kind::kInteger, &TrainSettings::seed, 0, static_cast<double>(std::numeric_limits<int64_t>::max())),
      device_spec(),
      spec("threads", "--threads", "CPU threads", "LibTorch threads; 0 = every core (default)", Kind::kInteger,
           &TrainSettings::threads, 0, 1024),
      spec("bf16", "--bf16", "bf16 on CUDA", "bf16 autocast on CUDA (default true)", Kind::kBool, &TrainSettings::bf16),
      spec("probe_text", "--probe-text", "Probe text",
           "Text diagnosed at every validation into diagnostics.jsonl (default: HSM Table 3's first prompt); "
           "empty turns the record off",
           Kind::kText, &TrainSettings::probe_text),
      spec("trace_every", "--trace-every", "Trace every",
           "Steps between the traces recorded into traces.jsonl, at validations; 0 = every validation (default)",
           Kind::kInteger, &TrainSettings::trace_every, 0, kManySteps),
      spec("trace_example", "--trace-example", "Traced example",
           "A task run's test example traced into traces.jsonl (its key replaced; default 0); -1 = no traces",
           Kind::kInteger, &TrainSettings::trace_example, -1, 1e9),
      spec("trace_text", "--trace-text", "Trace text",
           "A corpus run's clean prompt traced into traces.jsonl against --trace-corrupt; empty = no traces",
           Kind::kText, &TrainSettings::trace_text),
      spec("trace_corrupt", "--trace-corrupt", "Trace corruption",
           "--trace-text with a token replaced (the same token count): what the trace restores from",
           Kind::kText, &TrainSettings::trace_corrupt),
      spec("snapshot_every", "--snapshot-every", "Snapshot every",
           "Keep the model of every N-th step in snapshots/ (at most 32 a run), beside the newest checkpoints; "
           "0 = none (default)",
           Kind::kInteger, &TrainSettings::snapshot_every, 0, kManySteps),
      spec("snapshot_log", "--snapshot-log", "Log-spaced snapshots",
           "Keep the model of steps 1, 2, 5, 10, 20, 50, 100, ... in snapshots/ (at most 32 a run)", Kind::kSwitch,
           &TrainSettings::snapshot_log),
  };
  return specs;
}

const SettingSpec& train_setting(const std::string& key) {
  for (const SettingSpec& s : train_setting_specs())
    if (key == s.key) return s;
  throw std::invalid_argument("unknown training setting '" + key + "'");
}

std::string SettingSpec::range_text() const {
  switch (kind) {
    case Kind::kInteger:
      if (max >= kManySteps) return "use " + number_text(min) + " or more";
      return "use " + number_text(min) + " to " + number_text(max);
    case Kind::kReal:
      return min_exclusive ? "use a number above " + number_text(min) + ", at most " + number_text(max)
                           : "use " + number_text(min) + " to " + number_text(max);
    case Kind::kSwitch:
    case Kind::kBool:
      return "use true or false";
    case Kind::kChoice: {
      std::string out = "use ";
      for (size_t i = 0; i < choices.size(); ++i) out += (i ? (i + 1 == choices.size() ? " or " : ", ") : "") + choices[i];
      return out;
    }
    case Kind::kText:
      return accepts_range ? accepts_range : "use any text";
  }
  return {};
}

std::string SettingSpec::get(const TrainSettings& s) const {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = s.*member;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) return v;
        else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) return number_text(v);
        else return std::to_string(v);
      },
      field);
}

void SettingSpec::set(TrainSettings& s, const std::string& text) const {
  auto refuse = [&](const std::string& what) { throw SettingError(key, flag, what + "; " + range_text()); };
  const std::string shown = text.empty() ? "(empty)" : "'" + text + "'";
  switch (kind) {
    case Kind::kInteger: {
      int64_t v = 0;
      if (!parse_integer(text, v)) refuse(shown + " is not a whole number");
      if (static_cast<double>(v) < min || static_cast<double>(v) > max) refuse(text + " is out of range");
      std::visit(
          [&](auto member) {
            using T = std::decay_t<decltype(s.*member)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) s.*member = static_cast<T>(v);
          },
          field);
      return;
    }
    case Kind::kReal: {
      double v = 0;
      if (!parse_real(text, v)) refuse(shown + " is not a number");
      if ((min_exclusive ? v <= min : v < min) || v > max) refuse(text + " is out of range");
      s.*std::get<double TrainSettings::*>(field) = v;
      return;
    }
    case Kind::kSwitch:
    case Kind::kBool: {
      bool v = false;
      if (!parse_bool(text, v)) refuse(shown + " is not true or false");
      s.*std::get<bool TrainSettings::*>(field) = v;
      return;
    }
    case Kind::kChoice:
      for (const std::string& c : choices)
        if (text == c) {
          s.*std::get<std::string TrainSettings::*>(field) = text;
          return;
        }
      refuse(shown + " is not one of them");
      return;
    case Kind::kText:
      if (accepts && !accepts(text)) refuse(shown + " is not " + accepts_what);
      s.*std::get<std::string TrainSettings::*>(field) = text;
      return;
  }
}

void validate_train_settings(const TrainSettings& s) {
  // Each value as its own text through its declaration: the same checks as a typed one.
  for (const SettingSpec& spec : train_setting_specs()) {
    TrainSettings copy = s;
    if (spec.kind == Kind::kReal) {  // a NaN prints as "nan": refused as not a number
      spec.set(copy, spec.get(s));
    } else if (spec.kind == Kind::kInteger || spec.kind == Kind::kChoice || spec.kind == Kind::kText) {
      spec.set(copy, spec.get(s));
    }
  }
  if (s.steps == 0 && !(s.epochs > 0))
    throw SettingError("steps", "--steps", "0 with no epochs either; give a positive number of steps or epochs");
  if (s.cosine && s.min_lr > s.lr)
    throw SettingError("min_lr", "--min-lr",
                       number_text(s.min_lr) + " is above the learning rate " + number_text(s.lr) +
                           "; the cosine decay goes down to it, so use at most " + number_text(s.lr));
}

}  // namespace hsm
