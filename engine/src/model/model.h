#pragma once
// GPT-2 style decoder with a per-layer token mixer (HSM §6.1):
//   h = tok_emb[x] + pos_emb[t] → dropout → N blocks → LayerNorm → logits = h · tok_embᵀ
//   block: h = h + drop(Mixer_l(LN1(h)));  h = h + drop(FFN_l(LN2(h)))
#include <torch/torch.h>

#include <functional>

#include "hsm/config.h"
#include "hsm/knock_out.h"
#include "model/mixers/mixer.h"

namespace hsm {

class Observers;  // model/sites.h: the named sites of the one forward and what a call attaches there

// Mean cross-entropy of the tied output layer: h [..., d], weight [V, d], targets [...] (int64).
// Fused and chunked on the CPU (lm_head.cpp); equal to cross_entropy(h · weightᵀ, targets).
torch::Tensor lm_head_loss(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets);

// The same without gradients, as sums: Σ cross-entropy and the count of top-1 hits (ties go to
// the lowest id, as argmax) over the rows of h. Logits in chunks of rows, never [N, V] at once.
struct LossSums {
  double loss_sum = 0;
  int64_t correct = 0;
};
LossSums lm_head_loss_sums(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets);

// FFN = Linear(d, f) → GELU → Linear(f, d).
struct FeedForwardImpl : torch::nn::Module {
  FeedForwardImpl(int64_t d_model, int64_t hidden, double proj_std);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, d] -> [B, T, d]
  // h += forward(x) without gradients (eval mode, no grad mode): in place, fused on the CPU.
  // h: a tensor the caller owns, [B, T, d] or [B, d] like x.
  void add_forward_to(torch::Tensor& h, const torch::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(FeedForward);

struct BlockImpl : torch::nn::Module {
  BlockImpl(const ModelConfig& config, int64_t layer);
  // [B, T, d] -> [B, T, d]. qk: the stream a DA *_qk mixer takes its queries and keys from
  // (before LN1; GptImpl::qk_streams); undefined for every other mixer. observers: this call's,
  // at the block's sites (kMixerMap, kMixer, kFfn; model/sites.h); null: none, and no cost.
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& qk = {}, const Observers* observers = nullptr);
  // One position: [B, d] -> [B, d], equal to forward(h)[:, pos] (eval mode). qk: static_emb_qk:
  // this position's embedding [B, d]; rnd/fixed: the fixed stream [1, context, d] until the
  // cache holds its queries and keys.
  torch::Tensor step(const torch::Tensor& h_t, MixerState& state, int64_t pos, int64_t context,
                     const torch::Tensor& qk = {});
  // One position with the mixer's step given: h_t + mix(LN1(h_t)), then the FFN's output added in
  // place: [B, d] -> [B, d]. mix empty: the mixer adds nothing (knocked out). step() runs it with
  // the mixer's own step, the static-shape decoder (inference/static_decoder.cpp) with its caches'.
  torch::Tensor step_with(const torch::Tensor& h_t, const std::function<torch::Tensor(const torch::Tensor&)>& mix);
  // Positions 0..T-1 at once, filling the cache: [B, T, d] -> [B, T, d] (eval mode).
  torch::Tensor prefill(const torch::Tensor& h, MixerState& state, int64_t context, const torch::Tensor& qk = {});
  // A CUDA step that learns, through a plain stack (GptImpl::hidden): forward(h) given x = ln1(h)
  // already, returning {the block's output, next(output)}, `next` being the LayerNorm after the
  // block (the next block's ln1, or ln_f). Each residual add is joined to the LayerNorm after it
  // (ln2, then `next`) where cuda_fused::eligible_add_norm says so; the same sums either way.
  // next_for_product: only matrix products read next's output (the next block's mixer is
  // attention), which may then come out in bf16 under bf16 autocast, as ln2's does for the FFN.
  std::pair<torch::Tensor, torch::Tensor> forward_joined(const torch::Tensor& h, const torch::Tensor& x,
                                                         torch::nn::LayerNorm& next, bool next_for_product);
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  std::shared_ptr<MixerImpl> mixer;
  QkSourceMixerImpl* qk_mixer = nullptr;  // mixer, when its Q, K come from another stream
  FeedForward ffn{nullptr};
  // Knocked out (hsm/knock_out.h): the mixer's output is zero, so h passes to the FFN as it
  // came (forward, step and prefill alike; the mixer's cache is left empty).
  bool mixer_knocked_out = false;
  double dropout;  // residual dropout (model/dropout.h: a hashed mask, not torch::nn::Dropout)
  int64_t index;   // the block's place in the stack (0-based): its sites' layer
};
TORCH_MODULE(Block);

// Incremental decoding state of a whole model: each layer's mixer's own state (made by its
// make_state) and the next position.
struct DecodeState {
  std::vector<std::unique_ptr<MixerState>> layers;
  int64_t pos = 0;
  // rnd_emb_qk / fixed_seq_qk layers: their fixed QK streams over the whole context, computed
  // once per decode (they do not depend on the input).
  std::vector<torch::Tensor> qk_streams;
};

struct GptImpl : torch::nn::Module {
  explicit GptImpl(const ModelConfig& config);
  // idx: [B, T] int64 token ids, T <= context -> logits [B, T, vocab]
  torch::Tensor forward(const torch::Tensor& idx);
  // tok_emb[idx] + pos_emb[0..T): [B, T, d]
  torch::Tensor embed(const torch::Tensor& idx);
  // Everything after the embedding: dropout, blocks, final norm, tied output. [B,T,d] -> [B,T,V]
  torch::Tensor forward_embedded(const torch::Tensor& h);
  // Mean next-token cross-entropy of idx [B, T] against targets [B, T], without keeping the
  // [B, T, V] logits alive longer than needed (see lm_loss in model.cpp).
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets);
  // The blocks and the final norm: [B, T, d] -> [B, T, d] (before the tied output layer).
  torch::Tensor hidden(const torch::Tensor& idx);
  // ln_f(the blocks of a plain stack (h)) with each residual add joined to the LayerNorm after it
  // (BlockImpl::forward_joined): what hidden() runs in a CUDA step that learns through a plain
  // stack (no DA *_qk layer, none skipped or knocked out), with the same sums; any device (tests).
  torch::Tensor run_blocks_joined(torch::Tensor h);
  // Incremental decoding: feeds token ids [B] at position state.pos -> logits [B, vocab].
  // Costs O(1) in the context length for HSM layers, O(pos) for attention (KV cache).
  // Throws when the context is full: the caller slides its window and starts over.
  torch::Tensor step(const torch::Tensor& idx_t, DecodeState& state);
  // Starts decoding with a whole prefix idx [B, T] in one batched pass (state must be
  // fresh) -> logits of the last position [B, vocab]; then step() continues at T.
  torch::Tensor prefill(const torch::Tensor& idx, DecodeState& state);

