// `hsm inspect PRESET|CONFIG.json [--target-params N] [--json]`: layers, parameters per
// layer and in total, receptive-field coverage per layer; optionally the FFN width that
// matches a parameter budget.
#include <iostream>

#include "commands.h"
#include "number_options.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/run_folder.h"
#include "hsm/receptive_field.h"
#include "layer_report.h"

namespace hsm::cli {

Command add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Show a model's layers, parameters and receptive field");
  struct Args {
    std::string model;
    int64_t target = 0;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Preset name (see `hsm presets`) or path to a config JSON")->required();
  cmd->add_option("--target-params", args->target,
                  "Match the HSM layers' FFN width (a multiple of 64) to this parameter count")
      ->check(whole_in(1, int64_t{1} << 40));
  cmd->add_flag("--json", args->json, "Print JSON");
  return {cmd, [args]() {
    ModelConfig c = load_preset_or_config(args->model);
    nlohmann::json match;
    if (args->target > 0) {
      const FfnMatch m = match_ffn(c, args->target);
      match = {{"target_params", args->target},
               {"ffn", m.ffn},
               {"params", m.params},
               {"relative_error", static_cast<double>(m.params - args->target) / static_cast<double>(args->target)},
               {"matched_layers", m.matched_layers}};
      c = m.config;
    }
    const ParamCount pc = count_params(c);
    const ReceptiveField rf = receptive_field(c);
    if (args->json) {
      std::vector<int64_t> coverage;
      for (size_t l = 0; l < c.layers.size(); ++l) coverage.push_back(rf.coverage(l));
      nlohmann::json out = {
          {"name", c.name},
          {"config", nlohmann::json::parse(to_json(c))},
          {"params",
           {{"total", pc.total()},
            {"token_embedding", pc.token_embedding},
            {"position_embedding", pc.position_embedding},
            {"final_norm", pc.final_norm}}},
          {"layers", layers_json(c)},
          {"receptive_field", {{"context", c.context}, {"coverage", coverage}}},
      };
      if (!match.is_null()) out["ffn_match"] = match;
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    std::cout << c.name << (c.description.empty() ? "" : "  —  " + c.description) << "\n"
              << "  vocab " << c.vocab_size << ", d_model " << c.d_model << ", context " << c.context << ", dropout "
              << c.dropout << "\n\n"
              << layers_table(c);
    if (!match.is_null())
      std::cout << "  FFN matched to " << format_count(args->target) << ": width " << match["ffn"].get<int64_t>()
                << " on " << match["matched_layers"].size() << " layer(s), " << format_count(match["params"])
                << " parameters\n";
    std::cout << "  coverage = offsets 0.." << c.context - 1
              << " that reach the last position after the layer (receptive field, HSM §3)\n";
    return 0;
  }};
}

}  // namespace hsm::cli
