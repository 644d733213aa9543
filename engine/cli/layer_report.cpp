#include "layer_report.h"

#include <iomanip>
#include <sstream>

#include "hsm/cost.h"
#include "hsm/mixer_kind.h"
#include "hsm/params.h"
#include "hsm/receptive_field.h"

namespace hsm::cli {

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

static std::string shifts_text(const std::vector<int64_t>& shifts) {
  if (shifts.empty()) return "all";
  std::string s;
  for (auto v : shifts) s += (s.empty() ? "" : ",") + std::to_string(v);
  return s;
}

// The layer's mixer and FFN multiply-adds for one token at the model's full context.
static int64_t layer_macs(const ModelConfig& c, size_t l) {
  const LayerSpec& s = c.layers[l];
  return mixer_macs_per_token(s.mixer, c.d_model, s.heads, c.context) + ffn_macs_per_token(c.d_model, s.ffn);
}

nlohmann::json layers_json(const ModelConfig& c) {
  const ParamCount pc = count_params(c);
  const ReceptiveField rf = receptive_field(c);
  nlohmann::json layers = nlohmann::json::array();
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const auto& s = c.layers[l];
    const auto shifts = layer_shifts(mixer_info(s.mixer).kind, static_cast<int64_t>(l), s.heads);
    layers.push_back({{"index", l},
                      {"mixer", s.mixer},
                      {"ffn", s.ffn},
                      {"heads", s.heads},
                      {"shifts", shifts},
                      {"params", pc.layers[l].total()},
                      {"mixer_params", pc.layers[l].mixer},
                      {"ffn_params", pc.layers[l].ffn},
                      {"coverage", rf.coverage(l)},
                      {"macs_per_token", layer_macs(c, l)}});
  }
  return layers;
}

std::string layers_table(const ModelConfig& c) {
  const ParamCount pc = count_params(c);
  const ReceptiveField rf = receptive_field(c);
  std::ostringstream o;
  o << "  layer  mixer           ffn  heads  shifts                     params   coverage  MACs/token\n";
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const auto& s = c.layers[l];
    const auto shifts = layer_shifts(mixer_info(s.mixer).kind, static_cast<int64_t>(l), s.heads);
    o << "  " << std::setw(5) << l << "  " << std::left << std::setw(14) << s.mixer << std::right << std::setw(5)
      << s.ffn << std::setw(7) << s.heads << "  " << std::left << std::setw(22) << shifts_text(shifts) << std::right
      << std::setw(11) << format_count(pc.layers[l].total()) << std::setw(6) << rf.coverage(l) << "/" << std::left
      << std::setw(5) << c.context << std::right << std::setw(12) << format_count(layer_macs(c, l)) << "\n";
  }
  o << "  embeddings (token " << c.vocab_size << "x" << c.d_model << " tied, position " << c.context << "x"
    << c.d_model << ") + final norm: " << format_count(pc.token_embedding + pc.position_embedding + pc.final_norm)
    << "\n";
  o << "  total parameters: " << format_count(pc.total()) << "\n";
  o << "  MACs per token at context " << c.context << ": " << format_count(model_macs_per_token(c, c.context))
    << " (layers + output layer)\n";
  return o.str();
}

}  // namespace hsm::cli
