// Sweep specs: parsed, every point built and checked before any run starts, the manifest and
// the points' state files (hsm/sweep.h, docs/sweeps.md).
#include "hsm/sweep.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <regex>
#include <stdexcept>

#include "hsm/errors.h"
#include "hsm/grid_workers.h"
#include "hsm/mixer_kind.h"
#include "hsm/presets.h"
#include "hsm/settings.h"
#include "hsm/task_run.h"
#include "hsm/tasks.h"
#include "io/io_util.h"

namespace hsm {
namespace fs = std::filesystem;
// Ordered: axes and a point's settings keep the order the spec gives them (names, the product's order).
using json = nlohmann::ordered_json;

namespace {

// A spec's text that becomes part of the Slurm job script (issue 46): only what Slurm accepts
// for the field, so no newline, quote or shell metacharacter ever reaches the script.
void check_slurm_text(const std::string& field, const std::string& value, const std::regex& accepted,
                      const std::string& use) {
  if (!std::regex_match(value, accepted))
    throw std::invalid_argument("sweep spec: " + field + " " + json(value).dump() + ": " + use);
}

const std::regex kNameText("[A-Za-z0-9._+=,@-]{1,100}");
const std::regex kTimeText("[0-9]{1,9}(-[0-9]{1,4})?(:[0-9]{1,4}){0,2}|UNLIMITED|INFINITE|unlimited|infinite");
const std::regex kPartitionText("[A-Za-z0-9._-]{1,64}(,[A-Za-z0-9._-]{1,64}){0,31}");

// A whole number of a resource in [lo, hi], or a refusal naming it.
int64_t resource_count(const std::string& key, const json& v, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw std::invalid_argument("sweep spec: resources." + key + " " + v.dump() + ": use a whole number from " +
                                std::to_string(lo) + " to " + std::to_string(hi));
  return v.get<int64_t>();
}

// A path from the spec: absolute as given; else beside the spec when it is there, else from
// the working directory.
std::string resolve_path(const std::string& p, const std::string& base_dir) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  const fs::path beside = fs::path(base_dir) / p;
  if (fs::exists(beside)) return fs::absolute(beside).lexically_normal().string();
  return fs::absolute(p).lexically_normal().string();
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A training setting by its key ("batch_size") or its flag without dashes ("batch").
const SettingSpec* find_setting(const std::string& name) {
  for (const SettingSpec& s : train_setting_specs())
    if (name == s.key || "--" + name == s.flag) return &s;
  return nullptr;
}

std::string setting_names() {
  std::string all;
  for (const SettingSpec& s : train_setting_specs()) all += (all.empty() ? "" : ", ") + std::string(s.key);
  return all;
}

void set_setting(TrainSettings& t, const SettingSpec& s, const json& v) {
  s.set(t, v.is_boolean() ? (v.get<bool>() ? "true" : "false") : value_text(v));
  if (std::string(s.key) == "epochs") t.steps = 0;  // run by epochs, as hsm train --epochs does
}

// A layer's mixer changed: a single-head mixer takes 1 head; a multi-head one coming from a
// single-head mixer takes its paper's count (the count the base had is kept otherwise).
void set_mixer(json& layer, const std::string& mixer) {
  const bool was_multi =
      is_mixer_id(layer.value("mixer", "attn")) && mixer_info(layer.value("mixer", "attn")).multi_head;
  layer["mixer"] = mixer;
  if (!is_mixer_id(mixer)) return;  // the config's check names it
  const MixerInfo& info = mixer_info(mixer);
  if (!info.multi_head)
    layer["heads"] = 1;
  else if (!was_multi)
    layer["heads"] = info.default_heads;
}

// "hsm_ab@0,6" or {"mixer": "hsm_ab", "layers": [0, 6], "ffn": 1024, "others": "attn"}: the
// listed layers (or "all") take the mixer (and FFN width), the others `others` (default attn).
void apply_placement(json& model, const json& v) {
  std::string mixer, others = "attn";
  std::vector<int64_t> layers;
  bool all = false;
  int64_t ffn = 0;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const size_t at = s.find('@');
    if (at == std::string::npos) throw std::invalid_argument("write MIXER@LAYERS, e.g. hsm_ab@0,6 or hsm_ab@all");
    mixer = s.substr(0, at);
    const std::string list = s.substr(at + 1);
    if (list == "all") {
      all = true;
    } else if (!list.empty() && list != "none") {
      std::stringstream ss(list);
      std::string item;
      while (std::getline(ss, item, ',')) try {
          size_t used = 0;
          layers.push_back(std::stoll(item, &used));
          if (used != item.size()) throw std::invalid_argument(item);
        } catch (const std::exception&) {
          throw std::invalid_argument("'" + item + "' is not a layer number");
        }
    }
  } else if (v.is_object()) {
    for (const auto& [k, x] : v.items())
      if (k != "mixer" && k != "layers" && k != "ffn" && k != "others")
        throw std::invalid_argument("unknown field '" + k + "'; use mixer, layers, ffn, others");
    mixer = v.at("mixer").get<std::string>();
    others = v.value("others", others);
    ffn = v.value("ffn", int64_t{0});
    const json& l = v.at("layers");
    if (l.is_string() && l.get<std::string>() == "all")
      all = true;
    else
      layers = l.get<std::vector<int64_t>>();
  } else {
    throw std::invalid_argument("a placement is \"MIXER@LAYERS\" or {\"mixer\", \"layers\", \"ffn\", \"others\"}");
  }
  json& ls = model["layers"];
  const auto n = static_cast<int64_t>(ls.size());
  for (int64_t l : layers)
    if (l < 0 || l >= n)
      throw std::invalid_argument("layer " + std::to_string(l) + " is not in the model (layers 0.." +
                                  std::to_string(n - 1) + ")");
  for (int64_t i = 0; i < n; ++i) {
    const bool chosen = all || std::find(layers.begin(), layers.end(), i) != layers.end();
    if (chosen && ffn > 0) ls[static_cast<size_t>(i)]["ffn"] = ffn;
    set_mixer(ls[static_cast<size_t>(i)], chosen ? mixer : others);
  }
}

const std::set<std::string> kModelFields = {"name",    "description", "vocab_size", "d_model",
                                            "context", "dropout",     "init",       "layers"};

// One axis value applied to a model (as config JSON) or to training settings. Throws
// std::invalid_argument without the axis' name (the caller adds it).
void apply(const std::string& axis, const json& v, json& model, TrainSettings& train) {
  if (axis == "seed") return set_setting(train, train_setting("seed"), v);
  if (axis.rfind("train.", 0) == 0) {
    const SettingSpec* s = find_setting(axis.substr(6));
    if (!s) throw std::invalid_argument("no such training setting; use one of " + setting_names());
    return set_setting(train, *s, v);
  }
  if (axis.rfind("model.", 0) != 0)
    throw std::invalid_argument(
        "no such axis; use model.FIELD, model.layers.N.(mixer|ffn|heads), "
        "model.layers.*.(mixer|ffn|heads), model.placement, train.SETTING or seed");
  const std::string path = axis.substr(6);
  if (path == "placement") return apply_placement(model, v);
  if (path.rfind("layers.", 0) == 0) {
    const std::string rest = path.substr(7);
    const size_t dot = rest.find('.');
    const std::string which = rest.substr(0, dot), field = dot == std::string::npos ? "" : rest.substr(dot + 1);
    if (field != "mixer" && field != "ffn" && field != "heads")
      throw std::invalid_argument("no such layer field; use model.layers.N.mixer, .ffn or .heads (N a layer or *)");
    json& ls = model["layers"];
    std::vector<size_t> chosen;
    if (which == "*") {
      for (size_t i = 0; i < ls.size(); ++i) chosen.push_back(i);
    } else {
      size_t used = 0;
      long long i = -1;
      try {
        i = std::stoll(which, &used);
      } catch (const std::exception&) {
      }
      if (used != which.size() || i < 0 || i >= static_cast<long long>(ls.size()))
        throw std::invalid_argument("layer '" + which + "' is not in the model (layers 0.." +
                                    std::to_string(static_cast<int64_t>(ls.size()) - 1) + ", or *)");
      chosen.push_back(static_cast<size_t>(i));
    }
    for (size_t i : chosen) {
      if (field == "mixer") {
        if (!v.is_string()) throw std::invalid_argument("a mixer is a name (hsm mixers)");
        set_mixer(ls[i], v.get<std::string>());
      } else {
        ls[i][field] = v;
      }
    }
    return;
  }
  if (!kModelFields.count(path))
    throw std::invalid_argument(
        "no such model field; use name, vocab_size, d_model, context, dropout, init, layers, "
        "layers.N.(mixer|ffn|heads) or placement");
  model[path] = v;
}

std::string short_axis(const std::string& axis) {
  std::string s = axis;
  if (s.rfind("model.", 0) == 0) s = s.substr(6);
  if (s.rfind("train.", 0) == 0) s = s.substr(6);
  if (s.rfind("layers.", 0) == 0) {  // layers.0.mixer -> mixer0, layers.*.ffn -> ffn_all
    const std::string rest = s.substr(7);
    const size_t dot = rest.find('.');
    if (dot != std::string::npos) {
      const std::string which = rest.substr(0, dot);
      s = rest.substr(dot + 1) + (which == "*" ? "_all" : which);
    }
  }
  return s;
}

std::string short_value(const json& v) {
  if (v.is_object() && v.contains("mixer") && v.contains("layers")) {
    const json& l = v["layers"];
    std::string list;
    if (l.is_array())
      for (const auto& x : l) list += (list.empty() ? "" : ",") + x.dump();
    else
      list = value_text(l);
    return v["mixer"].get<std::string>() + "@" + (list.empty() ? "none" : list);
  }
  return value_text(v);
}

// A model's short name: the preset's, or a config file's stem.
std::string model_label(const std::string& model) {
  const fs::path p(model);
  return p.has_extension() ? p.stem().string() : p.filename().string();
}

std::string folder_safe(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string("._=,@+-").find(c) != std::string::npos)) c = '-';
  return s;
}

