#include "hsm/config.h"

#include "hsm/errors.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hsm/mixer_kind.h"
#include "io/io_util.h"
#include "io/json_brief.h"

namespace hsm {
namespace {

using nlohmann::json;

std::string field(size_t layer, const char* name) {
  return "layers[" + std::to_string(layer) + "]." + name;
}

void require_keys(const json& j, const std::set<std::string>& allowed, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where + ": expected a JSON object");
  for (const auto& item : j.items()) {
    if (!allowed.count(item.key())) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ConfigError(where + ": unknown key '" + item.key() + "' (allowed: " + list + ")");
    }
  }
}

template <typename T>
T get_field(const json& j, const char* key, const std::string& where, T fallback) {
  if (!j.contains(key)) return fallback;
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw ConfigError(where + key + ": wrong type (" + json_brief(j.at(key)) + ")");
  }
}

int64_t get_int(const json& j, const char* key, const std::string& where, int64_t fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_number_integer()) throw ConfigError(where + key + ": expected an integer, got " + json_brief(v));
  // Above 2^63 - 1 the JSON library keeps an unsigned value that would wrap to a negative one.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw ConfigError(where + key + ": " + json_brief(v) + " is too large");
  return v.get<int64_t>();
}

}  // namespace

void validate(const ModelConfig& c) {
  // Bounds a machine can hold: token ids are stored as 16 bits, and a model past them would
  // fail in an allocation deep inside LibTorch instead of here, by name.
  if (c.vocab_size < 2 || c.vocab_size > 65536)
    throw ConfigError("vocab_size: " + std::to_string(c.vocab_size) + " must be 2 to 65536");
  if (c.d_model < 1 || c.d_model > 16384)
    throw ConfigError("d_model: " + std::to_string(c.d_model) + " must be 1 to 16384");
  if (c.context < 1 || c.context > 65536)
    throw ConfigError("context: " + std::to_string(c.context) + " must be 1 to 65536");
  if (c.layers.size() > 1024) throw ConfigError("layers: " + std::to_string(c.layers.size()) + " layers, at most 1024");
  if (!(c.dropout >= 0.0 && c.dropout < 1.0))
    throw ConfigError("dropout: " + std::to_string(c.dropout) + " must be in [0, 1)");
  if (c.init != "gpt2" && c.init != "ex")
    throw ConfigError("init: '" + c.init + "' is not an initialisation (use \"gpt2\" or \"ex\")");
  if (c.layers.empty()) throw ConfigError("layers: a model needs at least one layer");
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const LayerSpec& s = c.layers[l];
    if (!is_mixer_id(s.mixer)) {
      try {
        mixer_info(s.mixer);
      } catch (const std::exception& e) {
        throw ConfigError(field(l, "mixer") + ": " + e.what());
      }
    }
    const MixerInfo& info = mixer_info(s.mixer);
    if (s.ffn < 1 || s.ffn > 262144)
      throw ConfigError(field(l, "ffn") + ": " + std::to_string(s.ffn) + " must be 1 to 262144");
    if (s.heads < 1) throw ConfigError(field(l, "heads") + ": " + std::to_string(s.heads) + " must be positive");
    if (!info.multi_head && s.heads != 1)
      throw ConfigError(field(l, "heads") + ": mixer " + s.mixer + " has a single head; set heads to 1");
    if (c.d_model % s.heads != 0)
      throw ConfigError(field(l, "heads") + ": " + std::to_string(s.heads) + " does not divide d_model " +
                        std::to_string(c.d_model));
    if (info.shift_per_head) {
      if (s.heads > 62) throw ConfigError(field(l, "heads") + ": at most 62 heads (shift 2^j must fit)");
    } else if (info.family == MixerFamily::kShift) {
      // A single-shift HSM layer at position l shifts by 2^l; past the context it mixes nothing.
      if (l >= 62 || (int64_t{1} << l) >= c.context)
        throw ConfigError(field(l, "mixer") + ": " + s.mixer + " at layer " + std::to_string(l) +
                          " shifts by 2^" + std::to_string(l) + ", which is not below context " +
                          std::to_string(c.context) + "; use at most log2(context) HSM layers or a longer context");
    }
  }
  // An upper bound of the parameters (attention's 4d² per layer is the largest mixer): past
  // a few billion no machine this tool runs on holds the model and its optimizer.
  double params = static_cast<double>(c.vocab_size + c.context) * static_cast<double>(c.d_model);
  for (const LayerSpec& s : c.layers)
    params += 4.0 * c.d_model * c.d_model + 2.0 * c.d_model * static_cast<double>(s.ffn);
  if (params > 4e9)
    throw ConfigError("the model would have about " + std::to_string(static_cast<int64_t>(params / 1e9)) +
                      " billion parameters (" + std::to_string(static_cast<int64_t>(params * 16 / 1e9)) +
                      " GB to train): too large; use a smaller d_model, ffn or fewer layers");
}

