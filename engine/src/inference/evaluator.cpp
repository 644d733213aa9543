// Evaluator (hsm/evaluator.h): a model's loss on an evaluation set, with skipped layers and
// knock-outs as arguments of the call, set on a view of the model of the evaluator's own
// (share_weights: the same weights), never on the shared model.
#include "hsm/evaluator.h"

#include "hsm/task_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "eval/evaluation.h"
#include "hsm/dataset.h"
#include "hsm/mixer_kind.h"
#include "hsm/token_scores.h"
#include "hsm/tokenizer.h"
#include "inference/model_impl.h"
#include "eval/task_data.h"

namespace hsm {

// What an evaluation scores: the split's tokens, where its windows start, and the result's
// description of them (split, documents), with what it was read for.
struct EvalSet::Data {
  std::vector<uint16_t> tokens;
  std::vector<int64_t> starts;
  // unigram_nll[n]: the unigram cross-entropy summed over the targets of the first n windows
  // (each window's last T tokens), accumulated in window order: the baseline of any prefix.
  std::vector<double> unigram_nll;
  std::vector<int64_t> train_counts;  // per vocabulary entry: its count in the training split
  EvalResult described;
  std::string layout;
  int64_t context = 0;
  int64_t vocab_size = 0;
  std::string tokenizer_hash;
};

EvalSet::EvalSet() = default;
EvalSet::~EvalSet() = default;
EvalSet::EvalSet(const EvalSet&) = default;
EvalSet& EvalSet::operator=(const EvalSet&) = default;
bool EvalSet::empty() const { return !data_; }
int64_t EvalSet::windows() const { return data_ ? static_cast<int64_t>(data_->starts.size()) : 0; }
const std::string& EvalSet::split() const {
  static const std::string none;
  return data_ ? data_->described.split : none;
}
const std::string& EvalSet::layout() const {
  static const std::string none;
  return data_ ? data_->layout : none;
}
int64_t EvalSet::tokens() const { return data_ ? static_cast<int64_t>(data_->tokens.size()) : 0; }

struct Evaluator::Impl {
  std::shared_ptr<const Model> model;
  // The view that carries this call's skipped layers and knock-outs: made on first need and
  // reused (an ablation sets one knock-out after another on it).
  Gpt view{nullptr};

  const Model::Impl& m() const { return model->impl(); }
  // Refuses a set this model cannot score (read for another tokenizer or context).
  const EvalSet::Data& fitting(const EvalSet& set) const;
  // The loss and accuracy of the model over a set's windows with options' skipped layers and
  // knock-outs added to the model's own.
  // per_token (optional): every predicted token's loss and rank from the same evaluation.
  EvalResult evaluate_on(const EvalSet::Data& w, const EvalOptions& options, const ProgressFn& progress,
                         TokenLosses* per_token = nullptr);
  TokenScores score_tokens(const EvalSet::Data& w, const EvalOptions& options);
};

Evaluator::Evaluator(std::shared_ptr<const Model> model) : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
}
Evaluator::~Evaluator() = default;