// Whether `pid` is a live process that can be a point of this user's sweep: a pid of 1 or less
// never is (0, -1 would signal a group), nor one not ours (EPERM), nor a program whose command
// line names no sweep (a pid reused after a kill -9).
bool point_process_alive(int64_t pid) {
  if (pid <= 1 || pid > 0x3fffffff) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return false;  // gone (ESRCH) or not ours (EPERM)
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  if (!in) return true;  // no /proc: trust the signal
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return cmdline.find(std::string("sweep") + '\0' + "run") != std::string::npos;
}

// parse_sweep_spec's steps, in the order it takes them: each reads the spec (`spec`) and fills
// the sweep or what a later step needs. A refusal names the field, axis or point at fault.
class SweepSpecParser {
 public:
  SweepSpecParser(const std::string& json_text, const std::string& base_dir, const std::string& base_config_json,
                  const std::map<std::string, std::string>& model_configs)
      : base_dir_(base_dir), base_config_json_(base_config_json), model_configs_(model_configs) {
    try {
      spec_ = json::parse(json_text);
    } catch (const json::exception& e) {
      throw std::invalid_argument("sweep spec: not JSON (" + json_error_text(e.what()) + ")");
    }
    if (!spec_.is_object()) throw std::invalid_argument("sweep spec: not a JSON object");
  }

