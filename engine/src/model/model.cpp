#include "model/model.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <tuple>

#include "kernels/fast_kernels.h"
#include "model/cuda_fused.h"
#include "model/dropout.h"
#include "model/sites.h"
#include "model/torch_compat.h"
#include "kernels/gemm.h"
#include "kernels/parallel_gemm.h"

namespace hsm {

namespace {
// A forward without gradients on the CPU in fp32 (evaluation, prefill, LibTorch's decode
// steps) may work in place: nothing is kept for a backward pass.
bool inference_on_cpu(const torch::Tensor& x, const torch::nn::Module& m) {
  return !m.is_training() && !torch::GradMode::is_enabled() && x.is_cpu() && x.scalar_type() == torch::kFloat32;
}
// GELU (erf form) on fast_kernels' vectorised, multi-threaded kernels, saving its input for
// the backward pass as torch::gelu does. LibTorch's CPU gelu and gelu_backward run on its one
// thread; here the other cores, idle between BLAS calls, take a share.
struct FastGelu : torch::autograd::Function<FastGelu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for_row_blocks(xc.numel(), [&](int64_t a, int64_t b) { fast::gelu_rows(in + a, out + a, b - a); });
    ctx->save_for_backward({xc});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    auto g = grads[0].contiguous();
    auto dx = torch::empty_like(x);
    const float* xs = x.data_ptr<float>();
    const float* gs = g.data_ptr<float>();
    float* d = dx.data_ptr<float>();
    for_row_blocks(x.numel(), [&](int64_t a, int64_t b) { fast::gelu_backward(xs + a, gs + a, d + a, b - a); });
    return {dx};
  }
};

// A LayerNorm module's forward; in a CUDA step that learns, the fused kernels' (model/cuda_fused.h).
torch::Tensor norm(torch::nn::LayerNorm& ln, const torch::Tensor& x) {
  if (torch::GradMode::is_enabled() && cuda_fused::eligible_layer_norm(x, ln->weight, ln->bias))
    return cuda_fused::layer_norm(x, ln->weight, ln->bias, ln->options.eps());
  return ln->forward(x);
}

// A step that learns: h + dropout(y) and the LayerNorm after it, {h, ln(h)}: one CUDA kernel each
// way where cuda_fused::eligible_add_norm says so, else the residual dropout and norm(); the same sums.
// for_product: only a matrix product reads ln(h) (the FFN's first): under bf16 autocast the kernel
// then writes it in bf16 as autocast's cast would have, and that cast (and its backward) is gone.
std::pair<torch::Tensor, torch::Tensor> add_then_norm(const torch::Tensor& h, const torch::Tensor& y, double dropout,
                                                      bool training, torch::nn::LayerNorm& ln, bool for_product) {
  if (cuda_fused::eligible_add_norm(h, y, ln->weight, ln->bias))
    return cuda_fused::add_norm(h, y, training ? std::max(dropout, 0.0) : 0.0, ln->weight, ln->bias, ln->options.eps(),
                                for_product && compat::cuda_autocast_bf16());
  auto out = residual_dropout(h, y, dropout, training);
  return {out, norm(ln, out)};
}

torch::Tensor fast_gelu(const torch::Tensor& x) {
  if (x.is_cpu() && x.scalar_type() == torch::kFloat32) return FastGelu::apply(x);
  return torch::gelu(x);
}
}  // namespace

FeedForwardImpl::FeedForwardImpl(int64_t d, int64_t hidden, double proj_std) {
  fc1 = register_module("fc1", torch::nn::Linear(d, hidden));
  fc2 = register_module("fc2", torch::nn::Linear(hidden, d));
  init_linear(fc1);
  init_linear(fc2, proj_std);
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  // A CUDA step that learns under bf16 autocast: the first product without its bias, then the bias
  // and GELU in one kernel, whose backward pass also gives the bias gradient (model/cuda_fused.h).
  if (torch::GradMode::is_enabled() && fc1->bias.defined() && cuda_fused::eligible_bias_gelu(x, fc1->bias))
    return linear(fc2, cuda_fused::bias_gelu(torch::nn::functional::linear(x, fc1->weight), fc1->bias));
  return linear(fc2, fast_gelu(linear(fc1, x)));
}

