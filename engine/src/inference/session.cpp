#include "hsm/session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "diagnostics/diagnose.h"
#include "diagnostics/logit_lens.h"
#include "diagnostics/mixing_matrix.h"
#include "hsm/corpus.h"
#include "hsm/dataset.h"
#include "hsm/mixer_kind.h"
#include "hsm/tokenizer.h"
#include "inference/fast_decoder.h"
#include "train/checkpoint.h"
#include "model/model.h"
#include "model/torch_compat.h"
#include "io/io_util.h"
#include "io/run_paths.h"
#include "train/evaluation.h"

namespace fs = std::filesystem;

namespace hsm {

// What an evaluation scores: the split's tokens, where its windows start, and the result's
// description of them (split, documents), with what it was read for.
struct EvalSet::Data {
  std::vector<uint16_t> tokens;
  std::vector<int64_t> starts;
  // unigram_nll[n]: the unigram cross-entropy summed over the targets of the first n windows
  // (each window's last T tokens), accumulated in window order: the baseline of any prefix.
  std::vector<double> unigram_nll;
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

struct Session::Impl {
  std::string run_dir;
  ModelConfig config;
  std::optional<Tokenizer> tokenizer;
  torch::Device device{torch::kCPU};
  Gpt model{nullptr};
  std::unique_ptr<FastDecoder> fast;  // built on first use (a copy of the weights as fp32)
  // What-if (hsm/what_if.h): the edits this copy was made with. Its knock-outs stay set on the
  // model between evaluations (evaluate_on adds the options' own and restores these).
  WhatIf edits;

  // Next-token logits after the model consumed `window` from scratch: [V] on the CPU.
  torch::Tensor forward_last(const std::vector<int32_t>& window) {
    auto idx = torch::tensor(std::vector<int64_t>(window.begin(), window.end()), torch::kLong).view({1, -1});
    return model->forward(idx.to(device)).select(1, -1).squeeze(0).to(torch::kCPU, torch::kFloat32);
  }
  // Same, incrementally: feeds tokens into the caches (a fresh state takes them in one pass).
  torch::Tensor feed(const std::vector<int32_t>& tokens, DecodeState& state) {
    if (state.pos == 0 && tokens.size() > 1) {
      auto idx = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong).view({1, -1});
      return model->prefill(idx.to(device), state).squeeze(0).to(torch::kCPU, torch::kFloat32);
    }
    torch::Tensor logits;
    for (int32_t t : tokens)
      logits = model->step(
          torch::full({1}, static_cast<int64_t>(t), torch::TensorOptions().dtype(torch::kLong).device(device)), state);
    return logits.squeeze(0).to(torch::kCPU, torch::kFloat32);
  }
  // Prompts up to this many tokens are stepped through the fast path; longer ones (and the
  // re-encoded window after a slide) go through LibTorch's batched prefill, whose caches the
  // fast path then takes over: one batched pass beats that many single steps.
  static constexpr size_t kFastPrefillSteps = 8;
  // The fast path's equivalent of feed() on a fresh state: logits [V] of the last token.
  const float* fast_start(const std::vector<int32_t>& tokens) {
    if (!fast) fast = std::make_unique<FastDecoder>(*model);
    fast->reset();
    if (tokens.size() <= kFastPrefillSteps) {
      const float* logits = nullptr;
      for (int32_t t : tokens) logits = fast->step(t);
      return logits;
    }
    DecodeState state;
    auto idx = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong).view({1, -1});
    prefill_logits = model->prefill(idx, state).squeeze(0).to(torch::kFloat32).contiguous();
    fast->load_state(state);
    return prefill_logits.data_ptr<float>();
  }
  torch::Tensor prefill_logits;

  // A prompt's tokens as diagnose() and probe() take them: as they are (no <|endoftext|> in
  // front), cut to the first `context` tokens, or max_tokens when that is smaller and > 0.
  std::vector<int32_t> prompt_tokens(const std::string& prompt, int64_t max_tokens, const char* what) const {
    return prompt_token_ids(*tokenizer, prompt, config.context, max_tokens, what);
  }