  Sweep parse(const std::string& data_override) {
    read_fields();
    read_base();
    read_data(data_override);
    read_train();
    read_resources();
    list_points();
    make_points();
    sweep_.spec_json = spec_.dump();
    return std::move(sweep_);
  }

 private:
  using Point = std::vector<std::pair<std::string, json>>;  // (axis, value), in the spec's order

  // The known fields, the name, and the settings of the whole grid (size, test_examples,
  // min_lr_fraction); whether a task axis and a model axis (a lab's) give each point its task
  // and its model.
  void read_fields() {
    static const std::set<std::string> fields = {"name",      "base",      "data", "task",          "train",
                                                 "axes",      "points",    "size", "test_examples", "min_lr_fraction",
                                                 "resources"};
    for (const auto& [k, v] : spec_.items())
      if (!fields.count(k))
        throw std::invalid_argument("sweep spec: unknown field '" + k +
                                    "'; use name, base, data, task, train, axes, points, size, test_examples, "
                                    "min_lr_fraction, resources");
    if (spec_.contains("name") && !spec_["name"].is_string())
      throw std::invalid_argument("sweep spec: name " + spec_["name"].dump() + " is not a text");
    sweep_.name = spec_.value("name", "sweep");
    check_slurm_text("name", sweep_.name, kNameText,
                     "a name holds 1 to 100 letters, digits and . _ - + = , @ (it names the Slurm job), e.g. \"placement\"");
    model_axis_ = has_axis("model");
    task_axis_ = has_axis("task");
    if (spec_.contains("size")) {
      if (!spec_["size"].is_string() || !is_model_size(spec_["size"].get<std::string>()))
        throw std::invalid_argument("sweep spec: size " + spec_["size"].dump() + ": use \"lab\", \"tiny\" or \"as_is\"");
      sweep_.size = spec_["size"].get<std::string>();
    }
    if (spec_.contains("test_examples")) {
      const json& n = spec_["test_examples"];
      if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 1000000)
        throw std::invalid_argument("sweep spec: test_examples " + n.dump() + ": use a whole number from 0 to 1000000");
      sweep_.test_examples = n.get<int64_t>();
    }
    if (spec_.contains("min_lr_fraction")) {
      const json& f = spec_["min_lr_fraction"];
      if (!f.is_number() || f.get<double>() < 0 || f.get<double>() > 1)
        throw std::invalid_argument("sweep spec: min_lr_fraction " + f.dump() + ": use a number from 0 to 1");
      sweep_.min_lr_fraction = f.get<double>();
    }
  }

  bool has_axis(const char* axis) const {
    if (spec_.contains("axes") && spec_["axes"].is_object() && spec_["axes"].contains(axis)) return true;
    if (spec_.contains("points") && spec_["points"].is_array())
      for (const auto& p : spec_["points"])
        if (p.is_object() && p.contains(axis)) return true;
    return false;
  }

  // The base model and its training settings (none with a model axis).
  void read_base() {
    if (model_axis_ && spec_.contains("base"))
      throw std::invalid_argument("sweep spec: base and a model axis both given; the model axis gives each point its model");
    if (model_axis_) return;
    if (!spec_.contains("base") || !spec_["base"].is_object())
      throw std::invalid_argument(
          "sweep spec: base is missing; give {\"preset\": NAME} or {\"config\": FILE}, or a model axis");
    const json& base = spec_["base"];
    for (const auto& [k, v] : base.items())
      if (k != "preset" && k != "config")
        throw std::invalid_argument("sweep spec: base: unknown field '" + k + "'; use preset or config");
    preset_ = base.contains("preset");
    try {
      if (preset_) {
        base_model_ = load_preset_or_config(base["preset"].get<std::string>());
        base_train_ = preset_train_settings(base["preset"].get<std::string>());
      } else if (base.contains("config") && !base_config_json_.empty()) {
        // The snapshot the sweep's folder took at its start (issue 46), not the file as it is now.
        base_model_ = config_from_json(base_config_json_, "the sweep's snapshot of its base config");
        sweep_.base_config_json = base_config_json_;
      } else if (base.contains("config")) {
        spec_["base"]["config"] = resolve_path(base["config"].get<std::string>(), base_dir_);
        base_model_ = load_config(spec_["base"]["config"].get<std::string>());
        sweep_.base_config_json = to_json(base_model_);
      } else {
        throw std::invalid_argument("give {\"preset\": NAME} or {\"config\": FILE}");
      }
      base_model_ = model_at_size(base_model_, sweep_.size);
    } catch (const json::exception& e) {
      throw std::invalid_argument("sweep spec: base: " + json_error_text(e.what()));
    } catch (const std::exception& e) {
      throw std::invalid_argument("sweep spec: base: " + error_text(e));
    }
  }

  // The data: a corpus, a task, or a task axis.
  void read_data(const std::string& data_override) {
    if (!data_override.empty()) spec_["data"] = data_override;
    if (spec_.contains("data") && (spec_.contains("task") || task_axis_))
      throw std::invalid_argument("sweep spec: data and task both given; a sweep trains on a corpus or on a task");
    if (task_axis_ && spec_.contains("task"))
      throw std::invalid_argument("sweep spec: task and a task axis both given; give the task axis alone");
    if (spec_.contains("task")) {
      try {
        sweep_.task = spec_["task"].get<std::string>();
        const std::unique_ptr<Task> task = parse_task(sweep_.task);
        if (preset_) adopt_task_shape(base_model_, *task);
      } catch (const std::exception& e) {
        throw std::invalid_argument("sweep spec: task: " + error_text(e));
      }
    } else if (spec_.contains("data")) {
      sweep_.data = resolve_path(spec_["data"].get<std::string>(), base_dir_);
      if (!fs::exists(sweep_.data))
        throw std::invalid_argument("sweep spec: data: " + sweep_.data + " does not exist; give a corpus file or folder");
      spec_["data"] = sweep_.data;
    } else if (!task_axis_) {
      throw std::invalid_argument("sweep spec: give data (a corpus) or task (a synthetic task, hsm task list)");
    }
  }

  // The spec's training settings over the base's (a preset's own), and over the defaults (a model axis).
  void read_train() {
    if (spec_.contains("train") && !spec_["train"].is_object())
      throw std::invalid_argument("sweep spec: train is not an object of settings");
    apply_train(base_train_);
    apply_train(model_axis_train_);
  }

  void apply_train(TrainSettings& t) const {
    if (!spec_.contains("train")) return;
    for (const auto& [k, v] : spec_["train"].items()) {
      const SettingSpec* s = find_setting(k);
      if (!s)
        throw std::invalid_argument("sweep spec: train." + k + ": no such training setting; use one of " +
                                    setting_names());
      try {
        set_setting(t, *s, v);
      } catch (const std::exception& e) {
        throw std::invalid_argument("sweep spec: train." + k + " = " + v.dump() + ": " + error_text(e));
      }
    }
  }

  // What a Slurm job of the sweep asks for.
  void read_resources() {
    if (!spec_.contains("resources")) return;
    const json& r = spec_["resources"];
    if (!r.is_object()) throw std::invalid_argument("sweep spec: resources is not an object; use cpus, gpus, mem_gb, time, partition");
    for (const auto& [k, v] : r.items()) {
      if (k == "cpus")
        sweep_.resources.cpus = resource_count(k, v, 1, 4096);
      else if (k == "gpus")
        sweep_.resources.gpus = resource_count(k, v, 0, 64);
      else if (k == "mem_gb")
        sweep_.resources.mem_gb = resource_count(k, v, 1, 1 << 20);
      else if (k == "time" || k == "partition") {
        if (!v.is_string()) throw std::invalid_argument("sweep spec: resources." + k + " " + v.dump() + " is not a text");
        if (k == "time") {
          sweep_.resources.time = v.get<std::string>();
          check_slurm_text("resources.time", sweep_.resources.time, kTimeText,
                           "use a Slurm time limit: MINUTES, H:MM:SS, DAYS-HH, DAYS-HH:MM:SS or UNLIMITED");
        } else {
          sweep_.resources.partition = v.get<std::string>();
          check_slurm_text("resources.partition", sweep_.resources.partition, kPartitionText,
                           "use a partition's name (letters, digits, . _ -), or several separated by commas");
        }
      } else
        throw std::invalid_argument("sweep spec: resources: unknown field '" + k +
                                    "'; use cpus, gpus, mem_gb, time, partition");
    }
  }

  // A model axis' value: a preset, or a config file (beside the spec, else from the working
  // directory), read once and kept (its snapshot) so that editing the file later changes no point.
  const ModelConfig& model_of(const std::string& value) {
    const auto known = axis_models_.find(value);
    if (known != axis_models_.end()) return known->second;
    ModelConfig m;
    const auto snapshot = model_configs_.find(value);
    if (snapshot != model_configs_.end()) {
      m = config_from_json(snapshot->second, "the grid's snapshot of model " + value);
    } else {
      const fs::path beside = fs::path(base_dir_) / value;
      m = load_preset_or_config(fs::path(value).is_relative() && fs::exists(beside) ? beside.string() : value);
    }
    sweep_.model_configs[value] = to_json(m, -1);
    return axis_models_.emplace(value, m).first->second;
  }

  // Each value on the base alone, so a refusal names the axis and value that caused it.
  void check_alone(const std::string& axis, const json& v) {
    try {
      if (axis == "task" || axis == "model") {
        if (!v.is_string()) throw std::invalid_argument(axis == "task" ? "a task is a spec (hsm task list)"
                                                                       : "a model is a preset or a config file");
        if (axis == "task") parse_task(v.get<std::string>());
        if (axis == "model") model_of(v.get<std::string>());
        return;
      }
      if (model_axis_) return;  // checked with each point's model (make_points)
      json m = base_json_;
      TrainSettings t = base_train_;
      apply(axis, v, m, t);
      config_from_json(m.dump(), "the model");
    } catch (const json::exception& e) {
      throw std::invalid_argument("sweep spec: axis " + axis + " = " + v.dump() + ": " + json_error_text(e.what()));
    } catch (const std::exception& e) {
      throw std::invalid_argument("sweep spec: axis " + axis + " = " + v.dump() + ": " + error_text(e));
    }
  }

  // The points: the product of the axes, or the list given; each value checked alone.
  void list_points() {
    if (spec_.contains("axes") == spec_.contains("points"))
      throw std::invalid_argument("sweep spec: give axes (their product is the points) or points (a list), one of them");
    base_json_ = model_axis_ ? json() : json::parse(to_json(base_model_));
    if (spec_.contains("axes"))
      list_axes_product();
    else
      list_given_points();
  }

  void list_axes_product() {
    if (!spec_["axes"].is_object() || spec_["axes"].empty())
      throw std::invalid_argument("sweep spec: axes is empty; give at least one axis with its values");
    points_.push_back({});
    for (const auto& [axis, values] : spec_["axes"].items()) {
      if (!values.is_array() || values.empty())
        throw std::invalid_argument("sweep spec: axis " + axis + " is empty; give a list of at least one value");
      axis_order_.push_back(axis);
      std::vector<Point> next;
      for (const auto& p : points_)
        for (const auto& v : values) {
          check_alone(axis, v);
          auto q = p;
          q.emplace_back(axis, v);
          next.push_back(std::move(q));
        }
      points_ = std::move(next);
      if (points_.size() > 100000) throw std::invalid_argument("sweep spec: more than 100000 points; use fewer values");
    }
  }

  void list_given_points() {
    if (!spec_["points"].is_array() || spec_["points"].empty())
      throw std::invalid_argument("sweep spec: points is empty; give a list of objects {axis: value}");
    for (const auto& p : spec_["points"]) {
      if (!p.is_object())
        throw std::invalid_argument("sweep spec: a point is not an object {axis: value}: " + p.dump());
      if (model_axis_ && !p.contains("model"))
        throw std::invalid_argument("sweep spec: a point without a model where others have one: " + p.dump());
      if (task_axis_ && !p.contains("task"))
        throw std::invalid_argument("sweep spec: a point without a task where others have one: " + p.dump());
      Point q;
      for (const auto& [axis, v] : p.items()) {
        check_alone(axis, v);
        q.emplace_back(axis, v);
        if (std::find(axis_order_.begin(), axis_order_.end(), axis) == axis_order_.end()) axis_order_.push_back(axis);
      }
      points_.push_back(std::move(q));
      if (points_.size() > 100000) throw std::invalid_argument("sweep spec: more than 100000 points; use fewer");
    }
  }

  // What differs: the axes with more than one value over the points (absent = the base's), and
  // the task's and model's values in the order they come (what value_name numbers them by).
  void find_differences() {
    for (const std::string& axis : axis_order_) {
      std::set<std::string> seen;
      for (const auto& p : points_) {
        std::string text = "(base)";
        for (const auto& [a, v] : p)
          if (a == axis) text = v.dump();
        seen.insert(text);
        if ((axis == "task" || axis == "model") && text != "(base)") {
          auto& order = places_[axis];
          if (std::find(order.begin(), order.end(), text) == order.end()) order.push_back(text);
        }
      }
      if (seen.size() > 1) differs_.insert(axis);
    }
  }

  // A value's part of a point's name. A task's or a model's value is named by its place among
  // the axis' values and its short name (t0_mqar, m1_hsm_ab): a spec or a path is not a folder's name.
  std::string value_name(const std::string& axis, const json& v) {
    if (axis != "task" && axis != "model") return short_axis(axis) + "=" + short_value(v);
    const auto& order = places_[axis];
    const auto place = std::to_string(std::find(order.begin(), order.end(), v.dump()) - order.begin());
    const std::string s = v.get<std::string>();
    return axis == "task" ? "t" + place + "_" + parse_task(s)->name() : "m" + place + "_" + model_label(s);
  }

  // Every point named by what differs, built and checked (its model, settings and task).
  void make_points() {
    find_differences();
    std::set<std::string> names;
    for (size_t k = 0; k < points_.size(); ++k) {
      SweepPoint pt;
      pt.index = static_cast<int64_t>(k);
      pt.task = sweep_.task;
      for (const auto& [axis, v] : points_[k]) {
        if (axis == "task") pt.task = v.get<std::string>();
        if (axis == "model") pt.model_source = v.get<std::string>();
      }
      std::string name;
      for (const auto& [axis, v] : points_[k])
        if (differs_.count(axis)) name += (name.empty() ? "" : ",") + value_name(axis, v);
      const std::string what = name.empty() ? "point " + std::to_string(k) : "point " + name;
      try {
        build_point(pt, points_[k]);
      } catch (const json::exception& e) {
        throw std::invalid_argument("sweep spec: " + what + ": " + json_error_text(e.what()));
      } catch (const std::exception& e) {
        throw std::invalid_argument("sweep spec: " + what + ": " + error_text(e));
      }
      for (const auto& [axis, v] : points_[k])
        if (differs_.count(axis)) pt.settings.emplace_back(axis, v.dump());
      name = folder_safe(name.empty() ? "base" : name);
      if (name.size() > 180) name = "point-" + std::to_string(k);
      if (!names.insert(name).second)
        throw std::invalid_argument("sweep spec: " + what + " is given twice; give each point once");
      pt.name = name;
      sweep_.points.push_back(std::move(pt));
    }
  }

  // A point's model and training settings: the base's (or its model's) with its values applied.
  void build_point(SweepPoint& pt, const Point& values) {
    const std::unique_ptr<Task> point_task = pt.task.empty() ? nullptr : parse_task(pt.task);
    json m = base_json_;
    pt.train = base_train_;
    if (model_axis_) {
      ModelConfig mc = model_of(pt.model_source);
      mc = model_at_size(mc, sweep_.size);
      if (point_task) adopt_task_shape(mc, *point_task);  // a lab's models take each task's shape
      m = json::parse(to_json(mc));
      pt.train = model_axis_train_;
    }
    for (const auto& [axis, v] : values) {
      if (axis == "task" || axis == "model") continue;
      try {
        apply(axis, v, m, pt.train);
      } catch (const std::exception& e) {
        throw std::invalid_argument("axis " + axis + " = " + v.dump() + ": " + error_text(e));
      }
    }
    if (sweep_.min_lr_fraction >= 0) pt.train.min_lr = pt.train.lr * sweep_.min_lr_fraction;
    pt.model = config_from_json(m.dump(), "the model");
    validate_train_settings(pt.train);
    if (point_task) check_model_fits_task(pt.model, *point_task);  // --check refuses what training would
  }

  json spec_;
  const std::string& base_dir_;
  const std::string& base_config_json_;
  const std::map<std::string, std::string>& model_configs_;
  Sweep sweep_;
  bool model_axis_ = false, task_axis_ = false, preset_ = false;
  ModelConfig base_model_;
  TrainSettings base_train_, model_axis_train_;
  json base_json_;
  std::map<std::string, ModelConfig> axis_models_;
  std::vector<Point> points_;
  std::vector<std::string> axis_order_;
  std::set<std::string> differs_;
  std::map<std::string, std::vector<std::string>> places_;  // "task"/"model" -> its values in order
};

}  // namespace

