// `hsm presets [--json]`: every bundled preset with its layers and parameter count.
#include <iostream>

#include "commands.h"
#include "hsm/cost.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "layer_report.h"

namespace hsm::cli {

Command add_presets_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("presets", "List the papers' model presets (HSM Table 1, Figure 7; EX Table 1)");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON instead of a table");
  return {cmd, [json_out]() {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& name : preset_names()) {
      const ModelConfig c = load_preset(name);
      const int64_t params = count_params(c).total();
      if (*json_out) {
        all.push_back({{"name", name},
                       {"description", c.description},
                       {"params", params},
                       {"vocab_size", c.vocab_size},
                       {"d_model", c.d_model},
                       {"context", c.context},
                       {"macs_per_token", model_macs_per_token(c, c.context)},
                       {"layers", layers_json(c)}});
      } else {
        std::cout << name << "  (" << format_count(params) << " parameters)\n  " << c.description << "\n"
                  << layers_table(c) << "\n";
      }
    }
    if (*json_out) std::cout << all.dump(2) << "\n";
    return 0;
  }};
}

}  // namespace hsm::cli