void FeedForwardImpl::add_forward_to(torch::Tensor& h, const torch::Tensor& x) {
  if (!inference_on_cpu(x, *this) || fc1->weight.scalar_type() != torch::kFloat32 || !h.is_contiguous()) {
    h.add_(forward(x));
    return;
  }
  // fc1 without its bias, then bias + GELU in one pass over [N, f] in place, then fc2
  // accumulated straight into the residual stream (beta = 1): no [N, f] temporary besides
  // the activation and no separate residual add. Same sums as forward(x) to rounding.
  // In split mode (parallel_gemm.h) each thread takes a block of rows through all of it.
  const int64_t d = x.size(-1);
  const auto x2 = x.reshape({-1, d});
  auto h2 = h.view({-1, h.size(-1)});
  auto a = torch::empty({x2.size(0), fc1->weight.size(0)}, x.options());  // [N, f]
  for_row_blocks(x2.size(0), [&](int64_t r0, int64_t r1) {
    auto ar = a.narrow(0, r0, r1 - r0);
    auto hr = h2.narrow(0, r0, r1 - r0);
    gemm(ar, x2.narrow(0, r0, r1 - r0), fc1->weight.t());
    fast::bias_gelu_rows(ar.data_ptr<float>(), fc1->bias.defined() ? fc1->bias.data_ptr<float>() : nullptr, ar.size(0),
                         ar.size(1));
    gemm(hr, ar, fc2->weight.t(), 1.0f);
    if (fc2->bias.defined()) hr.add_(fc2->bias);
  });
}

BlockImpl::BlockImpl(const ModelConfig& c, int64_t layer) {
  const LayerSpec& spec = c.layers.at(layer);
  const auto norm = torch::nn::LayerNormOptions({c.d_model});
  ln1 = register_module("ln1", torch::nn::LayerNorm(norm));
  mixer = register_module("mixer", make_mixer(spec, layer, c.d_model, c.dropout, c.context));
  qk_mixer = dynamic_cast<QkSourceMixerImpl*>(mixer.get());
  ln2 = register_module("ln2", torch::nn::LayerNorm(norm));
  // GPT-2: residual projections scaled by 1/sqrt(2·N) so the residual stream's variance
  // does not grow with depth.
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers.size()));
  ffn = register_module("ffn", FeedForward(c.d_model, spec.ffn, proj_std));
  dropout = c.dropout;
  index = layer;
}

torch::Tensor BlockImpl::forward(const torch::Tensor& h_in, const torch::Tensor& qk, const Observers* observers) {
  // The sites this call's observers read in this block; none (the usual case) costs nothing.
  const bool sees_map = observers && observers->wants(Site::kMixerMap, index);
  const bool sees_mixer = observers && observers->wants(Site::kMixer, index);
  const bool sees_ffn = observers && observers->wants(Site::kFfn, index);
  torch::Tensor h;
  if (mixer_knocked_out && !sees_map && !sees_mixer) {
    h = h_in.clone();  // h_in + 0; a copy, as the FFN below may add to it in place
  } else {
    torch::Tensor y;
    if (!mixer_knocked_out || sees_map) {
      const auto x = norm(ln1, h_in);
      const auto q = qk.defined() ? norm(ln1, qk) : qk;
      if (sees_map) {  // the mixer's own map of its input (a knocked-out mixer's too), for the first row
        const auto x0 = x.narrow(0, 0, 1), q0 = q.defined() ? q.narrow(0, 0, 1) : q;
        const auto map = mixer->mixing_matrices(x0, q0);
        observers->visit_map(SiteEvent{Site::kMixerMap, index, map.matrices, mixer.get(), &x0, &q0, &map.shifts});
      }
      if (!mixer_knocked_out) y = (qk_mixer && q.defined()) ? qk_mixer->forward_qk(x, q) : mixer->forward(x);
    }
    if (mixer_knocked_out) y = torch::zeros_like(h_in);
    if (sees_mixer) y = observers->visit(Site::kMixer, index, std::move(y));
    if (torch::GradMode::is_enabled() && !sees_ffn) {  // a step that learns: the residual add joined to ln2
      const auto [hs, x2] = add_then_norm(h_in, y, dropout, is_training(), ln2, /*for_product=*/true);
      return residual_dropout(hs, ffn->forward(x2), dropout, is_training());
    }
    h = residual_dropout(h_in, y, dropout, is_training());
  }
  if (sees_ffn)  // the FFN's output as a tensor of its own, for the observers
    return residual_dropout(h, observers->visit(Site::kFfn, index, ffn->forward(norm(ln2, h))), dropout,
                            is_training());
  if (inference_on_cpu(h, *this)) {  // evaluation: the FFN's output added in place
    ffn->add_forward_to(h, ln2->forward(h));
    return h;
  }
  return residual_dropout(h, ffn->forward(norm(ln2, h)), dropout, is_training());
}