  // Refuses a set this session cannot score (read for another tokenizer or context).
  const EvalSet::Data& fitting(const EvalSet& set) const;
  // The loss and accuracy of the model over a set's windows with options' skipped layers and
  // knock-outs, both undone afterwards.
  EvalResult evaluate_on(const EvalSet::Data& w, const EvalOptions& options, const ProgressFn& progress);
};

Session::Session() : impl_(std::make_unique<Impl>()) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::open(const std::string& run_dir, const std::string& device) {
  std::unique_ptr<Session> s(new Session());
  auto& m = *s->impl_;
  m.run_dir = run_dir;
  const RunPaths paths(run_dir);
  const nlohmann::json run = read_run_config(run_dir);
  m.config = config_from_json(run["model"].dump(), paths.config);
  m.tokenizer = load_run_tokenizer(run_dir, run);  // the one the model was trained with, or refused
  m.device = compat::parse_device(device);
  check_weights_fit(m.config, paths.weights, paths.config);  // before a model of the config's size is built
  m.model = Gpt(m.config);
  load_weights(m.model, paths.weights);
  m.model->to(m.device);
  m.model->eval();
  // A folder written by save_as(): its a/b edits are in the weights; its knock-outs are not.
  if (auto w = run.find("what_if"); w != run.end()) {
    m.edits.knock_out = what_if_knock_outs(*w, paths.config);
    m.model->set_knock_outs(m.edits.knock_out);  // throws for a layer or head the model does not have
  }
  // The fast decoding path's copy of the weights is part of loading the model (as LibTorch's
  // own), not of the first generation: built here when it will be used.
  if (m.device.is_cpu() && FastDecoder::supports(m.config)) m.fast = std::make_unique<FastDecoder>(*m.model);
  return s;
}

const ModelConfig& Session::config() const { return impl_->config; }
const Tokenizer& Session::tokenizer() const { return *impl_->tokenizer; }
std::string Session::device() const { return impl_->device.str(); }
std::string Session::run_dir() const { return impl_->run_dir; }

