#include "inference/static_decoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/parallel_gemm.h"
#include "model/mixers/attention.h"
#include "model/mixers/shift.h"

namespace hsm {

// One layer's fixed-shape cache and its step. step() reads the position only as the device
// tensor `pos`; load() and reset() run outside a recorded step and may use host values.
struct StaticDecoder::Layer {
  virtual ~Layer() = default;
  virtual torch::Tensor step(const torch::Tensor& x_t, const torch::Tensor& pos) = 0;  // [B, d] -> [B, d]
  virtual void reset() = 0;
  virtual void load(const MixerState& state, int64_t pos) = 0;
};

namespace {

// 1 for the channels (or heads) a knock-out keeps, 0 for the zeroed ones: `groups` equal groups
// along a dimension of size `size`, shaped by `shape`; undefined when no head is zeroed.
torch::Tensor keep_mask(const MixerImpl& mixer, int64_t groups, int64_t size, std::vector<int64_t> shape,
                        const torch::TensorOptions& options) {
  if (mixer.zeroed_heads().empty()) return {};
  auto keep = torch::ones({size}, options.device(torch::kCPU));
  const int64_t per = size / groups;
  for (int64_t h : mixer.zeroed_heads()) keep.narrow(0, h * per, per).zero_();
  return keep.view(shape).to(options.device());
}

// Shift mixers: the register of the last R inputs, slot i = input of position pos − R + i.
struct ShiftRegister : StaticDecoder::Layer {
  ShiftRegister(ShiftMixerImpl& m, int64_t batch, int64_t context, const torch::TensorOptions& options)
      : mixer(m), R(std::min(*std::max_element(m.shifts.begin(), m.shifts.end()), context)) {
    reg = torch::zeros({batch, R, m.d_model}, options);
    zeros = torch::zeros({batch, m.d_model}, options);
    const int64_t groups = m.separable_heads() > 0 ? m.separable_heads() : 1;
    keep = keep_mask(m, groups, m.d_model, {m.d_model}, options);
  }

  torch::Tensor read(int64_t s) const { return s <= R ? reg.select(1, R - s) : zeros; }  // x[pos − s], [B, d]

  torch::Tensor step(const torch::Tensor& x_t, const torch::Tensor&) override {
    torch::Tensor xs;
    const auto H = static_cast<int64_t>(mixer.shifts.size());
    if (H == 1) {
      xs = read(mixer.shifts[0]);
    } else {
      const int64_t hd = mixer.d_model / H;
      std::vector<torch::Tensor> per_head;
      for (int64_t j = 0; j < H; ++j) per_head.push_back(read(mixer.shifts[static_cast<size_t>(j)]).narrow(1, j * hd, hd));
      xs = torch::cat(per_head, 1);
    }
    auto y = mixer.mix(x_t, xs);  // computed before the register moves (xs may be a view of it)
    if (keep.defined()) y = y * keep;
    reg.copy_(torch::cat({reg.narrow(1, 1, R - 1), x_t.unsqueeze(1)}, 1));
    return y;
  }

  void reset() override { reg.zero_(); }

  void load(const MixerState& state, int64_t pos) override {
    reg.zero_();
    const auto& ring = state_of<ShiftState>(state).ring;  // slot p % R holds the input of position p
    const int64_t first = std::max<int64_t>(0, R - pos);
    if (!ring.defined() || first >= R) return;
    if (ring.size(1) != R) throw std::logic_error("StaticDecoder::load: a shift ring of another size");
    auto slots = (torch::arange(first, R, torch::kLong) + pos).remainder(R).to(ring.device());
    reg.narrow(1, first, R - first).copy_(ring.index_select(1, slots));
  }

  ShiftMixerImpl& mixer;
  const int64_t R;
  torch::Tensor reg, zeros, keep;
};

// Attention: keys and values of every position in fixed buffers, the later slots masked.
struct FixedKvCache : StaticDecoder::Layer {
  FixedKvCache(AttentionImpl& m, int64_t batch, int64_t context, const torch::TensorOptions& options) : mixer(m) {
    k = torch::zeros({batch, m.heads, context, m.head_dim}, options);
    v = torch::zeros_like(k);
    slots = torch::arange(context, options.dtype(torch::kLong));
    keep = keep_mask(m, m.heads, m.heads, {m.heads, 1, 1}, options);
  }

