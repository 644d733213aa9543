// `hsm trace RUN (--prompt TEXT --corrupt TEXT | --example N) [--answer-position P]
// [--answer-token ID] [--no-exact] [--no-attribution] [--json]`: causal tracing (hsm/trace.h;
// docs/diagnostics.md, "Causal tracing"). With --routes (no --corrupt needed) [--threshold W]:
// the information flow routes into the answer position instead (hsm/routes.h, §10). For each site (the residual stream at a block's input,
// the mixer's output, the FFN's output), layer and position: how much of the clean answer's
// log-probability returns when that one activation of the corrupted run is the clean run's.
// With --over-training [--share-threshold S]: the traces recorded while the run trained
// (traces.jsonl, hsm/formation.h): per step the accuracy, the route share from the corrupted
// position and each layer's mixer effect, the step a route formed and the accuracy jump.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "hsm/formation.h"
#include "hsm/model.h"
#include "hsm/run_folder.h"
#include "hsm/tokenizer.h"
#include "hsm/trace.h"
#include "hsm/trainer.h"

namespace hsm::cli {
namespace {

nlohmann::json maps_json(const std::vector<TraceMap>& maps, int64_t positions) {
  nlohmann::json out = nlohmann::json::object();
  for (const TraceMap& m : maps) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t start = 0; start < m.effect.size(); start += static_cast<size_t>(positions)) {
      nlohmann::json row = nlohmann::json::array();
      for (size_t i = start; i < start + static_cast<size_t>(positions); ++i)
        row.push_back(std::isfinite(m.effect[i]) ? nlohmann::json(m.effect[i]) : nlohmann::json());
      rows.push_back(row);
    }
    out[m.site] = rows;  // [layer][position]
  }
  return out;
}

nlohmann::json trace_json(const Trace& t) {
  return {{"clean", t.clean_labels},
          {"corrupt", t.corrupt_labels},
          {"clean_ids", t.clean},
          {"corrupt_ids", t.corrupt},
          {"corrupted_positions", t.corrupted_positions},
          {"layers", t.layers},
          {"positions", t.positions},
          {"answer_position", t.answer_position},
          {"answer_token", t.answer_token},
          {"answer", t.answer_label},
          {"clean_logprob", t.clean_logprob},
          {"corrupt_logprob", t.corrupt_logprob},
          {"exact", maps_json(t.exact, t.positions)},
          {"attribution", maps_json(t.attribution, t.positions)},
          {"agreement", std::isfinite(t.agreement) ? nlohmann::json(t.agreement) : nlohmann::json()},
          {"exact_seconds", t.exact_seconds},
          {"attribution_seconds", t.attribution_seconds}};
}

