// `hsm ablate RUN_DIR [--data FILE] [--windows packed|story_start] [--split ...] [--max-windows N]
// [--json]`: importance by ablation (Michel et al. 2019): the validation loss with each layer's
// mixer output, and each head of a layer whose heads are apart, replaced by zero, ranked by how
// much the loss rises. The base loss is `hsm eval`'s on the same windows (by default the ones
// the run was trained on, so the base is the loss its curves show).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "eval_args.h"
#include "hsm/evaluator.h"
#include "hsm/trainer.h"

namespace hsm::cli {

Command add_ablate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ablate", "Loss with each layer's mixer and each head knocked out, ranked");
  auto a = std::make_shared<EvalArgs>();
  add_eval_args(cmd, *a);
  return {cmd, [a]() {
            EvalSetup setup = open_eval(*a);
            const EvalOptions& options = setup.options;
            const std::string& data = setup.data;
            const AblationReport r = Evaluator(setup.model).ablate(data, options);
            end_progress(setup);
            if (a->json) {
              nlohmann::json rows = nlohmann::json::array();
              for (const Ablation& x : r.ablations)
                rows.push_back({{"layer", x.knock_out.layer},
                                {"head", x.knock_out.head < 0 ? nlohmann::json() : nlohmann::json(x.knock_out.head)},
                                {"loss", x.loss},
                                {"delta", x.delta}});
              std::cout << nlohmann::json{{"run", a->run},
                                          {"data", data},
                                          {"split", r.split},
                                          {"windows", r.windows},
                                          {"window_count", r.window_count},
                                          {"tokens", r.tokens},
                                          {"base_loss", r.base_loss},
                                          {"base_accuracy", r.base_accuracy},
                                          {"seconds", r.seconds},
                                          {"ablations", rows}}
                               .dump(2)
                        << "\n";
            } else {
              std::printf("%s split of %s (%s windows, %s, %lld windows, %lld tokens): base loss %.4f; %.1f s\n",
                          r.split.c_str(), data.c_str(), r.windows.c_str(), windows_source(*a).c_str(),
                          static_cast<long long>(r.window_count), static_cast<long long>(r.tokens), r.base_loss,
                          r.seconds);
              std::printf("%-20s %9s %9s\n", "knocked out", "loss", "delta");
              for (const Ablation& x : r.ablations)
                std::printf("%-20s %9.4f %+9.4f\n", knock_out_label(x.knock_out).c_str(), x.loss, x.delta);
            }
            return 0;
          }};
}

}  // namespace hsm::cli