std::string to_json(const ModelConfig& c, int indent) {
  json j;
  j["name"] = c.name;
  if (!c.description.empty()) j["description"] = c.description;
  j["vocab_size"] = c.vocab_size;
  j["d_model"] = c.d_model;
  j["context"] = c.context;
  j["dropout"] = c.dropout;
  if (c.init != "gpt2") j["init"] = c.init;
  json layers = json::array();
  for (const auto& l : c.layers) layers.push_back({{"mixer", l.mixer}, {"ffn", l.ffn}, {"heads", l.heads}});
  j["layers"] = layers;
  return j.dump(indent);
}

ModelConfig config_from_json(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw ConfigError(origin + ": not valid JSON (" + json_error_text(e.what()) + ")");
  }
  const std::string where = origin + ": ";
  // "training": a preset's own training settings (the starter preset's), read by
  // preset_train_settings (hsm/presets.h); the model takes nothing from it.
  require_keys(j, {"name", "description", "vocab_size", "d_model", "context", "dropout", "init", "layers", "training"},
               origin);
  if (j.contains("training") && !j["training"].is_object())
    throw ConfigError(where + "training: expected an object of training settings, got " + json_brief(j["training"]));
  ModelConfig c;
  c.name = get_field<std::string>(j, "name", where, c.name);
  c.description = get_field<std::string>(j, "description", where, "");
  c.vocab_size = get_int(j, "vocab_size", where, c.vocab_size);
  c.d_model = get_int(j, "d_model", where, c.d_model);
  c.context = get_int(j, "context", where, c.context);
  if (j.contains("dropout")) {
    if (!j["dropout"].is_number())
      throw ConfigError(where + "dropout: expected a number, got " + json_brief(j["dropout"]));
    c.dropout = j["dropout"].get<double>();
  }
  c.init = get_field<std::string>(j, "init", where, c.init);
  if (!j.contains("layers") || !j["layers"].is_array())
    throw ConfigError(where + "layers: expected an array of {mixer, ffn, heads}");
  for (size_t l = 0; l < j["layers"].size(); ++l) {
    const json& lj = j["layers"][l];
    const std::string lw = origin + ": layers[" + std::to_string(l) + "]";
    require_keys(lj, {"mixer", "ffn", "heads"}, lw);
    LayerSpec s;
    s.mixer = get_field<std::string>(lj, "mixer", lw + ".", s.mixer);
    const bool known = is_mixer_id(s.mixer);
    s.ffn = get_int(lj, "ffn", lw + ".", known ? mixer_info(s.mixer).paper_ffn : s.ffn);
    s.heads = get_int(lj, "heads", lw + ".", known ? mixer_info(s.mixer).default_heads : s.heads);
    c.layers.push_back(s);
  }
  try {
    validate(c);
  } catch (const ConfigError& e) {
    throw ConfigError(where + e.message);
  }
  return c;
}

ModelConfig load_config(const std::string& path) {
  return config_from_json(read_text_file(path, "config"), path);
}

void save_config(const ModelConfig& config, const std::string& path) {
  validate(config);
  write_file_atomic(path, to_json(config) + "\n");
}

}  // namespace hsm