Sweep parse_sweep_spec(const std::string& json_text, const std::string& base_dir, const std::string& data_override,
                       const std::string& base_config_json, const std::map<std::string, std::string>& model_configs) {
  return SweepSpecParser(json_text, base_dir, base_config_json, model_configs).parse(data_override);
}
namespace {

// A folder an older hsm made a lab in (lab.json, results.jsonl) and never converted.
void refuse_old_lab(const std::string& dir) {
  if (fs::exists(fs::path(dir) / "lab.json") && !fs::exists(fs::path(dir) / "sweep.json"))
    throw std::invalid_argument("'" + dir + "' holds a lab of an older hsm (lab.json); convert it with: hsm lab convert " +
                                dir);
}

json score_json(const TaskScore& c) {
  json j = {{"answer_accuracy", c.answer_accuracy}, {"sequence_accuracy", c.sequence_accuracy}, {"loss", c.loss},
            {"examples", c.examples},               {"answers", c.answers}};
  if (!c.by_difficulty.empty()) {
    json by = json::object();
    for (const auto& [d, n] : c.by_difficulty) by[std::to_string(d)] = {n.first, n.second};
    j["by_distance"] = by;
  }
  return j;
}

// A state file's score, each field checked for its type so that a refusal names the field.
TaskScore score_of(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("\"score\" is not an object");
  auto number = [&](const char* key) {
    if (!j.contains(key) || j[key].is_null()) return double{NAN};
    if (!j[key].is_number()) throw std::invalid_argument(std::string("\"") + key + "\" is not a number");
    return j[key].get<double>();
  };
  auto whole = [&](const char* key) {
    if (!j.contains(key) || j[key].is_null()) return int64_t{0};
    if (!j[key].is_number_integer()) throw std::invalid_argument(std::string("\"") + key + "\" is not a whole number");
    return j[key].get<int64_t>();
  };
  TaskScore c;
  if (!j.contains("answer_accuracy") || !j["answer_accuracy"].is_number())
    throw std::invalid_argument("\"answer_accuracy\" is not a number");
  c.answer_accuracy = number("answer_accuracy");
  c.sequence_accuracy = number("sequence_accuracy");
  c.loss = number("loss");
  c.examples = whole("examples");
  c.answers = whole("answers");
  if (j.contains("by_distance")) {
    if (!j["by_distance"].is_object()) throw std::invalid_argument("\"by_distance\" is not an object");
    for (const auto& [d, n] : j["by_distance"].items()) {
      const bool digits = !d.empty() && d.size() < 18 && d.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || !n.is_array() || n.size() != 2 || !n[0].is_number_integer() || !n[1].is_number_integer())
        throw std::invalid_argument("\"by_distance\" entry \"" + d + "\" is not a distance with two counts");
      c.by_difficulty[std::stoll(d)] = {n[0].get<int64_t>(), n[1].get<int64_t>()};
    }
  }
  return c;
}

}  // namespace