std::pair<torch::Tensor, torch::Tensor> BlockImpl::forward_joined(const torch::Tensor& h_in, const torch::Tensor& x,
                                                                  torch::nn::LayerNorm& next, bool next_for_product) {
  const auto [h, x2] = add_then_norm(h_in, mixer->forward(x), dropout, is_training(), ln2, /*for_product=*/true);
  return add_then_norm(h, ffn->forward(x2), dropout, is_training(), next, next_for_product);
}

torch::Tensor BlockImpl::step(const torch::Tensor& h_t, MixerState& cache, int64_t pos, int64_t context,
                              const torch::Tensor& qk) {
  if (mixer_knocked_out) return step_with(h_t, {});
  return step_with(h_t, [&](const torch::Tensor& x) {
    return (qk_mixer && qk.defined()) ? qk_mixer->step_qk(x, ln1->forward(qk), cache, pos, context)
                                      : mixer->step(x, cache, pos, context);
  });
}

torch::Tensor BlockImpl::step_with(const torch::Tensor& h_t,
                                   const std::function<torch::Tensor(const torch::Tensor&)>& mix) {
  auto h = mix ? h_t + mix(ln1->forward(h_t)) : h_t.clone();  // a knocked-out mixer adds 0 (a copy: the FFN adds in place)
  ffn->add_forward_to(h, ln2->forward(h));
  return h;
}

torch::Tensor BlockImpl::prefill(const torch::Tensor& h_in, MixerState& cache, int64_t context,
                                 const torch::Tensor& qk) {
  if (mixer_knocked_out) {
    auto h = h_in.clone();
    ffn->add_forward_to(h, ln2->forward(h));
    return h;
  }
  auto x = ln1->forward(h_in);
  auto y = (qk_mixer && qk.defined()) ? qk_mixer->prefill_qk(x, ln1->forward(qk), cache, context)
                                      : mixer->prefill(x, cache, context);
  auto h = h_in + y;
  ffn->add_forward_to(h, ln2->forward(h));
  return h;
}

GptImpl::GptImpl(const ModelConfig& c) : config(c) {
  validate(c);
  tok_emb = register_module("tok_emb", torch::nn::Embedding(c.vocab_size, c.d_model));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(c.context, c.d_model));
  block_list = register_module("blocks", torch::nn::ModuleList());
  for (int64_t l = 0; l < static_cast<int64_t>(c.layers.size()); ++l) {
    blocks.emplace_back(c, l);
    block_list->push_back(blocks.back());
  }
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})));
  torch::NoGradGuard no_grad;
  tok_emb->weight.normal_(0.0, 0.02);
  pos_emb->weight.normal_(0.0, 0.02);
  for (const LayerSpec& l : c.layers) sources_.push_back(qk_source(mixer_info(l.mixer).kind));
  auto uses = [&](QkSource s) { return std::find(sources_.begin(), sources_.end(), s) != sources_.end(); };
  if (uses(QkSource::kRandom)) {
    // ε ~ N(0, 0.02²), the scale of a freshly initialised embedding, drawn by a fixed-seed
    // std::mt19937 (the same on every LibTorch and device) and saved with the weights.
    std::mt19937 gen(20240521);
    std::normal_distribution<float> normal(0.0F, 0.02F);
    std::vector<float> values(static_cast<size_t>(c.context * c.d_model));
    for (float& v : values) v = normal(gen);
    qk_random = register_buffer("qk_random", torch::tensor(values).view({c.context, c.d_model}));
  }
  if (uses(QkSource::kFixedText)) qk_tokens = register_buffer("qk_tokens", torch::zeros({c.context}, torch::kLong));
  if (c.init == "ex") apply_ex_init(*this);
}