// A map as rows of layers, columns of positions: one character per cell from its effect.
void print_map(const Trace& t, const TraceMap& m) {
  static const char* kShades = " .:-=+*#%@";  // effect 0 .. 1 in tenths; '!' below -0.1, '?' absent
  std::printf("  %s (rows: layers; columns: positions; ' ' 0 ... '@' 1, '!' negative, '?' none)\n", m.site.c_str());
  for (int64_t l = 0; l < t.layers; ++l) {
    std::printf("    layer %2lld |", static_cast<long long>(l));
    for (int64_t p = 0; p < t.positions; ++p) {
      const double e = m.at(l, p, t.positions);
      const char c = !std::isfinite(e) ? '?' : e < -0.1 ? '!' : kShades[std::clamp(static_cast<int>(e * 10), 0, 9)];
      std::printf("%c", c);
    }
    std::printf("|\n");
  }
  // The strongest cells, named.
  std::vector<std::pair<double, int64_t>> cells;
  for (size_t i = 0; i < m.effect.size(); ++i)
    if (std::isfinite(m.effect[i])) cells.emplace_back(m.effect[i], static_cast<int64_t>(i));
  std::sort(cells.begin(), cells.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::printf("    strongest:");
  for (size_t i = 0; i < cells.size() && i < 4; ++i) {
    const int64_t l = cells[i].second / t.positions, p = cells[i].second % t.positions;
    std::printf("  layer %lld pos %lld [%s] %.2f", static_cast<long long>(l), static_cast<long long>(p),
                t.clean_labels[static_cast<size_t>(p)].c_str(), cells[i].first);
  }
  std::printf("\n");
}

void print_trace(const Trace& t) {
  std::printf("%lld tokens; corrupted at", static_cast<long long>(t.positions));
  for (int64_t p : t.corrupted_positions)
    std::printf(" %lld ([%s] -> [%s])", static_cast<long long>(p), t.clean_labels[static_cast<size_t>(p)].c_str(),
                t.corrupt_labels[static_cast<size_t>(p)].c_str());
  std::printf("\nanswer [%s] after position %lld: log p clean %.4f, corrupted %.4f\n", t.answer_label.c_str(),
              static_cast<long long>(t.answer_position), t.clean_logprob, t.corrupt_logprob);
  const double span = std::abs(t.clean_logprob - t.corrupt_logprob);
  if (span < 0.01)
    std::printf("note: the corruption moves log p by only %.2g nats: effects of a few hundredths can be float32 "
                "rounding; a token the answer depends on more gives a clearer map\n", span);
  if (!t.exact.empty()) {
    std::printf("\nactivation patching (exact, %.2f s): the share of the clean answer's log-probability restored\n",
                t.exact_seconds);
    for (const TraceMap& m : t.exact) print_map(t, m);
  }
  if (!t.attribution.empty()) {
    std::printf("\nattribution patching (estimate from one backward pass, %.2f s)", t.attribution_seconds);
    if (std::isfinite(t.agreement)) std::printf("; agreement with the exact maps r = %.3f", t.agreement);
    std::printf("\n");
    for (const TraceMap& m : t.attribution) print_map(t, m);
  }
}

nlohmann::json routes_json(const Routes& r, const std::vector<RouteEdge>& kept, double threshold) {
  nlohmann::json edges = nlohmann::json::array();
  for (const RouteEdge& e : kept)
    edges.push_back({{"layer", e.layer}, {"from", e.from}, {"to", e.to}, {"weight", e.weight},
                     {"kind", route_kind_name(e.kind)}});
  return {{"tokens", r.labels},         {"token_ids", r.tokens},     {"layers", r.layers},
          {"positions", r.positions},   {"answer_position", r.answer_position},
          {"threshold", threshold},     {"mixer_terms", r.mixer_terms},
          {"all_edges", r.edges.size()}, {"seconds", r.seconds},      {"edges", edges}};
}

void print_routes(const Routes& r, const std::vector<RouteEdge>& kept, double threshold) {
  const auto label = [&](int64_t p) { return r.labels[static_cast<size_t>(p)].c_str(); };
  std::printf("%lld tokens, %lld layers; routes into the prediction after position %lld [%s] (%.3f s)\n",
              static_cast<long long>(r.positions), static_cast<long long>(r.layers),
              static_cast<long long>(r.answer_position), label(r.answer_position), r.seconds);
  std::printf("%zu of %zu edges have weight >= %g on a route from the output\n", kept.size(), r.edges.size(), threshold);
  std::printf("%5s %5s %5s %8s  %-8s  tokens\n", "layer", "from", "to", "weight", "kind");
  for (int64_t l = r.layers - 1; l >= 0; --l) {
    for (const RouteEdge& e : kept)
      if (e.layer == l)
        std::printf("%5lld %5lld %5lld %8.4f  %-8s  [%s] -> [%s]\n", static_cast<long long>(e.layer),
                    static_cast<long long>(e.from), static_cast<long long>(e.to), e.weight, route_kind_name(e.kind),
                    label(e.from), label(e.to));
  }
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

// `--over-training`: the series of RUN/traces.jsonl (hsm/formation.h) and its two marked steps.
nlohmann::json formation_json(const Formation& f) {
  nlohmann::json points = nlohmann::json::array();
  for (const FormationPoint& p : f.points) {
    nlohmann::json effects = nlohmann::json::array();
    for (double v : p.mixer_effect) effects.push_back(number_or_null(v));
    points.push_back({{"step", p.step},
                      {"val_loss", number_or_null(p.val_loss)},
                      {"accuracy", number_or_null(p.accuracy)},
                      {"route_share", p.route_share},
                      {"mixer_effect", effects}});
  }
  return {{"share_threshold", f.rule.share_threshold},
          {"accuracy_fraction", f.rule.accuracy_fraction},
          {"formed_step", f.formed_step >= 0 ? nlohmann::json(f.formed_step) : nlohmann::json()},
          {"accuracy_step", f.accuracy_step >= 0 ? nlohmann::json(f.accuracy_step) : nlohmann::json()},
          {"accuracy_level", number_or_null(f.accuracy_level)},
          {"max_share", f.max_share},
          {"summary", f.summary()},
          {"points", points}};
}

void print_formation(const Formation& f, const std::string& example) {
  std::printf("%s, traced at %zu validations; route share: of the answer's information flow, the share from the "
              "corrupted position\n", example.c_str(), f.points.size());
  std::printf("%8s %9s %9s %7s", "step", "val_loss", "accuracy", "share");
  for (int64_t l = 0; l < f.layers; ++l) std::printf("  mixer%-3lld", static_cast<long long>(l));
  std::printf("\n");
  for (const FormationPoint& p : f.points) {
    std::printf("%8lld %9.4f %9.4f %7.4f", static_cast<long long>(p.step), p.val_loss, p.accuracy, p.route_share);
    for (double v : p.mixer_effect) std::printf("  %8.3f", v);
    const char* mark = p.step == f.formed_step && p.step == f.accuracy_step ? "  <- route formed, accuracy jump"
                       : p.step == f.formed_step                          ? "  <- route formed"
                       : p.step == f.accuracy_step                        ? "  <- accuracy jump"
                                                                          : "";
    std::printf("%s\n", mark);
  }
  std::printf("%s\n", f.summary().c_str());
}

}  // namespace

Command add_trace_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("trace", "Causal tracing: which layer at which position carries the answer");
  struct Args {
    std::string run, prompt, corrupt, device = "auto";
    int64_t example = -1, answer_position = -1, answer_token = -1, step = -1;
    int threads = 0;
    bool json = false, no_exact = false, no_attribution = false, routes = false, over_training = false;
    double threshold = 0.04, share_threshold = FormationRule{}.share_threshold;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  auto* prompt = cmd->add_option("--prompt", a->prompt, "The clean prompt (tokenised as `hsm probe` does)");
  auto* corrupt = cmd->add_option("--corrupt", a->corrupt,
                                  "The corrupted prompt: the clean one with a token replaced (the same token count)");
  cmd->add_option("--example", a->example,
                  "A task run's test example N, corrupted automatically (its queried key replaced; docs/diagnostics.md)")
      ->check(whole_in(0))
      ->excludes(prompt)
      ->excludes(corrupt);
  corrupt->needs(prompt);
  cmd->add_flag("--routes", a->routes,
                "Information flow routes into the answer position instead (one forward pass; --corrupt not needed)");
  cmd->add_option("--threshold", a->threshold, "--routes: keep the edges of weight >= W on a route (default 0.04)")
      ->check(number_in(0.0, 2.0));
  cmd->add_option("--answer-position", a->answer_position, "The position whose next token is traced (default: the last)")
      ->check(whole_in(0));
  cmd->add_option("--answer-token", a->answer_token, "The answer's token id (default: the clean run's most likely)")
      ->check(whole_in(0));
  cmd->add_flag("--no-exact", a->no_exact, "Attribution patching only (one backward pass)");
  cmd->add_flag("--no-attribution", a->no_attribution, "Exact activation patching only");
  cmd->add_flag("--over-training", a->over_training,
                "The traces recorded while the run trained (traces.jsonl): per step the accuracy, the route share from "
                "the corrupted position and each layer's mixer effect; the step a route formed and the accuracy jump");
  cmd->add_option("--share-threshold", a->share_threshold,
                  "--over-training: a route has formed when its share is at least this from a step on (default " +
                      std::to_string(FormationRule{}.share_threshold).substr(0, 4) + ")")
      ->check(number_in(0.0, 1.0));
  cmd->add_option("--device", a->device, "cpu, cuda, cuda:N or auto");
  add_threads_option(cmd, a->threads);
  cmd->add_option("--step", a->step,
                  "The model as it was at step S: a snapshot (hsm train --snapshot-every/--snapshot-log) or a kept "
                  "checkpoint (default: the newest)")
      ->check(whole_in(0));
  cmd->add_flag("--json", a->json, "Print JSON: each site's map as [layer][position] (null where a layer has no such site)");
  return {cmd, [a]() {
            if (a->over_training) {  // reads the run's log only: no model is loaded
              std::string example;
              const std::vector<FormationPoint> points = read_formation_points(a->run, &example);
              if (points.empty())
                throw std::invalid_argument(a->run + " has no traces recorded while it trained (" +
                                            RunFolder(a->run).traces +
                                            "): train it with --trace-example N (a task run) or --trace-text/--trace-corrupt");
              FormationRule rule;
              rule.share_threshold = a->share_threshold;
              const Formation f = formation(points, rule);
              if (a->json)
                std::cout << formation_json(f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
              else
                print_formation(f, example);
              return 0;
            }
            if (a->example < 0 && a->prompt.empty())
              throw std::invalid_argument("trace: give --prompt and --corrupt, or --example N for a task run");
            if (a->example < 0 && !a->routes && a->corrupt.empty())
              throw std::invalid_argument("trace: --prompt needs --corrupt (or give --routes)");
            if (a->no_exact && a->no_attribution)
              throw std::invalid_argument("trace: --no-exact and --no-attribution leave nothing to compute");
            set_cpu_threads(a->threads);
            const std::shared_ptr<const Model> model = Model::load(a->run, a->device, a->step);
            // Checked against the model before it is narrowed to a token id (issue 65: 4294967301
            // was traced as token 5).
            const int64_t vocab = model->config().vocab_size;
            if (a->answer_token >= vocab)
              throw std::invalid_argument("--answer-token " + std::to_string(a->answer_token) +
                                          " is outside the model's vocabulary; use 0 to " + std::to_string(vocab - 1));
            // A prompt that does not fit is refused, naming the limit, before anything cuts it
            // (issue 65: two long prompts cut to their first tokens were traced as another pair).
            if (a->example < 0)
              for (const std::string* text : {&a->prompt, &a->corrupt}) {
                if (text->empty()) continue;
                const auto tokens = static_cast<int64_t>(model->tokenizer().encode(*text).size());
                if (tokens > model->config().context)
                  throw std::invalid_argument(std::string(text == &a->prompt ? "--prompt" : "--corrupt") + ": the prompt is " +
                                              std::to_string(tokens) + " tokens; the model reads at most " +
                                              std::to_string(model->config().context) + " (its context): shorten it");
              }
            const Tracer tracer(model);
            if (a->routes) {
              // The trace's prompt and answer position (a task example's last answer).
              const TraceRequest r =
                  a->example >= 0 ? tracer.task_request(a->example) : tracer.text_request(a->prompt, a->prompt);
              const Routes routes = tracer.routes(r.clean, a->answer_position >= 0 ? a->answer_position : r.answer_position);
              const auto kept = prune_routes(routes, a->threshold);
              if (a->json)
                std::cout << routes_json(routes, kept, a->threshold)
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                          << "\n";
              else
                print_routes(routes, kept, a->threshold);
              return 0;
            }
            TraceRequest r = a->example >= 0 ? tracer.task_request(a->example) : tracer.text_request(a->prompt, a->corrupt);
            if (a->answer_position >= 0) r.answer_position = a->answer_position;
            if (a->answer_token >= 0) r.answer_token = static_cast<int32_t>(a->answer_token);
            r.exact = !a->no_exact;
            r.attribution = !a->no_attribution;
            const Trace t = tracer.trace(r);
            if (a->json)
              std::cout << trace_json(t).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
            else
              print_trace(t);
            return 0;
          }};
}

}  // namespace hsm::cli
