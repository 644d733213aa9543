#include "inference/fast_decoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "hsm/cpu_threads.h"
#include "hsm/mixer_kind.h"
#include "kernels/fast_kernels.h"
#include "model/mixers/attention.h"
#include "model/mixers/shift.h"
#include "model/model.h"
#include "kernels/parallel_gemm.h"

namespace hsm {
namespace {

// Which formula computes a layer's mixer: the registry's entry says (MixerInfo::fast_decode),
// so this file never names a mixer; kNone for an id the registry does not know either.
FastDecodeForm form_of(const std::string& mixer_id) {
  return is_mixer_id(mixer_id) ? mixer_info(mixer_id).fast_decode : FastDecodeForm::kNone;
}

using Floats = std::vector<float>;

Floats to_floats(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return Floats(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// A weight matrix [out, in], kept as IEEE halves when every entry is one (models exported in
// F16, like the bundled demos: the same values in half the bytes, and decoding at batch 1 is
// bound by streaming the weights), else as fp32.
struct Matrix {
  Floats f32;
  std::vector<uint16_t> f16;
  int64_t out = 0, in = 0;

  // y[0..rows) = bias + W[row0..row0+rows) · x. A token streams every weight once, ~10 MB for
  // the demos, which one core's bandwidth bounds (an AVX-512 kernel was no faster than AVX2's):
  // large products split their rows over LibTorch's threads (for_row_blocks: blocks at
  // multiples of 16 rows, so each row is summed exactly as unsplit).
  void mv(const float* x, const float* bias, float* y, int64_t row0 = 0, int64_t rows = -1) const {
    if (rows < 0) rows = out;
    if (rows * in < kSplitWeights) return mv_rows(x, bias, y, row0, rows);
    for_row_blocks(rows, [&](int64_t a, int64_t b) {
      mv_rows(x, bias ? bias + a : nullptr, y + a, row0 + a, b - a);
    });
  }
  void mv_rows(const float* x, const float* bias, float* y, int64_t row0, int64_t rows) const {
    if (!f16.empty())
      fast::matvec_f16(f16.data() + row0 * in, x, bias, y, rows, in);
    else
      fast::matvec(f32.data() + row0 * in, x, bias, y, rows, in);
  }
  static constexpr int64_t kSplitWeights = 1 << 16;  // smaller products: a fork costs more than it saves
  bool empty() const { return out == 0; }
};

Matrix to_matrix(const torch::Tensor& t) {
  Matrix m;
  m.in = t.size(-1);
  m.out = t.numel() / m.in;
  m.f32 = to_floats(t);
  std::vector<uint16_t> half(m.f32.size());
  for (size_t i = 0; i < half.size(); ++i) {
    half[i] = fast::to_half(m.f32[i]);
    if (fast::from_half(half[i]) != m.f32[i]) return m;  // not exactly representable: stay fp32
  }
  m.f16 = std::move(half);
  m.f32 = Floats();
  return m;
}

// Layer l's mixer as the module its form is computed from (std::logic_error when the registry's
// form and the module disagree).
template <class M>
M& mixer_as(MixerImpl& mixer, size_t l) {
  auto* m = dynamic_cast<M*>(&mixer);
  if (!m) throw std::logic_error("FastDecoder: layer " + std::to_string(l) + "'s mixer is not of the module its form reads");
  return *m;
}

// The weighted form's a and b: (a,b) scalars, vectors or one per head.
std::pair<torch::Tensor, torch::Tensor> weighted_ab(MixerImpl& mixer, size_t l) {
  if (auto* m = dynamic_cast<ShiftABImpl*>(&mixer)) return {m->a, m->b};
  if (auto* m = dynamic_cast<ShiftABVectorImpl*>(&mixer)) return {m->a, m->b};
  auto& m = mixer_as<ShiftABMultiheadImpl>(mixer, l);
  return {m.a, m.b};
}

constexpr float kLayerNormEps = 1e-5f;  // torch::nn::LayerNorm's default

struct Layer {
  FastDecodeForm form = FastDecodeForm::kNone;
  int64_t ffn = 0, heads = 1, head_dim = 0;
  Floats ln1_w, ln1_b, ln2_w, ln2_b, fc1_b, fc2_b;
  Matrix fc1_w, fc2_w;
  // Mixer weights, by form (FastDecodeForm; unused ones stay empty).
  Floats a, b;        // weighted: [1], [d] or [H]
  Matrix w1, w2, w3;  // matrix: A, B, proj; gate: fc1, fc2; head gate: weight; head fusion: w1, w2 (per head: [H·hd, ·])
  Floats b1, b2, b3;  // matrix: -, bias, proj bias; gate, head fusion: biases; head gate: bias
  Matrix qkv_w, proj_w;
  Floats qkv_b, proj_b;
  // Shifts per head (one entry: all channels); the ring holds the last R mixer inputs.
  std::vector<int64_t> shifts;
  int64_t R = 0;
};

// One sequence's state of a layer: the ring of a shift layer (position p at p % R) or the KV
// cache of an attention layer ([H, context, head_dim] each).
struct LayerState {
  Floats ring;
  Floats k, v;
};

}  // namespace

// The weights, copied once per loaded model and shared (read-only) by every decoder made from
// them: a generation's own part is its state (FastDecoder::Impl).
struct FastWeights {
  int64_t d = 0, V = 0, context = 0, max_ffn = 0;
  Floats tok_emb, pos_emb, lnf_w, lnf_b;
  Matrix lm_head;  // tok_emb again, for the tied output layer
  std::vector<Layer> layers;
};

struct FastDecoder::Impl {
  std::shared_ptr<const FastWeights> weights;
  int64_t d = 0, V = 0, context = 0, pos = 0;
  std::unique_ptr<DecodeThreads> threads;  // chosen again before every token (issue 37)
  std::vector<LayerState> states;  // one per layer
  // Buffers, sized once.
  Floats h, xn, xs, y, u, hidden, qkv, att, both, logits;

  void mix_shift(const Layer& L, LayerState& S) {
    // xs = the mixer input `shift` positions back (zeros before the start), per head.
    const int64_t H = static_cast<int64_t>(L.shifts.size()), hd = d / H;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t s = L.shifts[j];
      float* dst = xs.data() + j * hd;
      if (pos >= s)
        std::copy_n(S.ring.data() + ((pos - s) % L.R) * d + j * hd, hd, dst);
      else
        std::fill_n(dst, hd, 0.0f);
    }
    std::copy_n(xn.data(), d, S.ring.data() + (pos % L.R) * d);
    const float* x = xn.data();
    const float* z = xs.data();
    switch (L.form) {
      case FastDecodeForm::kShiftWeighted:  // a, b: one value, one per channel or one per head
        if (L.a.size() == 1)
          for (int64_t i = 0; i < d; ++i) y[i] = L.a[0] * x[i] + L.b[0] * z[i];
        else if (static_cast<int64_t>(L.a.size()) == d)
          for (int64_t i = 0; i < d; ++i) y[i] = L.a[i] * x[i] + L.b[i] * z[i];
        else  // one per head: head j's channels are j·hd .. (j + 1)·hd − 1
          for (int64_t i = 0; i < d; ++i) y[i] = L.a[i / hd] * x[i] + L.b[i / hd] * z[i];
        break;
      case FastDecodeForm::kShiftMatrix:  // proj(A x + B xs + bias)
        L.w1.mv(x, L.b2.data(), u.data());
        L.w2.mv(z, nullptr, y.data());
        for (int64_t i = 0; i < d; ++i) u[i] += y[i];
        L.w3.mv(u.data(), L.b3.data(), y.data());
        break;
      case FastDecodeForm::kShiftGate:  // g = tanh(fc2(relu(fc1(x)))); y = g x + (1 - g) xs
        L.w1.mv(x, L.b1.data(), u.data());
        for (int64_t i = 0; i < d; ++i) u[i] = std::max(u[i], 0.0f);
        L.w2.mv(u.data(), L.b2.data(), y.data());
        for (int64_t i = 0; i < d; ++i) {
          const float g = std::tanh(y[i]);
          y[i] = g * x[i] + (1 - g) * z[i];
        }
        break;
      case FastDecodeForm::kShiftHeadGate:    // per head: g = tanh(W_h [x_h; xs_h] + b_h); y_h = g x_h + (1 - g) xs_h
      case FastDecodeForm::kShiftHeadFusion:  // per head: y_h = W2_h relu(W1_h [x_h; xs_h] + b1_h) + b2_h
      {
        const int64_t H2 = L.heads, hd2 = d / H2;
        for (int64_t j = 0; j < H2; ++j) {
          std::copy_n(x + j * hd2, hd2, both.data());
          std::copy_n(z + j * hd2, hd2, both.data() + hd2);
          float* out = y.data() + j * hd2;
          L.w1.mv(both.data(), L.b1.data() + j * hd2, out, j * hd2, hd2);
          if (L.form == FastDecodeForm::kShiftHeadGate) {
            for (int64_t i = 0; i < hd2; ++i) {
              const float g = std::tanh(out[i]);
              out[i] = g * both[i] + (1 - g) * both[hd2 + i];
            }
          } else {
            for (int64_t i = 0; i < hd2; ++i) u[i] = std::max(out[i], 0.0f);
            L.w2.mv(u.data(), L.b2.data() + j * hd2, out, j * hd2, hd2);
          }
        }
        break;
      }
      case FastDecodeForm::kAttention:
      case FastDecodeForm::kNone:
        break;
    }
  }

  void mix_attention(const Layer& L, LayerState& S) {
    const int64_t H = L.heads, hd = L.head_dim;
    L.qkv_w.mv(xn.data(), L.qkv_b.data(), qkv.data());
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (int64_t j = 0; j < H; ++j) {
      float* kc = S.k.data() + j * context * hd;
      float* vc = S.v.data() + j * context * hd;
      std::copy_n(qkv.data() + d + j * hd, hd, kc + pos * hd);
      std::copy_n(qkv.data() + 2 * d + j * hd, hd, vc + pos * hd);
      const float* q = qkv.data() + j * hd;
      for (int64_t t = 0; t <= pos; ++t) att[t] = fast::dot(q, kc + t * hd, hd) * scale;
      fast::softmax(att.data(), pos + 1);
      float* out = u.data() + j * hd;
      std::fill_n(out, hd, 0.0f);
      for (int64_t t = 0; t <= pos; ++t) fast::axpy(att[t], vc + t * hd, out, hd);
    }
    L.proj_w.mv(u.data(), L.proj_b.data(), y.data());
  }

  // The residual stream as LibTorch's float32 LayerNorm would sum it: past FLT_MAX (or NaN) its
  // mean overflows and every score is NaN, while this path's double sums stay finite and gave
  // equal scores, a uniform draw that looked like generation (issue 46: embeddings of 3e38).
  void check_stream(size_t layer) const {
    double sum = 0;
    for (int64_t i = 0; i < d; ++i) sum += std::fabs(static_cast<double>(h[i]));
    if (!(sum < static_cast<double>(std::numeric_limits<float>::max())))
      throw std::runtime_error("the model's next-token scores are not finite: its residual stream overflows float32 "
                               "before layer " + std::to_string(layer) + " at position " + std::to_string(pos) +
                               " (its weights overflow in computation); generate from an earlier checkpoint or "
                               "without the edit");
  }

  const float* step(int32_t token) {
    if (pos >= context) throw std::logic_error("decode state is full (" + std::to_string(context) + " positions)");
    if (token < 0 || token >= V)
      throw std::out_of_range("token id " + std::to_string(token) + " is not in the vocabulary");
    const FastWeights& w = *weights;
    for (int64_t i = 0; i < d; ++i) h[i] = w.tok_emb[token * d + i] + w.pos_emb[pos * d + i];
    for (size_t l = 0; l < w.layers.size(); ++l) {
      const Layer& L = w.layers[l];
      check_stream(l);
      fast::layer_norm(h.data(), L.ln1_w.data(), L.ln1_b.data(), xn.data(), d, kLayerNormEps);
      if (L.form == FastDecodeForm::kAttention)
        mix_attention(L, states[l]);
      else
        mix_shift(L, states[l]);
      for (int64_t i = 0; i < d; ++i) h[i] += y[i];
      check_stream(l);
      fast::layer_norm(h.data(), L.ln2_w.data(), L.ln2_b.data(), xn.data(), d, kLayerNormEps);
      L.fc1_w.mv(xn.data(), L.fc1_b.data(), hidden.data());
      fast::gelu(hidden.data(), L.ffn);
      L.fc2_w.mv(hidden.data(), L.fc2_b.data(), y.data());
      for (int64_t i = 0; i < d; ++i) h[i] += y[i];
    }
    check_stream(w.layers.size());
    fast::layer_norm(h.data(), w.lnf_w.data(), w.lnf_b.data(), xn.data(), d, kLayerNormEps);
    w.lm_head.mv(xn.data(), nullptr, logits.data());  // tied output layer
    ++pos;
    return logits.data();
  }
};

bool FastDecoder::supports(const ModelConfig& config) { return unsupported_reason(config).empty(); }

std::string FastDecoder::unsupported_reason(const ModelConfig& config) {
  for (size_t l = 0; l < config.layers.size(); ++l)
    if (form_of(config.layers[l].mixer) == FastDecodeForm::kNone)
      return "layer " + std::to_string(l) + "'s mixer '" + config.layers[l].mixer + "' has no fast decoding path";
  if (config.layers.empty()) return "the model has no layers";
  return "";
}

std::shared_ptr<const FastWeights> FastDecoder::copy_weights(const GptImpl& model) {
  const ModelConfig& c = model.config;
  if (const std::string why = unsupported_reason(c); !why.empty()) throw std::invalid_argument("FastDecoder: " + why);
  auto weights = std::make_shared<FastWeights>();
  FastWeights& m = *weights;
  m.d = c.d_model;
  m.V = c.vocab_size;
  m.context = c.context;
  m.tok_emb = to_floats(model.tok_emb->weight);
  m.lm_head = to_matrix(model.tok_emb->weight);
  m.pos_emb = to_floats(model.pos_emb->weight);
  m.lnf_w = to_floats(model.ln_f->weight);
  m.lnf_b = to_floats(model.ln_f->bias);
  int64_t max_ffn = 0;
  for (size_t l = 0; l < model.blocks.size(); ++l) {
    const auto& block = model.blocks[l];
    const LayerSpec& spec = c.layers[l];
    MixerImpl& mixer = *block->mixer;
    Layer L;
    L.form = form_of(spec.mixer);
    L.ffn = spec.ffn;
    L.heads = spec.heads;
    L.head_dim = c.d_model / spec.heads;
    max_ffn = std::max(max_ffn, L.ffn);
    // Every weight read off the block's own modules (never by a parameter's name).
    L.ln1_w = to_floats(block->ln1->weight);
    L.ln1_b = to_floats(block->ln1->bias);
    L.ln2_w = to_floats(block->ln2->weight);
    L.ln2_b = to_floats(block->ln2->bias);
    L.fc1_w = to_matrix(block->ffn->fc1->weight);
    L.fc1_b = to_floats(block->ffn->fc1->bias);
    L.fc2_w = to_matrix(block->ffn->fc2->weight);
    L.fc2_b = to_floats(block->ffn->fc2->bias);
    switch (L.form) {
      case FastDecodeForm::kAttention: {
        auto& m = mixer_as<AttentionImpl>(mixer, l);
        L.qkv_w = to_matrix(m.qkv->weight);
        L.qkv_b = to_floats(m.qkv->bias);
        L.proj_w = to_matrix(m.proj->weight);
        L.proj_b = to_floats(m.proj->bias);
        break;
      }
      case FastDecodeForm::kShiftWeighted: {
        const auto [a, b] = weighted_ab(mixer, l);
        L.a = to_floats(a);
        L.b = to_floats(b);
        break;
      }
      case FastDecodeForm::kShiftMatrix: {
        auto& m = mixer_as<ShiftABMatrixImpl>(mixer, l);
        L.w1 = to_matrix(m.A->weight);
        L.w2 = to_matrix(m.B->weight);
        L.b2 = to_floats(m.bias);
        L.w3 = to_matrix(m.proj->weight);
        L.b3 = to_floats(m.proj->bias);
        break;
      }
      case FastDecodeForm::kShiftGate: {
        auto& m = mixer_as<ShiftGate1Impl>(mixer, l);
        L.w1 = to_matrix(m.fc1->weight);
        L.b1 = to_floats(m.fc1->bias);
        L.w2 = to_matrix(m.fc2->weight);
        L.b2 = to_floats(m.fc2->bias);
        break;
      }
      case FastDecodeForm::kShiftHeadGate: {
        auto& m = mixer_as<ShiftGate2Impl>(mixer, l);
        L.w1 = to_matrix(m.weight);
        L.b1 = to_floats(m.bias);
        break;
      }
      case FastDecodeForm::kShiftHeadFusion: {
        auto& m = mixer_as<ShiftFusionImpl>(mixer, l);
        L.w1 = to_matrix(m.w1);
        L.b1 = to_floats(m.b1);
        L.w2 = to_matrix(m.w2);
        L.b2 = to_floats(m.b2);
        break;
      }
      case FastDecodeForm::kNone:  // refused by unsupported_reason above
        break;
    }
    if (L.form != FastDecodeForm::kAttention) {
      L.shifts = layer_shifts(mixer_info(spec.mixer).kind, static_cast<int64_t>(l), spec.heads);
      if (L.shifts.empty())
        throw std::logic_error("FastDecoder: mixer '" + spec.mixer + "' has a shift form but no shifts in its registry entry");
      // As ShiftMixerImpl: a shift >= context never reads anything.
      L.R = std::min(*std::max_element(L.shifts.begin(), L.shifts.end()), c.context);
    }
    m.layers.push_back(std::move(L));
  }
  m.max_ffn = max_ffn;
  return weights;
}

FastDecoder::FastDecoder(const GptImpl& model) : FastDecoder(copy_weights(model)) {}

FastDecoder::FastDecoder(std::shared_ptr<const FastWeights> weights) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  const FastWeights& w = *weights;
  m.weights = std::move(weights);
  m.d = w.d;
  m.V = w.V;
  m.context = w.context;
  for (const Layer& L : w.layers) {
    LayerState S;
    if (L.form == FastDecodeForm::kAttention) {
      S.k.assign(static_cast<size_t>(w.context * w.d), 0.0f);
      S.v = S.k;
    } else {
      S.ring.assign(static_cast<size_t>(L.R * w.d), 0.0f);
    }
    m.states.push_back(std::move(S));
  }
  long long weights_per_token = w.lm_head.out * w.lm_head.in;
  for (const Layer& L : w.layers)
    for (const Matrix* x : {&L.fc1_w, &L.fc2_w, &L.w1, &L.w2, &L.w3, &L.qkv_w, &L.proj_w})
      weights_per_token += x->out * x->in;
  m.threads = std::make_unique<DecodeThreads>(weights_per_token);
  const auto d = static_cast<size_t>(m.d);
  m.h.resize(d);
  m.xn.resize(d);
  m.xs.resize(d);
  m.y.resize(d);
  m.u.resize(d);
  m.both.resize(2 * d);
  m.qkv.resize(3 * d);
  m.hidden.resize(static_cast<size_t>(w.max_ffn));
  m.att.resize(static_cast<size_t>(m.context));
  m.logits.resize(static_cast<size_t>(m.V));
}

FastDecoder::~FastDecoder() = default;

void FastDecoder::reset() {
  impl_->pos = 0;
  // Rings and KV caches need no clearing: a position is always written before it is read.
}

const float* FastDecoder::step(int32_t token) {
  // One thread unless the token's products are large and the machine has a core free for
  // each thread: every split product is a region whose end waits for its slowest thread.
  const int pool = at::get_num_threads();
  const int threads = impl_->threads->choose(pool);
  if (threads <= 1) {
    const SerialScope serial;
    return impl_->step(token);
  }
  if (threads < pool) {
    const ThreadLimit limit(threads);
    return impl_->step(token);
  }
  return impl_->step(token);
}

int FastDecoder::threads() const { return impl_->threads->last(); }

void FastDecoder::load_state(const DecodeState& state) {
  auto& m = *impl_;
  if (state.pos > m.context) throw std::invalid_argument("load_state: position past the context");
  const std::vector<Layer>& layers = m.weights->layers;
  if (state.pos > 0 && state.layers.size() != layers.size())
    throw std::invalid_argument("load_state: the decode state has another number of layers");
  for (size_t l = 0; l < layers.size() && state.pos > 0; ++l) {
    const Layer& L = layers[l];
    LayerState& S = m.states[l];
    const auto check_batch1 = [&](const torch::Tensor& t, int64_t numel) {
      if (!t.defined() || t.size(0) != 1 || t.numel() != numel)
        throw std::invalid_argument("load_state: layer " + std::to_string(l) + "'s cache is not a batch-1 cache");
    };
    if (L.form == FastDecodeForm::kAttention) {
      const auto& cache = state_of<AttentionState>(*state.layers[l]);
      check_batch1(cache.k, static_cast<int64_t>(S.k.size()));
      check_batch1(cache.v, static_cast<int64_t>(S.v.size()));
      S.k = to_floats(cache.k);
      S.v = to_floats(cache.v);
    } else {
      const auto& cache = state_of<ShiftState>(*state.layers[l]);
      check_batch1(cache.ring, static_cast<int64_t>(S.ring.size()));
      S.ring = to_floats(cache.ring);
    }
  }
  m.pos = state.pos;
}

std::string FastDecoder::weight_storage() const {
  size_t halves = 0, all = 0;
  auto count = [&](const Matrix& m) {
    if (m.empty()) return;
    ++all;
    halves += m.f16.empty() ? 0 : 1;
  };
  count(impl_->weights->lm_head);
  for (const Layer& L : impl_->weights->layers)
    for (const Matrix* m : {&L.fc1_w, &L.fc2_w, &L.w1, &L.w2, &L.w3, &L.qkv_w, &L.proj_w}) count(*m);
  return halves == all ? "fp16" : halves == 0 ? "fp32" : "mixed";
}

int64_t FastDecoder::pos() const { return impl_->pos; }
int64_t FastDecoder::vocab_size() const { return impl_->V; }
int64_t FastDecoder::context() const { return impl_->context; }

}  // namespace hsm