void GptImpl::to(torch::Device device, torch::Dtype dtype, bool non_blocking) {
  torch::nn::Module::to(device, dtype, non_blocking);
  if (qk_tokens.defined()) qk_tokens.set_data(qk_tokens.to(torch::kLong));
}

void GptImpl::to(torch::Dtype dtype, bool non_blocking) {
  torch::nn::Module::to(dtype, non_blocking);
  if (qk_tokens.defined()) qk_tokens.set_data(qk_tokens.to(torch::kLong));
}

void GptImpl::set_fixed_tokens(const std::vector<int64_t>& tokens) {
  if (!qk_tokens.defined()) return;  // no fixed_seq_qk layer
  if (static_cast<int64_t>(tokens.size()) < config.context)
    throw std::invalid_argument("fixed_seq_qk needs " + std::to_string(config.context) + " tokens, got " +
                                std::to_string(tokens.size()));
  for (int64_t t : tokens)
    if (t < 0 || t >= config.vocab_size) throw std::invalid_argument("fixed_seq_qk: token id out of the vocabulary");
  torch::NoGradGuard no_grad;
  qk_tokens.copy_(torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.begin() + config.context)));
}

std::vector<int64_t> GptImpl::fixed_tokens() const {
  if (!qk_tokens.defined()) return {};
  auto t = qk_tokens.to(torch::kCPU).contiguous();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

void GptImpl::set_skipped_layers(const std::vector<int64_t>& layers) {
  std::vector<bool> skip(blocks.size(), false);
  for (int64_t l : layers) {
    if (l < 0 || l >= static_cast<int64_t>(blocks.size()))
      throw std::invalid_argument("skip layer " + std::to_string(l) + ": the model has layers 0.." +
                                  std::to_string(blocks.size() - 1));
    skip[static_cast<size_t>(l)] = true;
  }
  skip_ = skip;
}

void GptImpl::set_knock_outs(const std::vector<KnockOut>& knock_outs) {
  const auto layers = static_cast<int64_t>(blocks.size());
  std::vector<bool> whole(blocks.size(), false);
  std::vector<std::vector<int64_t>> heads(blocks.size());
  for (const KnockOut& k : knock_outs) {
    if (k.layer < 0 || k.layer >= layers)
      throw std::invalid_argument("knock-out of " + knock_out_label(k) + ": the model has layers 0.." +
                                  std::to_string(layers - 1));
    const auto l = static_cast<size_t>(k.layer);
    if (k.head < 0) {
      whole[l] = true;
      continue;
    }
    const int64_t separable = blocks[l]->mixer->separable_heads();
    if (k.head >= separable)
      throw std::invalid_argument("knock-out of " + knock_out_label(k) + ": " +
                                  (separable > 0 ? "its mixer has heads 0.." + std::to_string(separable - 1)
                                                 : "its mixer (" + config.layers[l].mixer +
                                                       ") has no heads apart; knock the layer out whole"));
    if (std::find(heads[l].begin(), heads[l].end(), k.head) == heads[l].end()) heads[l].push_back(k.head);
  }
  for (size_t l = 0; l < blocks.size(); ++l) {
    blocks[l]->mixer_knocked_out = whole[l];
    blocks[l]->mixer->set_zeroed_heads(heads[l]);
  }
  knock_outs_ = knock_outs;
}

std::vector<torch::Tensor> GptImpl::qk_streams(const torch::Tensor& e, int64_t T) {
  std::vector<torch::Tensor> out(blocks.size());
  for (size_t l = 0; l < blocks.size(); ++l)
    if (sources_[l] == QkSource::kEmbedding && !skipped(l)) out[l] = e;
  // rnd / fixed: one pass of the fixed sequence (batch 1) through the blocks below the
  // highest layer that reads it; each such layer takes the stream at its input. Inside the
  // pass every layer sees the fixed sequence as its own input: a rnd/fixed layer takes Q and K
  // from that same stream (so it acts as attention there), a static layer from the pass's
  // input. The pass is part of the forward (gradients reach the lower blocks through it).
  for (QkSource source : {QkSource::kRandom, QkSource::kFixedText}) {
    int64_t last = -1;
    for (size_t l = 0; l < blocks.size(); ++l)
      if (sources_[l] == source && !skipped(l)) last = static_cast<int64_t>(l);
    if (last < 0) continue;
    const auto x0 = source == QkSource::kRandom ? qk_random.narrow(0, 0, T).unsqueeze(0)
                                                : embed(qk_tokens.narrow(0, 0, T).unsqueeze(0));  // [1, T, d]
    auto s = x0;
    for (int64_t l = 0; l <= last; ++l) {
      if (skipped(static_cast<size_t>(l))) continue;
      if (sources_[static_cast<size_t>(l)] == source) out[static_cast<size_t>(l)] = s;
      if (l == last) break;
      s = blocks[static_cast<size_t>(l)]->forward(
          s, sources_[static_cast<size_t>(l)] == QkSource::kEmbedding ? x0 : torch::Tensor());
    }
  }
  return out;
}

torch::Tensor GptImpl::run_blocks(torch::Tensor h, const torch::Tensor& e) {
  const bool plain = std::all_of(sources_.begin(), sources_.end(), [](QkSource s) { return s == QkSource::kSelf; });
  if (plain && skip_.empty()) {  // every model without DA *_qk layers: the loop as it always was
    for (auto& block : blocks) h = block->forward(h);
    return h;
  }
  const auto qk = qk_streams(e, h.size(1));
  return run_layers(std::move(h), 0, qk, nullptr);
}

torch::Tensor GptImpl::run_layers(torch::Tensor h, size_t from, const std::vector<torch::Tensor>& qk,
                                  const Observers* observers) {
  for (size_t l = from; l < blocks.size(); ++l) {
    const auto layer = static_cast<int64_t>(l);
    if (observers && observers->wants(Site::kResidual, layer)) h = observers->visit(Site::kResidual, layer, h);
    if (skipped(l)) continue;
    // (A stream of batch 1 serves a batch of variants of one input, patching's: the *_qk mixers broadcast it.)
    h = blocks[l]->forward(h, l < qk.size() ? qk[l] : torch::Tensor(), observers);
  }
  return h;
}

torch::Tensor GptImpl::hidden(const torch::Tensor& idx, const Observers& observers) {
  const auto e = embed(idx);
  return hidden_from(fast_dropout(e, config.dropout, is_training()), 0, qk_streams(e, idx.size(1)), observers);
}

torch::Tensor GptImpl::hidden_from(torch::Tensor h, size_t from, const std::vector<torch::Tensor>& qk,
                                   const Observers& observers) {
  auto z = norm(ln_f, run_layers(std::move(h), from, qk, &observers));
  if (observers.wants(Site::kFinal, -1)) z = observers.visit(Site::kFinal, -1, std::move(z));
  return z;
}

torch::Tensor GptImpl::output(const torch::Tensor& z) { return torch::matmul(z, tok_emb->weight.t()); }

torch::Tensor GptImpl::unembed(const torch::Tensor& h) { return output(ln_f->forward(h)); }

void apply_ex_init(torch::nn::Module& model) {
  // EX §6: "biases initialized with zeros, weights ... normal distribution with a mean of
  // zero and a standard deviation of 0.01". LayerNorm gains and shifts keep 1 and 0 (a gain
  // of N(0, 0.01) would all but switch the normalised inputs off).
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    const std::string& key = p.key();
    const bool norm =
        key.rfind("ln_f.", 0) == 0 || key.find(".ln1.") != std::string::npos || key.find(".ln2.") != std::string::npos;
    if (norm) continue;
    const bool bias = key.size() >= 4 && key.compare(key.size() - 4, 4, "bias") == 0;
    if (bias)
      p.value().zero_();
    else
      p.value().normal_(0.0, 0.01);
  }
}