Sweep open_sweep_folder(const std::string& dir, const Sweep& sweep) {
  const fs::path manifest = fs::path(dir) / "sweep.json";
  // Another kind of folder is not made a grid (its files would mix with the grid's).
  refuse_old_lab(dir);
  if (is_run_folder(dir))
    throw std::invalid_argument("'" + dir + "' is a run folder, not a grid; give the grid a folder of its own");
  check_grid_folder(dir, "grid");
  if (fs::exists(manifest)) {
    const Sweep stored = load_sweep(dir);
    if (json::parse(stored.spec_json) != json::parse(sweep.spec_json))
      throw std::invalid_argument(dir + " holds another grid (" + stored.name +
                                  "); continue it with its own spec, or give another --out folder");
    return stored;
  }
  write_sweep_manifest(dir, sweep);
  return sweep;
}

void write_sweep_manifest(const std::string& dir, const Sweep& sweep) {
  const fs::path manifest = fs::path(dir) / "sweep.json";
  fs::create_directories(fs::path(dir) / "runs");
  fs::create_directories(fs::path(dir) / "points");
  json points = json::array();
  for (const SweepPoint& p : sweep.points) {
    json settings = json::object();
    for (const auto& [a, v] : p.settings) settings[a] = json::parse(v);
    points.push_back({{"index", p.index}, {"name", p.name}, {"run", "runs/" + p.name}, {"settings", settings}});
  }
  json m = {{"format", 2}, {"name", sweep.name}, {"spec", json::parse(sweep.spec_json)}, {"points", points}};
  // The snapshots (issue 46): the configs as they are now, what every point trains.
  if (!sweep.base_config_json.empty()) m["base_config"] = json::parse(sweep.base_config_json);
  if (!sweep.model_configs.empty()) {
    json configs = json::object();
    for (const auto& [value, config] : sweep.model_configs) configs[value] = json::parse(config);
    m["model_configs"] = configs;
  }
  write_file_atomic(manifest.string(), m.dump(2) + "\n");
}