  // DA's QK sources (docs/mixers.md): for every layer, the stream (before its LN1) a *_qk
  // mixer takes Q and K from; undefined for the other layers. e: the input embedding
  // tok_emb[x] + pos_emb[t] [B, T, d] (static_emb_qk); rnd_emb_qk / fixed_seq_qk: the hidden
  // state at the layer's input when ε resp. the fixed tokens run through the blocks below,
  // [1, T, d] (T = e's length; e may be undefined, then T = context and static layers get none).
  std::vector<torch::Tensor> qk_streams(const torch::Tensor& e, int64_t T);
  // fixed_seq_qk's fixed token ids (the first `context` tokens of a validation document; the
  // trainer sets them before step 0). Saved with the weights as the int64 tensor "qk_tokens".
  void set_fixed_tokens(const std::vector<int64_t>& tokens);
  std::vector<int64_t> fixed_tokens() const;
  // Layers to leave out (DA's "skip" configuration: identity on the residual stream), by
  // 0-based index; empty = none. Every forward, step and prefill honours it.
  void set_skipped_layers(const std::vector<int64_t>& layers);
  bool skipped(size_t layer) const { return layer < skip_.size() && skip_[layer]; }
  // Knock-outs (hsm/knock_out.h), replacing any earlier set; empty = none. Every forward, step
  // and prefill honours them. Checked whole before anything changes: std::invalid_argument
  // names a layer the model lacks or a head its mixer cannot zero alone.
  void set_knock_outs(const std::vector<KnockOut>& knock_outs);
  const std::vector<KnockOut>& knock_outs() const { return knock_outs_; }

  // The one forward with this call's observers at its named sites (model/sites.h): idx [B, T]
  // -> the final norm's output [B, T, d] (kFinal seen). The analyses (eval/: patching, routes,
  // mixing matrices, the logit lens) read and replace activations here, never by running a
  // block's pieces themselves.
  torch::Tensor hidden(const torch::Tensor& idx, const Observers& observers);
  // The same from block `from` on: h the residual stream entering it [B, T, d], qk the input's
  // QK streams (qk_streams(embed(idx), T); batch 1 or B) -> the final norm's output [B, T, d].
  torch::Tensor hidden_from(torch::Tensor h, size_t from, const std::vector<torch::Tensor>& qk,
                            const Observers& observers);
  // The tied output layer: z [..., d] (after the final norm) -> logits [..., V].
  torch::Tensor output(const torch::Tensor& z);
  // The final norm, then the tied output layer: the logit lens of a residual stream h [..., d].
  torch::Tensor unembed(const torch::Tensor& h);

  // Module::to(dtype) converts every buffer; qk_tokens stays int64 (token ids).
  using torch::nn::Module::to;
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;

  ModelConfig config;
  torch::nn::Embedding tok_emb{nullptr}, pos_emb{nullptr};
  // rnd_emb_qk's ε [context, d] (seeded N(0, 0.02²), fixed) and fixed_seq_qk's token ids
  // [context] (int64): buffers, saved in model.safetensors; defined only when a layer uses them.
  torch::Tensor qk_random, qk_tokens;
  torch::nn::ModuleList block_list{nullptr};
  std::vector<Block> blocks;
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  // Embedding e [B, T, d] after the input dropout h -> the last block's output [B, T, d].
  torch::Tensor run_blocks(torch::Tensor h, const torch::Tensor& e);
  // Blocks [from, L) on h with the QK streams qk, each block's sites shown to the observers.
  torch::Tensor run_layers(torch::Tensor h, size_t from, const std::vector<torch::Tensor>& qk,
                           const Observers* observers);
  std::vector<QkSource> sources_;  // per layer
  std::vector<bool> skip_;
  std::vector<KnockOut> knock_outs_;
};
TORCH_MODULE(Gpt);

// ModelConfig::init == "ex" (EX §6): every weight N(0, 0.01), every bias 0, LayerNorms left
// at gain 1 and shift 0. Applied by GptImpl's constructor after the GPT-2 init.
void apply_ex_init(torch::nn::Module& model);

}  // namespace hsm
