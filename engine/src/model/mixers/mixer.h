#pragma once
// One interface for every token mixer (HSM §3-§4; docs/adding-a-mixer.md): [B, T, d] -> [B, T, d], strictly causal,
// plus an incremental step for decoding one token at a time.
#include <torch/torch.h>

#include <memory>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "hsm/mixer_kind.h"

namespace hsm {

// One layer's decoding state between steps. Each mixer defines its own type next to it
// (AttentionState, ShiftState, ...) and makes it (MixerImpl::make_state), so a new mixer never
// borrows another's fields: attention keeps keys and values of every earlier position, an HSM
// layer a ring of its last max-shift inputs (a step costs O(1) in the context length).
struct MixerState {
  virtual ~MixerState() = default;
};

// The state a mixer made, as its own type; std::logic_error for another mixer's state.
template <class State>
State& state_of(MixerState& state) {
  auto* s = dynamic_cast<State*>(&state);
  if (!s) throw std::logic_error("a mixer was given another mixer's decoding state");
  return *s;
}
template <class State>
const State& state_of(const MixerState& state) {
  return state_of<State>(const_cast<MixerState&>(state));
}

struct MixerImpl : torch::nn::Module {
  explicit MixerImpl(MixerKind kind) : kind(kind) {}
  // x: [B, T, d] (already layer-normed) -> y: [B, T, d]; y[:, t] depends on x[:, :t+1] only.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // A fresh decoding state of this mixer's own type (empty: filled by step or prefill).
  virtual std::unique_ptr<MixerState> make_state() const = 0;
  // One position: x_t [B, d] at position pos (0-based, < context), given the state filled by
  // steps 0..pos-1 -> y_t [B, d], equal to forward(x)[:, pos]. Updates the state, which must
  // be one make_state() made (std::logic_error otherwise).
  virtual torch::Tensor step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) = 0;
  // A whole prefix at once: forward(x) for x = positions 0..T-1, leaving the state as T
  // calls of step() would (so a prompt costs one batched pass, not T small ones).
  virtual torch::Tensor prefill(const torch::Tensor& x, MixerState& state, int64_t context) = 0;

  // What the Diagnostics view shows (docs/diagnostics.md): the matrix of each head
  // for one prompt, x = LN1(h) [1, L, d], rows = outputs, columns = inputs, of the kind the
  // registry names (MixerInfo::matrix; not yet row-normalised), and each head's shift (−1: it
  // reads every earlier position). qk: a DA *_qk layer's LN1(QK stream) [1, L, d], else undefined.
  struct MixingMatrices {
    torch::Tensor matrices;       // [H, L, L]
    std::vector<int64_t> shifts;  // [H]
  };
  virtual MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) = 0;
  // What the Weights view plots: a and b per head, a weight per lag, the shifts (hsm/diagnostics.h).
  // Mixers without such weights leave `w` as it is.
  virtual void learned_weights(MixerWeights& w) const { (void)w; }
  // What-if edits (hsm/what_if.h): new values for the a and b that learned_weights() shows, in
  // place. One value each sets every entry; otherwise as many as learned_weights() gives.
  // false: this mixer has no a and b (nothing changed). Throws std::invalid_argument, naming
  // the sizes it takes, for a wrong count (nothing changed either).
  virtual bool set_ab(const std::vector<float>& a, const std::vector<float>& b) {
    (void)a, (void)b;
    return false;
  }

  // Knock-out of single heads (importance by ablation, Michel et al. 2019; hsm/knock_out.h):
  // how many heads this module can zero one by one, 0 when its heads are never apart (a
  // single-head mixer; it can still be knocked out whole, by the block). Each module zeroes a
  // head where its heads are still apart: attention-like mixers before the output projection,
  // the shift mixers' heads as their channel group of the output.
  virtual int64_t separable_heads() const { return 0; }
  // Whether forward(x) reads x only as the input of matrix products (attention's qkv): under bf16
  // autocast those read x in bf16, so the LayerNorm before this mixer may write it in bf16 itself
  // (model.cpp, add_then_norm) and autocast's cast is saved. False where anything else reads x
  // (the shift mixers mix x itself in fp32).
  virtual bool reads_input_through_products_only() const { return false; }
  // From now on forward, step and prefill zero these heads' outputs (empty: none). Throws
  // std::invalid_argument for a head outside 0..separable_heads()-1.
  void set_zeroed_heads(const std::vector<int64_t>& heads);
  const std::vector<int64_t>& zeroed_heads() const { return zeroed_heads_; }

  MixerKind kind;

 protected:
  // y with the zeroed heads' slices along dimension `dim` (of size separable_heads()) set to
  // zero; y itself when no head is zeroed (the usual case costs nothing).
  torch::Tensor zero_heads(const torch::Tensor& y, int64_t dim) const;

 private:
  std::vector<int64_t> zeroed_heads_;
};

// A mixer whose queries and keys come from another stream than its values (DA §3.4-3.5:
// rnd_emb_qk, fixed_seq_qk, static_emb_qk). The model supplies that stream, through the
// layer's LN1, as `qk` ([1 or B, T, d]); forward(x) without it takes Q and K from x itself
// (what such a layer does inside the pass that computes the fixed streams, model.cpp).
struct QkSourceMixerImpl : MixerImpl {
  using MixerImpl::MixerImpl;
  virtual torch::Tensor forward_qk(const torch::Tensor& x, const torch::Tensor& qk) = 0;
  // Decoding. qk: static_emb_qk: this position's LN1(embedding) [B, d]; rnd/fixed: the whole
  // fixed stream [1, context, d] on the first call (has_queries false), later undefined.
  virtual torch::Tensor step_qk(const torch::Tensor& x_t, const torch::Tensor& qk, MixerState& state, int64_t pos,
                                int64_t context) = 0;
  virtual torch::Tensor prefill_qk(const torch::Tensor& x, const torch::Tensor& qk, MixerState& state,
                                   int64_t context) = 0;
  // Whether `state` holds the fixed queries and keys already (then step_qk needs no stream).
  virtual bool has_queries(const MixerState& state) const = 0;
  // Softmax weights per head [1 or B, H, T, T] for diagnostics.
  virtual torch::Tensor attention_weights_qk(const torch::Tensor& qk) = 0;
};

// Builds the mixer of layer `layer` (0-based stack position, which sets HSM shifts).
// `context` is the model's context length l, which the extractors (EX §5) need: they hold
// weights for the last l positions (std::invalid_argument for an extractor without it).
std::shared_ptr<MixerImpl> make_mixer(const LayerSpec& spec, int64_t layer, int64_t d_model, double dropout,
                                      int64_t context = 0);

// x_shifted[t] = x[t - s] for t >= s, else 0.  x: [B, T, ...] -> same shape.
torch::Tensor shift_right(const torch::Tensor& x, int64_t s);

// GPT-2 initialisation shared by the mixers and the model: N(0, std) weights, zero bias.
void init_linear(torch::nn::Linear& linear, double std = 0.02);

}  // namespace hsm
