// Generator (hsm/generator.h): one generation's loop (sample, stream, slide the window) over
// one decoder interface with three implementations: the fast fp32 path, LibTorch's cached
// steps, and LibTorch's whole window recomputed per token.
#include "hsm/generator.h"

#include <algorithm>
#include <chrono>

#include "hsm/cpu_threads.h"
#include "hsm/tokenizer.h"
#include "inference/cuda_graph_decoder.h"
#include "inference/model_impl.h"
#include "kernels/parallel_gemm.h"

namespace hsm {
namespace {

// The decoding state of one sequence. start() forgets everything and consumes a window;
// next() consumes one more token. Both return the next-token logits [vocab], valid until the
// next call.
class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  virtual const float* start(const std::vector<int32_t>& window) = 0;
  virtual const float* next(int32_t id, const std::vector<int32_t>& window) = 0;
  // CPU threads the last call used.
  virtual int threads() const { return torch::get_num_threads(); }

 protected:
  const float* keep(torch::Tensor logits) {
    logits_ = logits.contiguous();
    return logits_.data_ptr<float>();
  }
  torch::Tensor logits_;  // keeps LibTorch's logits alive
};

long long parameter_count(const GptImpl& model) {
  long long n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

torch::Tensor token_tensor(const std::vector<int32_t>& tokens) {
  return torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong).view({1, -1});
}

// LibTorch without a cache: the whole window again for every token (for comparison).
class UncachedDecoder : public TokenDecoder {
 public:
  explicit UncachedDecoder(const Model::Impl& m) : m_(m) {}
  const float* start(const std::vector<int32_t>& window) override { return keep(forward_last(window)); }
  const float* next(int32_t, const std::vector<int32_t>& window) override { return keep(forward_last(window)); }

 private:
  // Next-token logits after the model consumed `window` from scratch: [V] on the CPU.
  torch::Tensor forward_last(const std::vector<int32_t>& window) {
    auto logits = m_.gpt->forward(token_tensor(window).to(m_.device));  // [1, T, V]
    return logits.select(1, -1).squeeze(0).to(torch::kCPU, torch::kFloat32);
  }
  const Model::Impl& m_;
};

// LibTorch's incremental steps: a fresh state takes the window in one batched prefill. A step
// runs on one thread unless choose_decode_threads says the machine has cores to spare for it.
class CachedDecoder : public TokenDecoder {
 public:
  explicit CachedDecoder(const Model::Impl& m) : m_(m), threads_(parameter_count(*m.gpt)) {}
  const float* start(const std::vector<int32_t>& window) override {
    state_ = DecodeState();
    return keep(feed(window));
  }
  const float* next(int32_t id, const std::vector<int32_t>&) override {
    if (threads_.choose(torch::get_num_threads()) > 1) return keep(feed({id}));
    const SerialScope serial;
    return keep(feed({id}));
  }
  int threads() const override { return threads_.last() > 0 ? threads_.last() : torch::get_num_threads(); }

 private:
  torch::Tensor feed(const std::vector<int32_t>& tokens) {
    if (state_.pos == 0 && tokens.size() > 1)
      return m_.gpt->prefill(token_tensor(tokens).to(m_.device), state_).squeeze(0).to(torch::kCPU, torch::kFloat32);
    torch::Tensor logits;
    for (int32_t t : tokens)
      logits = m_.gpt->step(
          torch::full({1}, static_cast<int64_t>(t), torch::TensorOptions().dtype(torch::kLong).device(m_.device)),
          state_);
    return logits.squeeze(0).to(torch::kCPU, torch::kFloat32);
  }
  const Model::Impl& m_;
  DecodeState state_;
  DecodeThreads threads_;
};

// The hand-written fp32 path (inference/fast_decoder.h) over the model's shared weights.
class FastPathDecoder : public TokenDecoder {
 public:
  explicit FastPathDecoder(const Model::Impl& m) : m_(m), fast_(m.fast) {}
  // Prompts up to this many tokens are stepped through the fast path; longer ones (and the
  // re-encoded window after a slide) go through LibTorch's batched prefill, whose caches the
  // fast path then takes over: one batched pass beats that many single steps.
  static constexpr size_t kFastPrefillSteps = 8;
  const float* start(const std::vector<int32_t>& window) override {
    fast_.reset();
    if (window.size() <= kFastPrefillSteps) {
      const float* logits = nullptr;
      for (int32_t t : window) logits = fast_.step(t);
      return logits;
    }
    DecodeState state;
    const float* logits = keep(m_.gpt->prefill(token_tensor(window), state).squeeze(0).to(torch::kFloat32));
    fast_.load_state(state);
    return logits;
  }
  const float* next(int32_t id, const std::vector<int32_t>&) override { return fast_.step(id); }
  int threads() const override { return fast_.threads(); }

 private:
  const Model::Impl& m_;
  FastDecoder fast_;
};

// CUDA: LibTorch's batched prefill for a window, then one CUDA graph replay per token
// (inference/cuda_graph_decoder.h); the logits come to the host once per token for sampling.
class GraphDecoder : public TokenDecoder {
 public:
  explicit GraphDecoder(const Model::Impl& m) : m_(m), graph_(m.gpt) {}
  const float* start(const std::vector<int32_t>& window) override {
    DecodeState state;
    auto logits = m_.gpt->prefill(token_tensor(window).to(m_.device), state);
    graph_.load(state);
    return keep(logits.squeeze(0).to(torch::kCPU, torch::kFloat32));
  }
  const float* next(int32_t id, const std::vector<int32_t>&) override {
    return keep(graph_.step(id).squeeze(0).to(torch::kCPU, torch::kFloat32));
  }

