#include "layer_report.h"

#include <iomanip>
#include <sstream>

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
                      {"coverage", rf.coverage(l)}});
  }
  return layers;
}

std::string layers_table(const ModelConfig& c) {
  const ParamCount pc = count_params(c);
  const ReceptiveField rf = receptive_field(c);
  std::ostringstream o;
  o << "  layer  mixer           ffn  heads  shifts                     params   coverage\n";
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const auto& s = c.layers[l];
    const auto shifts = layer_shifts(mixer_info(s.mixer).kind, static_cast<int64_t>(l), s.heads);
    o << "  " << std::setw(5) << l << "  " << std::left << std::setw(14) << s.mixer << std::right << std::setw(5)
      << s.ffn << std::setw(7) << s.heads << "  " << std::left << std::setw(22) << shifts_text(shifts) << std::right
      << std::setw(11) << format_count(pc.layers[l].total()) << std::setw(6) << rf.coverage(l) << "/" << c.context
      << "\n";
  }
  o << "  embeddings (token " << c.vocab_size << "x" << c.d_model << " tied, position " << c.context << "x"
    << c.d_model << ") + final norm: " << format_count(pc.token_embedding + pc.position_embedding + pc.final_norm)
    << "\n";
  o << "  total parameters: " << format_count(pc.total()) << "\n";
  return o.str();
}

}  // namespace hsm::cli