torch::Tensor GptImpl::embed(const torch::Tensor& idx) {
  const int64_t T = idx.size(1);
  if (T > config.context)
    throw std::invalid_argument("sequence of " + std::to_string(T) + " tokens exceeds the context of " +
                                std::to_string(config.context));
  auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));
  return tok_emb->forward(idx) + pos_emb->forward(pos);  // [B, T, d] + [T, d]
}

torch::Tensor GptImpl::forward_embedded(const torch::Tensor& h0) {
  auto h = run_blocks(fast_dropout(h0, config.dropout, is_training()), h0);
  return output(ln_f->forward(h));  // tied output: [B, T, V]
}

torch::Tensor GptImpl::hidden(const torch::Tensor& idx) {
  const auto e = embed(idx);
  auto h = fast_dropout(e, config.dropout, is_training());
  // A CUDA step that learns through a plain stack (no DA *_qk layer, none skipped or knocked out):
  // each block's residual adds joined to the LayerNorm after them (BlockImpl::forward_joined), the
  // last one to ln_f; the same sums as run_blocks then ln_f.
  const bool plain = std::all_of(sources_.begin(), sources_.end(), [](QkSource s) { return s == QkSource::kSelf; });
  const bool knocked_out =
      std::any_of(blocks.begin(), blocks.end(), [](const Block& b) { return b->mixer_knocked_out; });
  if (torch::GradMode::is_enabled() && h.is_cuda() && cuda_fused::enabled() && plain && skip_.empty() &&
      !knocked_out && !blocks.empty())
    return run_blocks_joined(h);
  return norm(ln_f, run_blocks(h, e));
}

