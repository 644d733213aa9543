// `hsm weights RUN_DIR [--json]`: the learned mixer weights per layer (HSM Table 2): a and b
// of the (a,b) mixers (per channel for hsm_ab_vec, per head for the multihead variants) and
// each layer's shifts; for a model of hsm_ab layers only, the end-to-end weight of every
// offset (HSM §3).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "commands.h"
#include "hsm/diagnostics.h"
#include "hsm/model.h"
#include "hsm/trainer.h"

namespace hsm::cli {
namespace {

std::string values_text(const std::vector<float>& v) {
  char buf[96];
  if (v.size() == 1) {
    std::snprintf(buf, sizeof buf, "%.4f", v[0]);
  } else {
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    std::snprintf(buf, sizeof buf, "mean %.4f in [%.4f, %.4f] over %zu", mean, *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()), v.size());
  }
  return buf;
}

}  // namespace

Command add_weights_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("weights", "Show the learned mixer weights (a, b) and shifts per layer");
  struct Args {
    std::string run;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  cmd->add_flag("--json", a->json, "Print JSON");
  return {
      cmd, [a]() {
        const std::vector<MixerWeights> layers = Model::load(a->run, "cpu")->mixer_weights();
        const std::vector<double> offsets = offset_weights(layers);
        if (a->json) {
          nlohmann::json out = nlohmann::json::array();
          for (const auto& w : layers)
            out.push_back({{"layer", w.layer},
                           {"mixer", w.mixer},
                           {"shifts", w.shifts},
                           {"a", w.a},
                           {"b", w.b},
                           {"lag_weights", w.lag_weights}});
          nlohmann::json j = {{"layers", out}};
          if (!offsets.empty()) j["offset_weights"] = offsets;
          std::cout << j.dump(2) << "\n";
          return 0;
        }
        for (const auto& w : layers) {
          std::printf("layer %d  %s", w.layer, w.mixer.c_str());
          if (!w.shifts.empty()) {
            std::printf("%*s shift", static_cast<int>(13 - std::min<size_t>(13, w.mixer.size())), "");
            for (int64_t s : w.shifts) std::printf(" %lld", static_cast<long long>(s));
          }
          if (w.mixer == "hsm_ab_mh" || w.mixer == "hsm_ab_mh_ext") {
            std::printf("\n");
            for (size_t h = 0; h < w.a.size(); ++h)
              std::printf("    head %zu shift %-4lld a %.4f  b %.4f\n", h, static_cast<long long>(w.shifts[h]), w.a[h],
                          w.b[h]);
            continue;
          }
          if (w.has_weights()) std::printf("  a %s  b %s", values_text(w.a).c_str(), values_text(w.b).c_str());
          if (!w.lag_weights.empty()) {  // an extractor: its weight per lag k = 1..l, the first few
            std::printf("  lag weights %s; k = 1..8:", values_text(w.lag_weights).c_str());
            for (size_t k = 0; k < std::min<size_t>(8, w.lag_weights.size()); ++k)
              std::printf(" %.4f", w.lag_weights[k]);
          }
          std::printf("\n");
        }
        if (!offsets.empty()) {
          std::printf("\nend-to-end weight of offset k (prod of b_l where bit l of k is set, 1 + a_l elsewhere):\n");
          for (size_t k = 0; k < offsets.size(); ++k)
            std::printf("%5zu %9.4f%s", k, offsets[k], (k % 6 == 5 || k + 1 == offsets.size()) ? "\n" : "  ");
        }
        return 0;
      }};
}

}  // namespace hsm::cli