Sweep load_sweep(const std::string& dir) {
  const fs::path manifest = fs::path(dir) / "sweep.json";
  refuse_old_lab(dir);
  if (!fs::exists(manifest))
    throw std::invalid_argument(dir + " holds no grid (no sweep.json); start one with hsm sweep SPEC --out " + dir +
                                " or hsm lab --out " + dir);
  json j;
  try {
    j = json::parse(read_text_file(manifest.string(), "sweep manifest"));
    // Said in the grid's words, not the JSON library's (issue 65: "cannot use value() with array").
    if (!j.is_object() || !j.contains("spec") || !j["spec"].is_object())
      throw std::invalid_argument(std::string("not a grid's manifest: it must be a JSON object with \"format\", "
                                              "\"spec\" (an object) and \"points\", as hsm sweep and hsm lab write "
                                              "it; this one is ") +
                                  (j.is_object() ? "an object without a \"spec\" object" : "a " + std::string(j.type_name())) +
                                  ". Start the grid in another folder, or restore the file");
    // Format 1: a sweep of an older hsm, read as it is (it has none of what format 2 added).
    const json format = j.value("format", json(1));
    if (format != 1 && format != 2)
      throw std::invalid_argument("format " + format.dump() + " is not one this hsm reads (1 or 2); use a newer hsm");
    std::map<std::string, std::string> configs;
    if (j.contains("model_configs"))
      for (const auto& [value, config] : j.at("model_configs").items()) configs[value] = config.dump();
    return parse_sweep_spec(j.at("spec").dump(), dir, "", j.contains("base_config") ? j["base_config"].dump() : "",
                            configs);
  } catch (const json::exception& e) {
    throw std::invalid_argument(manifest.string() + ": " + json_error_text(e.what()));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(manifest.string() + ": " + e.what());
  }
}