 private:
  const Model::Impl& m_;
  CudaGraphDecoder graph_;
};

// Whether `text` ends a sentence: '.', '!' or '?', then any closing quotes or brackets (a
// story's dialogue ends `."`), ignoring trailing white space.
bool ends_sentence(const std::string& text) {
  size_t i = text.find_last_not_of(" \t\n\r");
  if (i == std::string::npos) return false;
  auto closing = [&](size_t at) {
    static const std::string kAscii = "\"')]";
    if (kAscii.find(text[at]) != std::string::npos) return size_t{1};
    // U+201D and U+2019 (closing double and single quotes), 3 bytes in UTF-8.
    if (at >= 2 && (text.compare(at - 2, 3, "\xE2\x80\x9D") == 0 || text.compare(at - 2, 3, "\xE2\x80\x99") == 0))
      return size_t{3};
    return size_t{0};
  };
  while (i != std::string::npos) {
    const size_t n = closing(i);
    if (n == 0) break;
    if (i < n) return false;
    i -= n;
  }
  return i != std::string::npos && (text[i] == '.' || text[i] == '!' || text[i] == '?');
}

// Whether a token's text starts a new word (white space first): the sentence before it is
// over, where a quote or more punctuation would still belong to it.
bool starts_word(const std::string& text) {
  return !text.empty() && (text[0] == ' ' || text[0] == '\n' || text[0] == '\t');
}

}  // namespace

Generator::Generator(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

GenerationResult Generator::run(const std::string& prompt, const GenerateOptions& options,
                                const std::function<bool(const GeneratedToken&)>& on_token) {
  const Model::Impl& m = model_->impl();
  c10::InferenceMode inference;  // lighter than NoGradGuard: no version counters or views tracked
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t context = m.config.context;
  const int64_t slide = options.slide > 0 ? std::min(options.slide, context - 1) : std::max<int64_t>(1, context / 4);
  Sampler sampler(options.sampling);
  const Tokenizer& tok = m.text_tokenizer();
  const int32_t eot = tok.end_of_text_id();

  GenerationResult result;
  result.prompt = prompt;
  result.seed = sampler.seed();
  // Stories in the corpus follow an <|endoftext|>: starting from one puts the model at the
  // beginning of a story.
  std::vector<int32_t> all = {eot};
  for (int32_t id : tok.encode(prompt)) all.push_back(id);
  result.prompt_tokens = static_cast<int64_t>(all.size()) - 1;

  // The fast path knows nothing of knock-outs (hsm/knock_out.h): LibTorch's steps honour them.
  const bool fast = options.use_cache && options.fast_path && m.fast && m.gpt->knock_outs().empty();
  const auto t_decoder = std::chrono::steady_clock::now();
  std::unique_ptr<TokenDecoder> decoder;
  if (fast) {
    decoder = std::make_unique<FastPathDecoder>(m);
    result.decoder = "fast";
  } else if (options.use_cache && CudaGraphDecoder::available(m.device)) {
    try {
      decoder = std::make_unique<GraphDecoder>(m);
      result.decoder = "cuda-graph";
    } catch (const std::exception& e) {  // LibTorch's cached steps instead, saying why
      result.decoder_note = e.what();
    }
  }
  if (!decoder) {
    if (options.use_cache)
      decoder = std::make_unique<CachedDecoder>(m);
    else
      decoder = std::make_unique<UncachedDecoder>(m);
    result.decoder = options.use_cache ? "libtorch" : "libtorch-uncached";
  }
  const auto since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
  result.setup_seconds = since(t_decoder);

  // The model has consumed all[win_start..]; every decoder slides the same window so their
  // logits agree token for token.
  size_t win_start = all.size() > static_cast<size_t>(context) ? all.size() - context : 0;
  // The leading <|endoftext|> is not the prompt's.
  result.prompt_tokens_cut = std::max<int64_t>(0, static_cast<int64_t>(win_start) - 1);
  auto window = [&] { return std::vector<int32_t>(all.begin() + static_cast<long>(win_start), all.end()); };
  const float* logits = decoder->start(window());  // on the host: every decoder has waited for its device
  result.first_token_seconds = since(t0);
  const auto vocab = static_cast<size_t>(m.config.vocab_size);

  std::vector<int32_t> generated, pending;
  std::string shown;  // the generated text so far, for the sentence-end check
  const int sentence_after = options.sampling.end_at_sentence_after;
  for (int i = 0; i < options.sampling.max_new_tokens; ++i) {
    const SampledToken pick = sampler.sample(logits, vocab);
    if (pick.id == eot && options.sampling.stop_at_end) {
      result.ended = true;
      break;
    }
    // Stopped before the token that opens the next sentence, so the text ends on the
    // previous one's punctuation (and quotes), never mid-sentence.
    if (sentence_after > 0 && i >= sentence_after && pending.empty() && ends_sentence(shown) &&
        starts_word(tok.decode({pick.id}))) {
      result.sentence_end = true;
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
    if (sentence_after > 0) shown += g.text;
    result.tokens.push_back(g);
    if (on_token && !on_token(g)) break;

    if (static_cast<int64_t>(all.size() - win_start) > context) {
      win_start = all.size() - static_cast<size_t>(context - slide);
      logits = decoder->start(window());
    } else {
      logits = decoder->next(pick.id, window());
    }
  }
  result.decode_threads = m.device.is_cpu() ? decoder->threads() : 0;
  result.text = tok.decode(generated);
  result.seconds = since(t0);
  result.tokens_per_s = result.seconds > 0 ? static_cast<double>(result.tokens.size()) / result.seconds : 0;
  return result;
}

}  // namespace hsm