std::vector<float> Session::logits(const std::vector<int32_t>& tokens) {
  if (tokens.empty() || static_cast<int64_t>(tokens.size()) > impl_->config.context)
    throw std::invalid_argument("logits() takes 1 to context tokens");
  c10::InferenceMode inference;  // lighter than NoGradGuard: no version counters or views tracked
  auto l = impl_->forward_last(tokens).contiguous();
  return std::vector<float>(l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
}

Diagnosis Session::diagnose(const std::string& prompt, int64_t max_tokens) {
  auto& m = *impl_;
  // The trainer's diagnostics.jsonl records go the same way (diagnostics/diagnose.h).
  return diagnose_tokens(m.model, *m.tokenizer, m.prompt_tokens(prompt, max_tokens, "diagnose"), m.device);
}

Probe Session::probe(const std::string& prompt, int64_t top_k, int64_t max_tokens) {
  return probe_tokens(impl_->prompt_tokens(prompt, max_tokens, "probe"), top_k);
}

Probe Session::probe_tokens(std::vector<int32_t> token_ids, int64_t top_k) {
  auto& m = *impl_;
  if (token_ids.empty()) throw std::invalid_argument("probe: no tokens to look at");
  const auto context = static_cast<size_t>(m.config.context);
  if (token_ids.size() > context) token_ids.erase(token_ids.begin(), token_ids.end() - static_cast<long>(context));
  for (int32_t id : token_ids)
    if (id < 0 || id >= m.config.vocab_size)
      throw std::invalid_argument("probe: token id " + std::to_string(id) + " is outside the vocabulary of " +
                                  std::to_string(m.config.vocab_size));
  Probe p;
  p.token_ids = std::move(token_ids);
  for (int32_t id : p.token_ids) p.tokens.push_back(m.tokenizer->piece(id));
  p.length = static_cast<int64_t>(p.token_ids.size());
  auto idx = torch::tensor(std::vector<int64_t>(p.token_ids.begin(), p.token_ids.end()), torch::kLong).view({1, -1});
  idx = idx.to(m.device);
  const std::vector<LayerDiagnostics> layers = diagnose_model(m.model, idx);
  for (const LayerDiagnostics& l : layers) p.matrix_kinds.push_back(l.kind);
  p.rollout = attention_rollout(layers, p.length);
  p.lens = logit_lens(m.model, idx, top_k, [&](int32_t id) { return m.tokenizer->piece(id); });
  return p;
}

std::vector<MixerWeights> Session::mixer_weights() const { return hsm::mixer_weights(impl_->model); }

// ---- what-if (hsm/what_if.h): an edited copy in memory, and "Save as…" --------------------------
std::unique_ptr<Session> Session::edited(const WhatIf& edits) const {
  const Impl& src = *impl_;
  std::unique_ptr<Session> s(new Session());
  Impl& m = *s->impl_;
  m.run_dir = src.run_dir;
  m.config = src.config;
  m.tokenizer = src.tokenizer;
  m.device = src.device;
  // A deep copy of every parameter and buffer: nothing the copy does reaches this session.
  m.model = Gpt(m.config);
  m.model->to(m.device);
  {
    torch::NoGradGuard no_grad;
    const auto from_p = src.model->named_parameters(), to_p = m.model->named_parameters();
    for (const auto& p : from_p) to_p[p.key()].copy_(p.value());
    const auto from_b = src.model->named_buffers(), to_b = m.model->named_buffers();
    for (const auto& b : from_b) to_b[b.key()].copy_(b.value());
  }
  m.model->eval();
  const auto layers = static_cast<int64_t>(m.model->blocks.size());
  for (const AbEdit& e : edits.ab) {
    if (e.layer < 0 || e.layer >= layers)
      throw std::invalid_argument("a/b edit of layer " + std::to_string(e.layer) + ": the model has layers 0.." +
                                  std::to_string(layers - 1));
    const auto l = static_cast<size_t>(e.layer);
    const std::string layer = "layer " + std::to_string(e.layer) + " (" + m.config.layers[l].mixer + ")";
    try {
      if (!m.model->blocks[l]->mixer->set_ab(e.a, e.b)) throw std::invalid_argument("has no a and b to set");
    } catch (const std::invalid_argument& err) {
      throw std::invalid_argument(layer + " " + err.what());
    }
  }
  // A copy of a copy keeps the edits it was made from, then these.
  m.edits = src.edits;
  m.edits.knock_out.insert(m.edits.knock_out.end(), edits.knock_out.begin(), edits.knock_out.end());
  m.edits.ab.insert(m.edits.ab.end(), edits.ab.begin(), edits.ab.end());
  m.model->set_knock_outs(m.edits.knock_out);  // throws for a layer or head the model does not have
  // The fast decoder copies the weights it is built from: the copy's own, from the edited model.
  if (m.device.is_cpu() && FastDecoder::supports(m.config)) m.fast = std::make_unique<FastDecoder>(*m.model);
  return s;
}

const WhatIf& Session::edits() const { return impl_->edits; }

void Session::save_as(const std::string& run_dir) const {
  const Impl& m = *impl_;
  std::error_code ec;
  if (fs::exists(run_dir, ec) && !(fs::is_directory(run_dir, ec) && fs::is_empty(run_dir, ec)))
    throw std::invalid_argument("save as '" + run_dir + "': the folder exists and is not empty (choose a new one)");
  const RunPaths src(m.run_dir);
  nlohmann::json config = read_run_config(m.run_dir);
  config["what_if"] = what_if_to_json(m.edits, fs::absolute(m.run_dir).lexically_normal().string());
  // Written whole, then published by one rename (io/run_paths.h), as an export is.
  const std::string staged = stage_folder(run_dir);
  try {
    const RunPaths dst(staged);
    Gpt model = m.model;
    save_weights(model, dst.weights);  // the edited weights (knock-outs are no weights: what_if has them)
    fs::copy_file(src.tokenizer, dst.tokenizer);
    if (fs::exists(src.metrics)) fs::copy_file(src.metrics, dst.metrics);
    write_file_atomic(dst.config, config.dump(2) + "\n");
    publish_folder(staged, run_dir);
  } catch (const std::exception& e) {
    fs::remove_all(staged, ec);
    throw std::runtime_error("save as '" + run_dir + "': " + e.what());
  }
}

GenerationResult Session::generate(const std::string& prompt, const GenerateOptions& options,
                                   const std::function<bool(const GeneratedToken&)>& on_token) {
  auto& m = *impl_;
  c10::InferenceMode inference;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t context = m.config.context;
  const int64_t slide = options.slide > 0 ? std::min(options.slide, context - 1) : std::max<int64_t>(1, context / 4);
  Sampler sampler(options.sampling);
  const Tokenizer& tok = *m.tokenizer;
  const int32_t eot = tok.end_of_text_id();

  GenerationResult result;
  result.prompt = prompt;
  result.seed = sampler.seed();
  // Stories in the corpus follow an <|endoftext|>: starting from one puts the model at the
  // beginning of a story.
  std::vector<int32_t> all = {eot};
  for (int32_t id : tok.encode(prompt)) all.push_back(id);
  result.prompt_tokens = static_cast<int64_t>(all.size()) - 1;

  // The model has consumed all[win_start..]; every decoding path slides the same window so
  // their logits agree token for token.
  // The fast path knows nothing of knock-outs (hsm/knock_out.h): LibTorch's steps honour them.
  const bool fast = options.use_cache && options.fast_path && m.device.is_cpu() && FastDecoder::supports(m.config) &&
                    m.model->knock_outs().empty();
  result.decoder = fast ? "fast" : options.use_cache ? "libtorch" : "libtorch-uncached";
  size_t win_start = all.size() > static_cast<size_t>(context) ? all.size() - context : 0;
  result.prompt_tokens_cut = std::max<int64_t>(0, static_cast<int64_t>(win_start) - 1);  // the leading <|endoftext|> is not the prompt's
  DecodeState state;
  auto window = [&] { return std::vector<int32_t>(all.begin() + static_cast<long>(win_start), all.end()); };
  torch::Tensor logits_tensor;  // keeps the LibTorch paths' logits alive
  const float* logits = nullptr;
  auto from_tensor = [&](torch::Tensor t) -> const float* {
    logits_tensor = t.contiguous();
    return logits_tensor.data_ptr<float>();
  };
  auto start_window = [&]() -> const float* {  // a fresh state that has consumed window()
    if (fast) return m.fast_start(window());
    state = DecodeState();
    return from_tensor(options.use_cache ? m.feed(window(), state) : m.forward_last(window()));
  };
  auto next = [&](int32_t id) -> const float* {  // the state has consumed one more token
    if (fast) return m.fast->step(id);
    return from_tensor(options.use_cache ? m.feed({id}, state) : m.forward_last(window()));
  };
  logits = start_window();
  const auto vocab = static_cast<size_t>(m.config.vocab_size);

  std::vector<int32_t> generated, pending;
  for (int i = 0; i < options.sampling.max_new_tokens; ++i) {
    const SampledToken pick = sampler.sample(logits, vocab);
    if (pick.id == eot && options.sampling.stop_at_end) {
      result.ended = true;
      break;
    }
    generated.push_back(pick.id);
    all.push_back(pick.id);

    GeneratedToken g;
    g.id = pick.id;
    g.piece = tok.piece(pick.id);
    g.prob = pick.prob;
    for (const auto& alt : pick.top) g.top.push_back({alt.id, tok.piece(alt.id), alt.prob});
    // Emit the text of the tokens since the last emission, holding back an incomplete UTF-8
    // character (byte-fallback tokens decode to U+FFFD until the last byte arrives). Pieces
    // decode independently (no dummy prefix, identity normalisation), so the emitted parts
    // add up to the decoded whole.
    pending.push_back(pick.id);
    std::string text = tok.decode(pending);
    const bool incomplete = text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
    if (!incomplete || pending.size() >= 4) {  // a UTF-8 character has at most 4 bytes
      g.text = std::move(text);
      pending.clear();
    }
    result.tokens.push_back(g);
    if (on_token && !on_token(g)) break;

    if (static_cast<int64_t>(all.size() - win_start) > context) {
      win_start = all.size() - static_cast<size_t>(context - slide);
      logits = start_window();
    } else {
      logits = next(pick.id);
    }
  }
  result.text = tok.decode(generated);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.tokens_per_s = result.seconds > 0 ? static_cast<double>(result.tokens.size()) / result.seconds : 0;
  return result;
}

EvalSet Session::eval_set(const std::string& data_path, const EvalOptions& options) const {
  const Impl& m = *impl_;
  if (options.split != "val" && options.split != "train" && options.split != "all")
    throw std::invalid_argument("unknown split '" + options.split + "' (use val, train or all)");
  const WindowLayout layout = window_layout(options.windows);  // throws for an unknown one
  DatasetOptions d;
  d.context = m.config.context;
  d.val_fraction = kValFraction;
  d.seed = kSplitSeed;
  d.cache_dir = options.cache_dir;
  d.progress = options.progress;
  d.cancel = options.cancel;
  const TokenDataset data = load_dataset(data_path, *m.tokenizer, d);
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
  w->starts = window_starts(w->tokens, T, layout, static_cast<uint16_t>(m.tokenizer->end_of_text_id()));
  if (options.max_windows > 0 && static_cast<int64_t>(w->starts.size()) > options.max_windows)
    w->starts.resize(static_cast<size_t>(options.max_windows));
  // Unigram baseline over the targets evaluate_windows scores (each window's last T tokens).
  std::vector<double> counts(static_cast<size_t>(m.config.vocab_size), 1.0);
  for (uint16_t t : data.train) counts[t] += 1.0;
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
  w->layout = options.windows;
  w->context = T;
  w->vocab_size = m.config.vocab_size;
  w->tokenizer_hash = m.tokenizer->hash();
  EvalSet set;
  set.data_ = std::move(w);
  return set;
}

const EvalSet::Data& Session::Impl::fitting(const EvalSet& set) const {
  if (!set.data_) throw std::invalid_argument("evaluate: the evaluation set is empty (read one with eval_set)");
  const EvalSet::Data& w = *set.data_;
  if (w.context != config.context || w.vocab_size != config.vocab_size || w.tokenizer_hash != tokenizer->hash())
    throw std::invalid_argument(
        "evaluate: the evaluation set was read for another model (context " + std::to_string(w.context) +
        ", vocabulary " + std::to_string(w.vocab_size) + ", another tokenizer or not); read it again for this one");
  return w;
}

EvalResult Session::Impl::evaluate_on(const EvalSet::Data& w, const EvalOptions& options, const ProgressFn& progress) {
  std::vector<int64_t> skip = options.skip_layers;
  if (options.skip_replaced)
    for (size_t l = 0; l < config.layers.size(); ++l)
      if (mixer_info(config.layers[l].mixer).family != MixerFamily::kAttention) skip.push_back(static_cast<int64_t>(l));
  std::sort(skip.begin(), skip.end());
  skip.erase(std::unique(skip.begin(), skip.end()), skip.end());
  struct Restore {  // the session's own knock-outs (a what-if copy's) stay
    Gpt& model;
    const std::vector<KnockOut>& own;
    ~Restore() {
      model->set_skipped_layers({});
      model->set_knock_outs(own);
    }
  } restore{model, edits.knock_out};
  std::vector<KnockOut> knock_out = edits.knock_out;
  knock_out.insert(knock_out.end(), options.knock_out.begin(), options.knock_out.end());
  model->set_skipped_layers(skip);  // throws for a layer the model does not have
  model->set_knock_outs(knock_out);  // throws for a layer or head it does not have
  EvalResult r = w.described;
  r.skipped_layers = skip;
  r.knock_out = knock_out;
  if (options.batch_size < 1 || options.max_batches < 0)
    throw std::invalid_argument("evaluation batch " + std::to_string(options.batch_size) + " and max batches " +
                                std::to_string(options.max_batches) + ": the batch must be 1 or more, max batches 0 (all) "
                                "or more");
  const WindowEval ev = evaluate_windows(model, w.tokens, w.starts, options.batch_size, options.max_batches, device,
                                         device.is_cuda(), progress, options.cancel);
  // No silent zeros or NaNs (issue 34): an evaluation of nothing, or of a loss that is not a
  // number, is an error that says so.
  if (ev.tokens == 0)
    throw std::runtime_error("the evaluation covered no tokens (" + std::to_string(w.starts.size()) + " windows of " +
                             std::to_string(config.context + 1) + " tokens in the set): evaluate more text, or "
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
  r.unigram_loss = windows > 0 ? w.unigram_nll[static_cast<size_t>(windows)] / static_cast<double>(windows * config.context) : 0;
  return r;
}

EvalResult Session::evaluate(const std::string& data_path, const EvalOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const EvalSet set = eval_set(data_path, options);
  EvalResult r = impl_->evaluate_on(*set.data_, options, options.progress);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

EvalResult Session::evaluate(const EvalSet& set, const EvalOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult r = impl_->evaluate_on(impl_->fitting(set), options, options.progress);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

AblationReport Session::ablate(const std::string& data_path, const EvalOptions& options) {
  if (!options.knock_out.empty())
    throw std::invalid_argument("ablate knocks out each layer and head in turn itself: give no knock-outs");
  const auto t0 = std::chrono::steady_clock::now();
  AblationReport report = ablate(eval_set(data_path, options), options);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

AblationReport Session::ablate(const EvalSet& set, const EvalOptions& options) {
  auto& m = *impl_;
  if (!options.knock_out.empty())
    throw std::invalid_argument("ablate knocks out each layer and head in turn itself: give no knock-outs");
  const auto t0 = std::chrono::steady_clock::now();
  const EvalSet::Data& windows = m.fitting(set);
  // Every layer whole, then every head a layer's mixer can zero alone (MixerImpl::separable_heads).
  // What an edited copy already knocks out is in its base loss; a row for it would be 0 by
  // construction, so it gets none.
  auto already_out = [&m](const KnockOut& k) {
    return std::any_of(m.edits.knock_out.begin(), m.edits.knock_out.end(),
                       [&k](const KnockOut& e) { return e.layer == k.layer && (e.head < 0 || e.head == k.head); });
  };
  std::vector<KnockOut> order;
  for (size_t l = 0; l < m.model->blocks.size(); ++l) order.push_back({static_cast<int64_t>(l), -1});
  for (size_t l = 0; l < m.model->blocks.size(); ++l)
    for (int64_t h = 0; h < m.model->blocks[l]->mixer->separable_heads(); ++h)
      order.push_back({static_cast<int64_t>(l), h});
  order.erase(std::remove_if(order.begin(), order.end(), already_out), order.end());
  const auto runs = static_cast<double>(order.size() + 1);
  auto progress_of = [&](size_t run, const std::string& stage) -> ProgressFn {
    if (!options.progress) return {};
    return [&options, run, runs, stage](const std::string&, double f) {
      options.progress(stage, (static_cast<double>(run) + f) / runs);
    };
  };
  AblationReport report;
  const EvalResult base = m.evaluate_on(windows, options, progress_of(0, "evaluating (nothing knocked out)"));
  report.base_loss = base.loss;
  report.base_accuracy = base.accuracy;
  report.tokens = base.tokens;
  report.split = base.split;
  for (size_t i = 0; i < order.size(); ++i) {
    EvalOptions knocked = options;
    knocked.knock_out = {order[i]};
    const EvalResult e = m.evaluate_on(windows, knocked, progress_of(i + 1, "knocking out " + knock_out_label(order[i])));
    report.ablations.push_back({order[i], e.loss, e.loss - report.base_loss});
  }
  std::stable_sort(report.ablations.begin(), report.ablations.end(),
                   [](const Ablation& a, const Ablation& b) { return a.delta > b.delta; });
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace hsm
