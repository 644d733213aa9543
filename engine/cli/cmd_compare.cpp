// `hsm compare RUN_A RUN_B [--data FILE] [--split ...] [--windows ...] [--max-windows N] [--top N]
// [--json]`: two runs scored token by token on the same windows (`hsm eval`'s; issue 40): the
// loss of each by position in the window, by distance back to the target's previous occurrence,
// by the target's frequency in the training split; the documents ranked by B's mean loss minus
// A's; the tokens where B beats A most and the reverse. Runs with different tokenizers are
// refused before anything is scored.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "eval_args.h"
#include "hsm/model.h"
#include "hsm/token_scores.h"
#include "hsm/tokenizer.h"

namespace hsm::cli {
namespace {

nlohmann::json bins_json(const std::vector<LossBin>& a, const std::vector<LossBin>& b) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < a.size(); ++i)
    rows.push_back({{"bin", a[i].label},
                    {"tokens", a[i].tokens},
                    {"loss_a", a[i].mean_loss},
                    {"loss_b", b[i].mean_loss},
                    {"difference", b[i].mean_loss - a[i].mean_loss}});
  return rows;
}

nlohmann::json tokens_json(const std::vector<TokenDifference>& list, const Tokenizer& tokenizer) {
  nlohmann::json rows = nlohmann::json::array();
  for (const TokenDifference& t : list)
    rows.push_back({{"window", t.window},
                    {"position", t.position},
                    {"target", t.target},
                    {"target_text", tokenizer.piece(t.target)},
                    {"loss_a", t.loss_a},
                    {"loss_b", t.loss_b},
                    {"difference", t.difference}});
  return rows;
}

void print_bins(const char* title, const std::vector<LossBin>& a, const std::vector<LossBin>& b) {
  std::printf("\n%s\n%-12s %9s %9s %9s %9s\n", title, "bin", "tokens", "loss A", "loss B", "B - A");
  for (size_t i = 0; i < a.size(); ++i)
    std::printf("%-12s %9lld %9.4f %9.4f %+9.4f\n", a[i].label.c_str(), static_cast<long long>(a[i].tokens),
                a[i].mean_loss, b[i].mean_loss, b[i].mean_loss - a[i].mean_loss);
}

void print_documents(const char* title, const std::vector<DocumentDifference>& docs, bool from_end, size_t top) {
  std::printf("\n%s\n%-10s %9s %9s %9s %9s\n", title, "document", "tokens", "loss A", "loss B", "B - A");
  for (size_t i = 0; i < std::min(top, docs.size()); ++i) {
    const DocumentDifference& d = docs[from_end ? docs.size() - 1 - i : i];
    std::printf("%-10lld %9lld %9.4f %9.4f %+9.4f\n", static_cast<long long>(d.document),
                static_cast<long long>(d.tokens), d.loss_a, d.loss_b, d.difference);
  }
}

void print_tokens(const char* title, const std::vector<TokenDifference>& list, const Tokenizer& tokenizer) {
  std::printf("\n%s\n%-8s %8s %-16s %9s %9s %9s\n", title, "window", "position", "target", "loss A", "loss B", "B - A");
  for (const TokenDifference& t : list)
    std::printf("%-8lld %8d %-16s %9.4f %9.4f %+9.4f\n", static_cast<long long>(t.window), t.position,
                tokenizer.piece(t.target).c_str(), t.loss_a, t.loss_b, t.difference);
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "Two runs' per-token losses on the same windows, compared");
  struct Args : EvalArgs {
    size_t top = 10;
  };
  auto a = std::make_shared<Args>();
  add_eval_args(cmd, *a, true);
  cmd->add_option("--top", a->top, "Documents and tokens listed each way (default 10)")->check(whole_in(1, 1000000));
  return {cmd, [a]() {
            EvalSetup setup = open_eval(*a);
            const std::shared_ptr<const Model> model_a = setup.model;
            const std::shared_ptr<const Model> model_b = Model::load(a->run_b, a->device);
            const Tokenizer& tokenizer = model_a->tokenizer();
            require_same_tokenizer(a->run, tokenizer.hash(), model_a->config().vocab_size, a->run_b,
                                   model_b->tokenizer().hash(), model_b->config().vocab_size);
            // One set of windows read once, scored by both (B refuses it if its context differs):
            // the ones both were trained on, or --windows.
            EvalOptions options = setup.options;
            options.windows = common_windows({a->run, a->run_b}, {model_a, model_b}, options.windows);
            Evaluator evaluator_a(model_a), evaluator_b(model_b);
            const EvalSet set = evaluator_a.read(setup.data, options);
            const TokenScores scores_a = evaluator_a.score_tokens(set, options);
            const TokenScores scores_b = evaluator_b.score_tokens(set, options);
            const Comparison c = compare(scores_a, scores_b, a->top);
            end_progress(setup);
            const EvalResult &ra = scores_a.result, &rb = scores_b.result;
            if (a->json) {
              nlohmann::json docs = nlohmann::json::array();
              for (const DocumentDifference& d : c.documents)
                docs.push_back({{"document", d.document},
                                {"tokens", d.tokens},
                                {"loss_a", d.loss_a},
                                {"loss_b", d.loss_b},
                                {"difference", d.difference}});
              std::cout << nlohmann::json{{"run_a", a->run},
                                          {"run_b", a->run_b},
                                          {"data", setup.data},
                                          {"split", ra.split},
                                          {"windows", ra.windows},
                                          {"window_count", ra.window_count},
                                          {"tokens", ra.tokens},
                                          {"loss_a", ra.loss},
                                          {"loss_b", rb.loss},
                                          {"mean_difference", c.mean_difference},
                                          {"by_position", bins_json(c.a.by_position, c.b.by_position)},
                                          {"by_distance", bins_json(c.a.by_distance, c.b.by_distance)},
                                          {"by_frequency", bins_json(c.a.by_frequency, c.b.by_frequency)},
                                          {"documents", docs},
                                          {"b_better", tokens_json(c.b_better, tokenizer)},
                                          {"a_better", tokens_json(c.a_better, tokenizer)}}
                               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                        << "\n";
              return 0;
            }
            std::printf(
                "A: %s\nB: %s\n%s split of %s (%s windows, %s, %lld windows, %lld tokens): loss A %.4f, loss B "
                "%.4f, B - A %+.4f\n",
                a->run.c_str(), a->run_b.c_str(), ra.split.c_str(), setup.data.c_str(), ra.windows.c_str(),
                windows_source(*a).c_str(), static_cast<long long>(ra.window_count), static_cast<long long>(ra.tokens),
                ra.loss, rb.loss, c.mean_difference);
            print_bins("Loss by position in the window", c.a.by_position, c.b.by_position);
            print_bins("Loss by distance back to the target's previous occurrence", c.a.by_distance, c.b.by_distance);
            print_bins("Loss by the target's count in the training split", c.a.by_frequency, c.b.by_frequency);
            print_documents("Documents where B beats A most", c.documents, false, a->top);
            print_documents("Documents where A beats B most", c.documents, true, a->top);
            print_tokens("Tokens where B beats A most", c.b_better, tokenizer);
            print_tokens("Tokens where A beats B most", c.a_better, tokenizer);
            return 0;
          }};
}

}  // namespace hsm::cli