EvalSet Evaluator::read(const std::string& data_path, const EvalOptions& options) const {
  const Model::Impl& m = impl_->m();
  if (options.split != "val" && options.split != "train" && options.split != "all")
    throw std::invalid_argument("unknown split '" + options.split + "' (use val, train or all)");
  const std::string& windows = options.windows.empty() ? impl_->model->trained_windows() : options.windows;
  const WindowLayout layout = window_layout(windows);  // throws for an unknown one
  DatasetOptions d;
  d.context = m.config.context;
  d.val_fraction = kValFraction;
  d.seed = kSplitSeed;
  d.cache_dir = options.cache_dir;
  d.progress = options.progress;
  d.cancel = options.cancel;
  const TokenDataset data = load_dataset(data_path, m.text_tokenizer(), d);
  auto w = std::make_shared<EvalSet::Data>();
  EvalResult& r = w->described;
  r.split = options.split;
  if (options.split == "val") {
    w->tokens = data.val;
    r.documents = data.val_documents;
  } else if (options.split == "train") {
    w->tokens = data.train;
    r.documents = data.train_documents;
  } else {
    w->tokens = data.train;
    w->tokens.insert(w->tokens.end(), data.val.begin(), data.val.end());
    r.documents = data.train_documents + data.val_documents;
  }
  const int64_t T = m.config.context;
  w->starts = window_starts(w->tokens, T, layout, static_cast<uint16_t>(m.text_tokenizer().end_of_text_id()));
  if (options.max_windows > 0 && static_cast<int64_t>(w->starts.size()) > options.max_windows)
    w->starts.resize(static_cast<size_t>(options.max_windows));
  // Unigram baseline over the targets evaluate_windows scores (each window's last T tokens).
  w->train_counts.assign(static_cast<size_t>(m.config.vocab_size), 0);
  for (uint16_t t : data.train) ++w->train_counts[t];
  std::vector<double> counts(static_cast<size_t>(m.config.vocab_size), 1.0);
  for (size_t v = 0; v < counts.size(); ++v) counts[v] += static_cast<double>(w->train_counts[v]);
  const double total = static_cast<double>(data.train.size()) + static_cast<double>(counts.size());
  std::vector<double> log_p(counts.size());  // one log per vocabulary entry, not per target
  for (size_t v = 0; v < counts.size(); ++v) log_p[v] = std::log(counts[v] / total);
  w->unigram_nll.reserve(w->starts.size() + 1);
  double nll = 0;
  w->unigram_nll.push_back(nll);
  for (int64_t start : w->starts) {
    for (int64_t t = 1; t <= T; ++t) nll -= log_p[w->tokens[static_cast<size_t>(start + t)]];
    w->unigram_nll.push_back(nll);
  }
  w->layout = windows;
  r.windows = windows;
  w->context = T;
  w->vocab_size = m.config.vocab_size;
  w->tokenizer_hash = m.text_tokenizer().hash();
  EvalSet set;
  set.data_ = std::move(w);
  return set;
}

const EvalSet::Data& Evaluator::Impl::fitting(const EvalSet& set) const {
  if (!set.data_) throw std::invalid_argument("evaluate: the evaluation set is empty (read one with eval_set)");
  const EvalSet::Data& w = *set.data_;
  const Model::Impl& mi = m();
  if (w.context != mi.config.context || w.vocab_size != mi.config.vocab_size ||
      w.tokenizer_hash != mi.text_tokenizer().hash())
    throw std::invalid_argument(
        "evaluate: the evaluation set was read for another model (context " + std::to_string(w.context) +
        ", vocabulary " + std::to_string(w.vocab_size) + ", another tokenizer or not); read it again for this one");
  return w;
}

EvalResult Evaluator::Impl::evaluate_on(const EvalSet::Data& w, const EvalOptions& options,
                                        const ProgressFn& progress, TokenLosses* per_token) {
  const Model::Impl& mi = m();
  std::vector<int64_t> skip = options.skip_layers;
  if (options.skip_replaced)
    for (size_t l = 0; l < mi.config.layers.size(); ++l)
      if (mixer_info(mi.config.layers[l].mixer).family != MixerFamily::kAttention)
        skip.push_back(static_cast<int64_t>(l));
  std::sort(skip.begin(), skip.end());
  skip.erase(std::unique(skip.begin(), skip.end()), skip.end());
  std::vector<KnockOut> knock_out = mi.edits.knock_out;
  knock_out.insert(knock_out.end(), options.knock_out.begin(), options.knock_out.end());
  Gpt* model = &mi.gpt;  // the shared model, read only, when the call changes nothing
  if (!skip.empty() || !options.knock_out.empty()) {
    if (!view) view = share_weights(mi.gpt, mi.config, mi.device);
    view->set_skipped_layers(skip);   // throws for a layer the model does not have
    view->set_knock_outs(knock_out);  // throws for a layer or head it does not have
    model = &view;
  }
  EvalResult r = w.described;
  r.skipped_layers = skip;
  r.knock_out = knock_out;
  if (options.batch_size < 1 || options.max_batches < 0)
    throw std::invalid_argument("evaluation batch " + std::to_string(options.batch_size) + " and max batches " +
                                std::to_string(options.max_batches) + ": the batch must be 1 or more, max batches 0 (all) "
                                "or more");
  const WindowEval ev = evaluate_windows(*model, w.tokens, w.starts, options.batch_size, options.max_batches,
                                         mi.device, mi.device.is_cuda(), progress, options.cancel, per_token);
  // No silent zeros or NaNs (issue 34): an evaluation of nothing, or of a loss that is not a
  // number, is an error that says so.
  if (ev.tokens == 0)
    throw std::runtime_error("the evaluation covered no tokens (" + std::to_string(w.starts.size()) + " windows of " +
                             std::to_string(mi.config.context + 1) + " tokens in the set): evaluate more text, or "
                             "fewer skipped windows");
  if (!std::isfinite(ev.loss))
    throw std::runtime_error("the loss over " + std::to_string(ev.tokens) + " tokens is not finite (" +
                             std::to_string(ev.loss) + "): the weights overflow in computation (an edit or a damaged "
                             "run); evaluate an earlier checkpoint or without the edit");
  r.loss = ev.loss;
  r.accuracy = ev.accuracy;
  r.tokens = ev.tokens;
  int64_t windows = static_cast<int64_t>(w.starts.size());
  if (options.max_batches > 0 && options.max_batches <= windows / options.batch_size)  // no overflow of the product
    windows = options.max_batches * options.batch_size;
  r.window_count = windows;
  r.unigram_loss =
      windows > 0 ? w.unigram_nll[static_cast<size_t>(windows)] / static_cast<double>(windows * mi.config.context) : 0;
  return r;
}

