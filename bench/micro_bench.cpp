// Micro-benchmarks of the engine's parts (issue 9): every mixer's forward + backward at
// contexts 128 and 1024, one decoding step per mixer, the LM head with the loss, tokenizer
// encoding and safetensors loading. Items/s are tokens/s. Thread settings as the engine's
// default (set_cpu_threads(0)); HSM_BLAS_THREADS and --threads-like overrides via env.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hsm/mixer_kind.h"
#include "hsm/presets.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"
#include "inference/fast_decoder.h"
#include "train/checkpoint.h"
#include "model/mixers/blocked_attention.h"
#include "model/model.h"
#include "model/torch_compat.h"

namespace fs = std::filesystem;
using namespace hsm;

namespace {

constexpr int64_t kD = 256, kTokens = 4096;  // tokens per forward + backward (batch × context)

const std::vector<std::string> kMixers = {"attn",      "hsm_ab",     "hsm_ab_vec", "hsm_AB",       "hsm_gate1",
                                          "hsm_gate2", "hsm_fusion", "hsm_ab_mh",  "hsm_ab_mh_ext"};

std::shared_ptr<MixerImpl> make(const std::string& id, int64_t layer) {
  const bool mh = mixer_info(id).multi_head;
  LayerSpec spec{id, 512, id == "attn" || id == "hsm_ab_mh" || id == "hsm_ab_mh_ext" ? 8 : (mh ? 4 : 1)};
  return make_mixer(spec, layer, kD, 0.1);
}

void MixerForwardBackward(benchmark::State& state, const std::string& id, int64_t T) {
  torch::manual_seed(0);
  auto m = make(id, 3);
  m->train();
  auto x = torch::randn({kTokens / T, T, kD}).requires_grad_(true);
  for (auto _ : state) {
    m->zero_grad();
    m->forward(x).sum().backward();
  }
  state.SetItemsProcessed(state.iterations() * kTokens);
}

// The attention core alone, [B, 8, T, 32] with B·T = 4096, forward + backward with dropout 0.1:
// "explicit" is the engine's former path (the [T, T] softmax, torch::dropout), "blocked" the
// blocked path with 64 × 256 tiles, "engine" what compat::causal_attention picks for T.
void AttentionCore(benchmark::State& state, const std::string& path, int64_t T, int64_t block_q, int64_t block_k,
                   double p = 0.1) {
  torch::manual_seed(0);
  auto make = [&] { return torch::randn({kTokens / T, 8, T, kD / 8}).requires_grad_(true); };
  auto q = make(), k = make(), v = make();
  for (auto _ : state) {
    torch::Tensor y;
    if (path == "explicit") {
      y = torch::matmul(torch::dropout(compat::causal_attention_weights(q, k), p, true), v);
    } else if (path == "blocked") {
      y = blocked_causal_attention(q, k, v, p, true, {block_q, block_k});
    } else {
      y = compat::causal_attention(q, k, v, p, true);
    }
    y.sum().backward();
  }
  state.SetItemsProcessed(state.iterations() * kTokens);
}

void MixerDecodeStep(benchmark::State& state, const std::string& id) {
  torch::manual_seed(0);
  auto m = make(id, 3);
  m->eval();
  torch::NoGradGuard no_grad;
  const int64_t context = 128, pos = 64;
  auto cache_state = m->make_state();
  MixerState& cache = *cache_state;
  m->prefill(torch::randn({1, pos, kD}), cache, context);
  auto x_t = torch::randn({1, kD});
  for (auto _ : state) benchmark::DoNotOptimize(m->step(x_t, cache, pos, context));  // rewrites position 64
  state.SetItemsProcessed(state.iterations());
}

void ModelDecodeStep(benchmark::State& state, const std::string& preset) {
  torch::manual_seed(0);
  Gpt model(load_preset_or_config(preset));
  model->eval();
  torch::NoGradGuard no_grad;
  auto tok = torch::zeros({1}, torch::kLong);
  DecodeState st;
  for (auto _ : state) {
    if (st.pos >= model->config.context) st = DecodeState();
    benchmark::DoNotOptimize(model->step(tok, st));
  }
  state.SetItemsProcessed(state.iterations());
}

// The hand-written decoding path (inference/fast_decoder.h) on the same random model; half:
// weights rounded to fp16 first, as in the F16 exports, which it then keeps as halves.
void FastDecodeStep(benchmark::State& state, const std::string& preset, bool half) {
  torch::manual_seed(0);
  Gpt model(load_preset_or_config(preset));
  model->eval();
  torch::NoGradGuard no_grad;
  if (half)
    for (auto& p : model->parameters()) p.copy_(p.to(torch::kHalf).to(torch::kFloat));
  FastDecoder fast(*model);
  for (auto _ : state) {
    if (fast.pos() >= model->config.context) fast.reset();
    benchmark::DoNotOptimize(fast.step(0));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(fast.weight_storage());
}

void LmHeadLoss(benchmark::State& state) {
  torch::manual_seed(0);
  const int64_t V = 5000;
  auto h = torch::randn({32, 128, kD}).requires_grad_(true);
  auto w = (0.02 * torch::randn({V, kD})).requires_grad_(true);
  auto y = torch::randint(0, V, {32, 128}, torch::kLong);
  for (auto _ : state) lm_head_loss(h, w, y).backward();
  state.SetItemsProcessed(state.iterations() * 32 * 128);
}

std::string sample_text() {
  const fs::path books = "/work/shared/data/gutenberg-children";
  std::ostringstream text;
  if (fs::is_directory(books)) {
    for (const auto& e : fs::directory_iterator(books)) {
      text << std::ifstream(e.path()).rdbuf();
      if (text.tellp() > 2'000'000) break;
    }
  }
  if (text.tellp() < 100'000)
    for (int i = 0; i < 20000; ++i) text << "Once upon a time " << i << " a little fox met a bird, and they sang.\n";
  return text.str();
}

void TokenizerEncode(benchmark::State& state) {
  const fs::path dir = fs::temp_directory_path() / "hsm_micro_bench";
  fs::create_directories(dir);
  const std::string text = sample_text();
  std::ofstream(dir / "corpus.txt") << text;
  TokenizerTrainOptions options;
  options.vocab_size = 2000;
  const Tokenizer tok = Tokenizer::train((dir / "corpus.txt").string(), (dir / "tok.model").string(), options);
  const std::string chunk = text.substr(0, 200'000);
  int64_t tokens = 0;
  for (auto _ : state) tokens += static_cast<int64_t>(tok.encode(chunk).size());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(chunk.size()));
  state.SetItemsProcessed(tokens);
}

void SafetensorsLoad(benchmark::State& state) {
  const fs::path path = fs::temp_directory_path() / "hsm_micro_bench_weights.safetensors";
  Gpt model(load_preset_or_config("gpt"));
  save_weights(model, path.string());
  for (auto _ : state) load_weights(model, path.string());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(fs::file_size(path)));
  fs::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
  set_cpu_threads(0);
  for (const auto& id : kMixers) {
    for (int64_t T : {128, 1024})
      benchmark::RegisterBenchmark(("MixerForwardBackward/" + id + "/T" + std::to_string(T)).c_str(),
                                   MixerForwardBackward, id, T)
          ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("MixerDecodeStep/" + id).c_str(), MixerDecodeStep, id)->Unit(benchmark::kMicrosecond);
  }
  for (int64_t T : {128, 256, 512, 1024, 2048}) {
    const std::string t = "/T" + std::to_string(T);
    benchmark::RegisterBenchmark(("AttentionCore/explicit" + t).c_str(), AttentionCore, "explicit", T, 0, 0, 0.1)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("AttentionCore/engine" + t).c_str(), AttentionCore, "engine", T, 0, 0, 0.1)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("AttentionCore/blocked" + t).c_str(), AttentionCore, "blocked", T, 64, 256, 0.1)
        ->Unit(benchmark::kMillisecond);
  }
  for (const std::string preset : {"gpt", "hsm_ab"})
    benchmark::RegisterBenchmark(("ModelDecodeStep/" + preset).c_str(), ModelDecodeStep, preset)
        ->Unit(benchmark::kMicrosecond);
  for (const std::string preset : {"gpt", "hsm_ab"})
    for (const bool half : {false, true})
      benchmark::RegisterBenchmark(("FastDecodeStep/" + preset + (half ? "/fp16" : "/fp32")).c_str(), FastDecodeStep,
                                   preset, half)
          ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("LmHeadLoss/32x128xV5000", LmHeadLoss)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("TokenizerEncode/200kB", TokenizerEncode)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("SafetensorsLoad/gpt", SafetensorsLoad)->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
