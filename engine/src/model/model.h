#pragma once
// GPT-2 style decoder with a per-layer token mixer (SPEC §3, HSM §6.1):
//   h = tok_emb[x] + pos_emb[t] → dropout → N blocks → LayerNorm → logits = h · tok_embᵀ
//   block: h = h + drop(Mixer_l(LN1(h)));  h = h + drop(FFN_l(LN2(h)))
#include <torch/torch.h>

#include "hsm/config.h"
#include "model/mixers/mixer.h"

namespace hsm {

// Mean cross-entropy of the tied output layer: h [..., d], weight [V, d], targets [...] (int64).
// Fused and chunked on the CPU (lm_head.cpp); equal to cross_entropy(h · weightᵀ, targets).
torch::Tensor lm_head_loss(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets);

// FFN = Linear(d, f) → GELU → Linear(f, d).
struct FeedForwardImpl : torch::nn::Module {
  FeedForwardImpl(int64_t d_model, int64_t hidden, double proj_std);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, d] -> [B, T, d]
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(FeedForward);

struct BlockImpl : torch::nn::Module {
  BlockImpl(const ModelConfig& config, int64_t layer);
  torch::Tensor forward(const torch::Tensor& h);  // [B, T, d] -> [B, T, d]
  // One position: [B, d] -> [B, d], equal to forward(h)[:, pos] (eval mode).
  torch::Tensor step(const torch::Tensor& h_t, MixerCache& cache, int64_t pos, int64_t context);
  // Positions 0..T-1 at once, filling the cache: [B, T, d] -> [B, T, d] (eval mode).
  torch::Tensor prefill(const torch::Tensor& h, MixerCache& cache, int64_t context);
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  std::shared_ptr<MixerImpl> mixer;
  FeedForward ffn{nullptr};
  double dropout;  // residual dropout (model/dropout.h: a hashed mask, not torch::nn::Dropout)
};
TORCH_MODULE(Block);

// Incremental decoding state of a whole model: one cache per layer and the next position.
struct DecodeState {
  std::vector<MixerCache> layers;
  int64_t pos = 0;
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
  // Incremental decoding: feeds token ids [B] at position state.pos -> logits [B, vocab].
  // Costs O(1) in the context length for HSM layers, O(pos) for attention (KV cache).
  // Throws when the context is full: the caller slides its window and starts over.
  torch::Tensor step(const torch::Tensor& idx_t, DecodeState& state);
  // Starts decoding with a whole prefix idx [B, T] in one batched pass (state must be
  // fresh) -> logits of the last position [B, vocab]; then step() continues at T.
  torch::Tensor prefill(const torch::Tensor& idx, DecodeState& state);

  ModelConfig config;
  torch::nn::Embedding tok_emb{nullptr}, pos_emb{nullptr};
  torch::nn::ModuleList block_list{nullptr};
  std::vector<Block> blocks;
  torch::nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt);

// ModelConfig::init == "ex" (EX §6): every weight N(0, 0.01), every bias 0, LayerNorms left
// at gain 1 and shift 0. Applied by GptImpl's constructor after the GPT-2 init.
void apply_ex_init(torch::nn::Module& model);

}  // namespace hsm