std::string sweep_run_dir(const std::string& dir, const SweepPoint& p) {
  return (fs::path(dir) / "runs" / p.name).string();
}

PointState read_point_state(const std::string& dir, const SweepPoint& p, std::vector<std::string>* warnings) {
  PointState s;
  const fs::path f = fs::path(dir) / "points" / (p.name + ".json");
  if (!fs::exists(fs::symlink_status(f))) return s;
  json j;
  try {
    j = json::parse(read_text_file(f.string(), "point state"));
    s.state = j.value("state", "pending");
    s.error = j.value("error", "");
    s.pid = j.value("pid", int64_t{0});
    s.wall_s = j.value("wall_s", 0.0);
  } catch (const std::exception& e) {
    // Truncated, empty, not JSON (binary, a NaN): written by no hsm since issue 46's whole writes.
    // As if never started (it trains again), but said (issue 65: it showed as "unfinished" unsaid).
    if (warnings)
      warnings->push_back(f.string() + ": damaged (" + json_error_text(e.what()) + "); the point counts as not started and trains again when the "
                          "grid continues");
    return PointState{};
  }
  if (j.contains("score")) {
    try {
      s.score = score_of(j["score"]);
      s.scored = true;
    } catch (const std::exception& e) {
      // An ill-typed score (issue 46): named, and the point scored again (its run is kept).
      if (warnings) warnings->push_back(f.string() + ": not a score (" + e.what() + "); the point is scored again");
      if (s.state == "done") s.state = "stopped";
    }
  }
  // "running" by a process that is gone (killed with no time to say so), or by a pid that is
  // no point of ours (0, -1, init, another user's, another program's): interrupted.
  if (s.state == "running" && !point_process_alive(s.pid)) s.state = "stopped";
  return s;
}