EvalResult Evaluator::evaluate(const std::string& data_path, const EvalOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const EvalSet set = read(data_path, options);
  EvalResult r = impl_->evaluate_on(*set.data_, options, options.progress);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

EvalResult Evaluator::evaluate(const EvalSet& set, const EvalOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult r = impl_->evaluate_on(impl_->fitting(set), options, options.progress);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

TokenScores Evaluator::Impl::score_tokens(const EvalSet::Data& w, const EvalOptions& options) {
  const Model::Impl& mi = m();
  TokenLosses losses;
  TokenScores s;
  s.result = evaluate_on(w, options, options.progress, &losses);
  s.run = mi.run_dir;
  s.tokenizer_hash = mi.text_tokenizer().hash();
  s.vocab_size = mi.config.vocab_size;
  const int64_t T = s.context = mi.config.context;
  const auto eot = static_cast<uint16_t>(mi.text_tokenizer().end_of_text_id());
  const auto windows = static_cast<int64_t>(losses.loss.size()) / T;
  // Documents: a token's document is the count of end-of-text tokens before it (an
  // end-of-text target ends, and belongs to, the document before it). Windows start in order.
  int64_t document = 0, counted_to = 0;
  s.tokens.reserve(losses.loss.size());
  for (int64_t wi = 0; wi < windows; ++wi) {
    const int64_t start = w.starts[static_cast<size_t>(wi)];
    const uint16_t* x = w.tokens.data() + start;
    const std::vector<int32_t> distance = previous_occurrence_distances(std::vector<int32_t>(x, x + T + 1));
    for (int64_t t = 0; t < T; ++t) {
      const int64_t target_at = start + t + 1;
      for (; counted_to < target_at; ++counted_to) document += w.tokens[static_cast<size_t>(counted_to)] == eot;
      TokenScore k;
      k.window = wi;
      k.position = static_cast<int32_t>(t);
      k.input = x[t];
      k.target = x[t + 1];
      const auto i = static_cast<size_t>(wi * T + t);
      k.loss = losses.loss[i];
      k.prob = std::exp(-k.loss);
      k.rank = losses.rank[i];
      k.distance = distance[static_cast<size_t>(t)];
      k.document = document;
      k.train_count = w.train_counts[static_cast<size_t>(k.target)];
      s.tokens.push_back(k);
    }
  }
  return s;
}

TokenScores Evaluator::score_tokens(const EvalSet& set, const EvalOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  TokenScores s = impl_->score_tokens(impl_->fitting(set), options);
  s.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

TokenScores Evaluator::score_tokens(const std::string& data_path, const EvalOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const EvalSet set = read(data_path, options);
  TokenScores s = impl_->score_tokens(*set.data_, options);
  s.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

AblationReport Evaluator::ablate(const std::string& data_path, const EvalOptions& options) {
  if (!options.knock_out.empty())
    throw std::invalid_argument("ablate knocks out each layer and head in turn itself: give no knock-outs");
  const auto t0 = std::chrono::steady_clock::now();
  AblationReport report = ablate(read(data_path, options), options);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

AblationReport Evaluator::ablate(const EvalSet& set, const EvalOptions& options) {
  if (!options.knock_out.empty())
    throw std::invalid_argument("ablate knocks out each layer and head in turn itself: give no knock-outs");
  const auto t0 = std::chrono::steady_clock::now();
  const Model::Impl& mi = impl_->m();
  const EvalSet::Data& windows = impl_->fitting(set);
  // Every layer whole, then every head a layer's mixer can zero alone (MixerImpl::separable_heads).
  // What an edited model already knocks out is in its base loss; a row for it would be 0 by
  // construction, so it gets none.
  auto already_out = [&mi](const KnockOut& k) {
    return std::any_of(mi.edits.knock_out.begin(), mi.edits.knock_out.end(),
                       [&k](const KnockOut& e) { return e.layer == k.layer && (e.head < 0 || e.head == k.head); });
  };
  std::vector<KnockOut> order;
  const auto& blocks = mi.gpt->blocks;
  for (size_t l = 0; l < blocks.size(); ++l) order.push_back({static_cast<int64_t>(l), -1});
  for (size_t l = 0; l < blocks.size(); ++l)
    for (int64_t h = 0; h < blocks[l]->mixer->separable_heads(); ++h) order.push_back({static_cast<int64_t>(l), h});
  order.erase(std::remove_if(order.begin(), order.end(), already_out), order.end());
  const auto runs = static_cast<double>(order.size() + 1);
  auto progress_of = [&](size_t run, const std::string& stage) -> ProgressFn {
    if (!options.progress) return {};
    return [&options, run, runs, stage](const std::string&, double f) {
      options.progress(stage, (static_cast<double>(run) + f) / runs);
    };
  };
  AblationReport report;
  const EvalResult base = impl_->evaluate_on(windows, options, progress_of(0, "evaluating (nothing knocked out)"));
  report.base_loss = base.loss;
  report.base_accuracy = base.accuracy;
  report.tokens = base.tokens;
  report.split = base.split;
  report.windows = base.windows;
  report.window_count = base.window_count;
  for (size_t i = 0; i < order.size(); ++i) {
    EvalOptions knocked = options;
    knocked.knock_out = {order[i]};
    const EvalResult e =
        impl_->evaluate_on(windows, knocked, progress_of(i + 1, "knocking out " + knock_out_label(order[i])));
    report.ablations.push_back({order[i], e.loss, e.loss - report.base_loss});
  }
  std::stable_sort(report.ablations.begin(), report.ablations.end(),
                   [](const Ablation& a, const Ablation& b) { return a.delta > b.delta; });
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

TaskScore Evaluator::score_task(int64_t examples, const CancelFlag* cancel) const {
  const Model::Impl& m = impl_->m();
  if (!m.task) throw std::invalid_argument(m.run_dir + " was trained on a corpus, not a task: evaluate it on text");
  if (examples < 1) throw std::invalid_argument("score_task: " + std::to_string(examples) + " examples; use 1 or more");
  // The shared model as it is (its knock-outs set when it was made, eval mode): read only.
  const TaskData data(parse_task(m.task->spec()));
  return data.score(m.gpt, TaskSplit::kTest, examples, 64, m.device, cancel);
}

// One loader for a task run's score: the run's Model (Model::load: its checks, its what-if
// knock-outs) and Evaluator::score_task.
TaskScore score_task_run(const std::string& run_dir, int64_t examples, const std::string& device_name) {
  if (run_task(run_dir).empty())
    throw std::invalid_argument("'" + run_dir + "' was not trained on a task (no task.json): score it with hsm eval");
  if (examples < 1) throw std::invalid_argument("--examples " + std::to_string(examples) + ": use 1 or more");
  return Evaluator(Model::load(run_dir, device_name)).score_task(examples);
}

}  // namespace hsm