  torch::Tensor step(const torch::Tensor& x_t, const torch::Tensor& pos) override {
    const int64_t B = x_t.size(0), d = x_t.size(1);
    auto [q, kt, vt] = split_qkv_heads(mixer.qkv, x_t.unsqueeze(1), mixer.heads);  // [B, H, 1, hd]
    k.index_copy_(2, pos, kt);
    v.index_copy_(2, pos, vt);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(mixer.head_dim));
    scores.masked_fill_(slots.gt(pos), -std::numeric_limits<double>::infinity());  // [B, H, 1, context]
    auto y = torch::matmul(torch::softmax(scores, -1), v);                         // [B, H, 1, hd]
    if (keep.defined()) y = y * keep;
    return linear(mixer.proj, y.transpose(1, 2).reshape({B, d}));
  }

  void reset() override {
    k.zero_();
    v.zero_();
  }

  void load(const MixerState& state, int64_t pos) override {
    reset();
    const auto& cache = state_of<AttentionState>(state);
    if (pos == 0 || !cache.k.defined()) return;
    k.narrow(2, 0, pos).copy_(cache.k.narrow(2, 0, pos));
    v.narrow(2, 0, pos).copy_(cache.v.narrow(2, 0, pos));
  }

  AttentionImpl& mixer;
  torch::Tensor k, v, slots, keep;
};

}  // namespace

std::string StaticDecoder::unsupported(const GptImpl& model) {
  for (size_t l = 0; l < model.blocks.size(); ++l) {
    const std::string where = "layer " + std::to_string(l) + " (" + model.config.layers[l].mixer + ")";
    if (model.skipped(l)) return where + " is skipped";
    const auto& block = model.blocks[l];
    if (block->mixer_knocked_out) continue;
    if (block->qk_mixer) return where + " takes its queries and keys from another stream";
    const bool shift = dynamic_cast<const ShiftMixerImpl*>(block->mixer.get()) != nullptr;
    const bool attention = block->mixer->kind == MixerKind::Attention &&
                           dynamic_cast<const AttentionImpl*>(block->mixer.get()) != nullptr;
    if (!shift && !attention) return where + " has no static-shape decoding step";
  }
  return "";
}

StaticDecoder::StaticDecoder(Gpt model, int64_t batch) : model_(std::move(model)) {
  const std::string why = unsupported(*model_);
  if (!why.empty()) throw std::invalid_argument("no static-shape decoding: " + why);
  torch::NoGradGuard no_grad;
  const auto& w = model_->tok_emb->weight;
  const auto options = torch::TensorOptions().dtype(w.scalar_type()).device(w.device());
  tokens_ = torch::zeros({batch}, options.dtype(torch::kLong));
  pos_ = torch::zeros({1}, options.dtype(torch::kLong));
  const int64_t context = model_->config.context;
  for (const auto& block : model_->blocks) {
    std::unique_ptr<Layer> layer;
    if (!block->mixer_knocked_out) {
      if (auto* s = dynamic_cast<ShiftMixerImpl*>(block->mixer.get()))
        layer = std::make_unique<ShiftRegister>(*s, batch, context, options);
      else
        layer = std::make_unique<FixedKvCache>(dynamic_cast<AttentionImpl&>(*block->mixer), batch, context, options);
    }
    layers_.push_back(std::move(layer));
  }
}

StaticDecoder::~StaticDecoder() = default;

torch::Tensor& StaticDecoder::tokens() { return tokens_; }
const torch::Tensor& StaticDecoder::position() const { return pos_; }
int64_t StaticDecoder::context() const { return model_->config.context; }

torch::Tensor StaticDecoder::step() {
  torch::NoGradGuard no_grad;
  auto h = model_->tok_emb->forward(tokens_) + model_->pos_emb->forward(pos_);  // [B, d] + [1, d]
  for (size_t l = 0; l < layers_.size(); ++l) {
    // The block's own step (BlockImpl::step_with) with this layer's fixed-shape cache as its mixer's step.
    Layer* layer = layers_[l].get();
    h = model_->blocks[l]->step_with(h, layer ? [layer, this](const torch::Tensor& x) { return layer->step(x, pos_); }
                                              : std::function<torch::Tensor(const torch::Tensor&)>());
  }
  pos_.add_(1);
  return model_->unembed(h);  // [B, V]
}

void StaticDecoder::reset() {
  torch::NoGradGuard no_grad;
  for (auto& layer : layers_)
    if (layer) layer->reset();
  pos_.zero_();
}

void StaticDecoder::load(const DecodeState& state) {
  if (state.pos < 0 || state.pos > context()) throw std::invalid_argument("StaticDecoder::load: position out of range");
  torch::NoGradGuard no_grad;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (!layers_[l]) continue;
    if (l < state.layers.size() && state.layers[l])
      layers_[l]->load(*state.layers[l], state.pos);
    else if (state.pos == 0)
      layers_[l]->reset();
    else
      throw std::invalid_argument("StaticDecoder::load: the decoding state has no cache for layer " + std::to_string(l));
  }
  pos_.fill_(state.pos);
}

}  // namespace hsm
