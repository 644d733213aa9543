#pragma once
// Memory-efficient causal softmax attention (FlashAttention's algorithm, in LibTorch ops):
// queries and keys in blocks, an online softmax across the key blocks of a query block,
// blocks above the diagonal skipped. No T×T tensor exists: the largest temporary is one
// [B·H, block_q, block_k] tile. The backward pass recomputes the tiles from q, k, v and the
// per-row log-sum-exp saved by the forward pass, so training memory is O(T), not O(T²).
// Attention dropout masks come from a hash of (seed, tile, element) (model/dropout.h), so the
// backward pass draws each tile's mask again instead of keeping it.
#include <torch/torch.h>

namespace hsm {

struct BlockSizes {
  // Measured on 2-core Xeon (bench/micro_bench AttentionCore): tiles that stay in L2 win;
  // 32..64 × 128..512 were within noise of each other, 128 × 512 and larger were slower.
  int64_t query = 64;  // rows of a tile
  int64_t key = 256;   // columns of a tile (the online softmax runs across these)
};

// q, k, v: [B, H, T, hd] (floating point, CPU or CUDA) -> [B, H, T, hd], equal within rounding
// to softmax(q·kᵀ/√hd + causal mask) · v (with dropout p on the weights when training).
torch::Tensor blocked_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                       double dropout_p, bool training, BlockSizes blocks = {});

}  // namespace hsm