torch::Tensor GptImpl::run_blocks_joined(torch::Tensor h) {
  if (blocks.empty()) return norm(ln_f, h);
  auto x = norm(blocks[0]->ln1, h);
  for (size_t l = 0; l < blocks.size(); ++l) {
    const bool last = l + 1 == blocks.size();
    // ln_f's output leaves the model (hidden()): fp32. A next block's ln1 may write bf16 for an
    // attention mixer's products.
    const bool next_for_product = !last && blocks[l + 1]->mixer->reads_input_through_products_only();
    std::tie(h, x) = blocks[l]->forward_joined(h, x, last ? ln_f : blocks[l + 1]->ln1, next_for_product);
  }
  return x;
}

torch::Tensor GptImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  return lm_head_loss(hidden(idx), tok_emb->weight, targets);
}

torch::Tensor GptImpl::step(const torch::Tensor& idx_t, DecodeState& state) {
  if (state.pos >= config.context)
    throw std::logic_error("decode state is full (" + std::to_string(config.context) + " positions)");
  if (state.layers.empty())
    for (const Block& b : blocks) state.layers.push_back(b->mixer->make_state());
  if (state.qk_streams.empty()) state.qk_streams = qk_streams(torch::Tensor(), config.context);
  auto pos = torch::full({1}, state.pos, torch::TensorOptions().dtype(torch::kLong).device(idx_t.device()));
  auto h = tok_emb->forward(idx_t) + pos_emb->forward(pos);  // [B, d]
  const auto e = h;
  for (size_t l = 0; l < blocks.size(); ++l) {
    if (skipped(l)) continue;
    torch::Tensor qk;  // static: this token's embedding; rnd/fixed: the stream until cached
    if (sources_[l] == QkSource::kEmbedding)
      qk = e;
    else if (blocks[l]->qk_mixer && !blocks[l]->qk_mixer->has_queries(*state.layers[l]))
      qk = state.qk_streams[l];
    h = blocks[l]->step(h, *state.layers[l], state.pos, config.context, qk);
  }
  ++state.pos;
  return output(ln_f->forward(h));  // [B, V]
}

torch::Tensor GptImpl::prefill(const torch::Tensor& idx, DecodeState& state) {
  if (state.pos != 0) throw std::logic_error("prefill() needs a fresh decode state");
  state.layers.clear();
  for (const Block& b : blocks) state.layers.push_back(b->mixer->make_state());
  auto h = embed(idx);  // [B, T, d]; throws past the context
  const auto e = h;
  state.qk_streams = qk_streams(torch::Tensor(), config.context);
  for (size_t l = 0; l < blocks.size(); ++l) {
    if (skipped(l)) continue;
    const torch::Tensor qk = sources_[l] == QkSource::kEmbedding ? e : state.qk_streams[l];
    h = blocks[l]->prefill(h, *state.layers[l], config.context, qk);
  }
  state.pos = idx.size(1);
  return output(ln_f->forward(h.select(1, -1)));  // [B, V]
}

torch::Tensor GptImpl::forward(const torch::Tensor& idx) { return forward_embedded(embed(idx)); }

}  // namespace hsm