void write_point_state(const std::string& dir, const SweepPoint& p, const PointState& s) {
  fs::create_directories(fs::path(dir) / "points");
  json j = {{"state", s.state}, {"pid", s.pid}};
  if (!s.error.empty()) j["error"] = s.error;
  if (s.wall_s > 0) j["wall_s"] = s.wall_s;
  if (s.scored) j["score"] = score_json(s.score);
  // Whole or not at all (a full disk keeps the old state and throws naming the file).
  write_file_atomic((fs::path(dir) / "points" / (p.name + ".json")).string(), j.dump() + "\n");
}

std::string task_score_json(const TaskScore& score) { return score_json(score).dump(); }

TaskScore parse_task_score_json(const std::string& json_text) {
  try {
    return score_of(json::parse(json_text));
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("not a score: ") + e.what());
  }
}

Sweep parse_sweep_spec_file(const std::string& path, const std::string& data_override) {
  return parse_sweep_spec(read_text_file(path, "sweep spec"), fs::path(path).parent_path().string(), data_override);
}

ModelConfig tiny_model(const ModelConfig& model) {
  constexpr int64_t kD = 64, kMaxLayers = 4;
  ModelConfig t = model;
  t.name = model.name + "_tiny";
  t.d_model = kD;
  t.dropout = 0;
  const auto n = static_cast<int64_t>(model.layers.size());
  t.layers.clear();
  const int64_t keep = std::min(n, kMaxLayers);
  int64_t narrowest = INT64_MAX;
  for (const LayerSpec& l : model.layers) narrowest = std::min(narrowest, std::max<int64_t>(1, l.ffn));
  for (int64_t i = 0; i < keep; ++i) {
    const int64_t from = keep == 1 ? 0 : (i * (n - 1) + (keep - 1) / 2) / (keep - 1);
    LayerSpec l = model.layers[static_cast<size_t>(from)];
    l.ffn = 4 * kD * l.ffn / narrowest;  // the narrowest FFN 4·d, a wider one in proportion
    while (l.heads > 1 && kD % l.heads != 0) --l.heads;
    t.layers.push_back(l);
  }
  t.description = "tiny size (d 64, " + std::to_string(keep) + " layers) of " + model.name;
  return t;
}

// Zoology's recipe for associative recall (its attention has one head; docs/lab.md, "The default
// lab"): at d 64 a head of 8 dimensions cannot tell 128 keys apart, and without an MLP the
// sequence mixers alone are compared and the recall circuit forms in 600 steps of 128 (with an
// FFN of 4·d it had not by step 400). FFN 1 is the narrowest the config allows: no MLP to speak of.
ModelConfig lab_model(const ModelConfig& model) {
  ModelConfig t = tiny_model(model);
  t.name = model.name + "_lab";
  for (LayerSpec& l : t.layers) {
    l.heads = 1;
    l.ffn = 1;
  }
  t.description = "lab size (d 64, " + std::to_string(t.layers.size()) + " layers, one head, no MLP) of " + model.name;
  return t;
}

bool is_model_size(const std::string& size) { return size == "lab" || size == "tiny" || size == "as_is"; }

ModelConfig model_at_size(const ModelConfig& model, const std::string& size) {
  if (size == "lab") return lab_model(model);
  if (size == "tiny") return tiny_model(model);
  return model;
}

}  // namespace hsm
