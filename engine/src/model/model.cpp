#include "model/model.h"

#include <stdexcept>

#include "model/dropout.h"

namespace hsm {

FeedForwardImpl::FeedForwardImpl(int64_t d, int64_t hidden, double proj_std) {
  fc1 = register_module("fc1", torch::nn::Linear(d, hidden));
  fc2 = register_module("fc2", torch::nn::Linear(hidden, d));
  init_linear(fc1);
  init_linear(fc2, proj_std);
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  return fc2->forward(torch::gelu(fc1->forward(x)));
}

BlockImpl::BlockImpl(const ModelConfig& c, int64_t layer) {
  const LayerSpec& spec = c.layers.at(layer);
  const auto norm = torch::nn::LayerNormOptions({c.d_model});
  ln1 = register_module("ln1", torch::nn::LayerNorm(norm));
  mixer = register_module("mixer", make_mixer(spec, layer, c.d_model, c.dropout, c.context));
  ln2 = register_module("ln2", torch::nn::LayerNorm(norm));
  // GPT-2: residual projections scaled by 1/sqrt(2·N) so the residual stream's variance
  // does not grow with depth.
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers.size()));
  ffn = register_module("ffn", FeedForward(c.d_model, spec.ffn, proj_std));
  dropout = c.dropout;
}

torch::Tensor BlockImpl::forward(const torch::Tensor& h_in) {
  auto h = h_in + fast_dropout(mixer->forward(ln1->forward(h_in)), dropout, is_training());
  return h + fast_dropout(ffn->forward(ln2->forward(h)), dropout, is_training());
}

torch::Tensor BlockImpl::step(const torch::Tensor& h_t, MixerCache& cache, int64_t pos, int64_t context) {
  auto h = h_t + mixer->step(ln1->forward(h_t), cache, pos, context);
  return h + ffn->forward(ln2->forward(h));
}

torch::Tensor BlockImpl::prefill(const torch::Tensor& h_in, MixerCache& cache, int64_t context) {
  auto h = h_in + mixer->prefill(ln1->forward(h_in), cache, context);
  return h + ffn->forward(ln2->forward(h));
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
  if (c.init == "ex") apply_ex_init(*this);
}

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
  auto h = fast_dropout(h0, config.dropout, is_training());
  for (auto& block : blocks) h = block->forward(h);
  h = ln_f->forward(h);
  return torch::matmul(h, tok_emb->weight.t());  // tied output: [B, T, V]
}

torch::Tensor GptImpl::hidden(const torch::Tensor& idx) {
  auto h = fast_dropout(embed(idx), config.dropout, is_training());
  for (auto& block : blocks) h = block->forward(h);
  return ln_f->forward(h);
}

torch::Tensor GptImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  return lm_head_loss(hidden(idx), tok_emb->weight, targets);
}

torch::Tensor GptImpl::step(const torch::Tensor& idx_t, DecodeState& state) {
  if (state.pos >= config.context)
    throw std::logic_error("decode state is full (" + std::to_string(config.context) + " positions)");
  if (state.layers.empty()) state.layers.resize(blocks.size());
  auto pos = torch::full({1}, state.pos, torch::TensorOptions().dtype(torch::kLong).device(idx_t.device()));
  auto h = tok_emb->forward(idx_t) + pos_emb->forward(pos);  // [B, d]
  for (size_t l = 0; l < blocks.size(); ++l) h = blocks[l]->step(h, state.layers[l], state.pos, config.context);
  ++state.pos;
  return torch::matmul(ln_f->forward(h), tok_emb->weight.t());  // [B, V]
}

torch::Tensor GptImpl::prefill(const torch::Tensor& idx, DecodeState& state) {
  if (state.pos != 0) throw std::logic_error("prefill() needs a fresh decode state");
  state.layers.assign(blocks.size(), MixerCache());
  auto h = embed(idx);  // [B, T, d]; throws past the context
  for (size_t l = 0; l < blocks.size(); ++l) h = blocks[l]->prefill(h, state.layers[l], config.context);
  state.pos = idx.size(1);
  return torch::matmul(ln_f->forward(h.select(1, -1)), tok_emb->weight.t());  // [B, V]
}

torch::Tensor GptImpl::forward(const torch::Tensor& idx) { return forward_embedded(embed(idx)); }

}  // namespace hsm
