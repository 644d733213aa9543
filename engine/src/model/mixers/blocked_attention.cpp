#include "model/mixers/blocked_attention.h"

#include <algorithm>
#include <limits>

#include "model/dropout.h"
#include "kernels/parallel_gemm.h"

namespace hsm {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The tiles of a causal [T, T] score matrix that hold at least one allowed (key <= query) entry,
// row block by row block, in the order forward and backward both visit them (the dropout
// masks depend on it).
struct Tile {
  int64_t q0, nq, k0, nk;
  bool diagonal;  // some key in the tile comes after some query: needs the causal mask
};

std::vector<Tile> causal_tiles(int64_t T, BlockSizes b) {
  std::vector<Tile> tiles;
  for (int64_t q0 = 0; q0 < T; q0 += b.query) {
    const int64_t nq = std::min(b.query, T - q0), q_last = q0 + nq - 1;
    for (int64_t k0 = 0; k0 <= q_last; k0 += b.key) {
      const int64_t nk = std::min(b.key, q_last + 1 - k0);
      tiles.push_back({q0, nq, k0, nk, k0 + nk - 1 > q0});
    }
  }
  return tiles;
}

// True where key k0 + j comes after query q0 + i: [nq, nk].
torch::Tensor future_mask(const Tile& t, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  return torch::arange(t.k0, t.k0 + t.nk, opts).view({1, -1}) > torch::arange(t.q0, t.q0 + t.nq, opts).view({-1, 1});
}

// Scaled scores of one tile with the future masked out: [BH, nq, nk].
torch::Tensor tile_scores(const torch::Tensor& q, const torch::Tensor& k, const Tile& t, double scale) {
  auto qt = q.narrow(1, t.q0, t.nq), kt = k.narrow(1, t.k0, t.nk);
  auto s = torch::bmm(qt, kt.transpose(1, 2)).mul_(scale);
  if (t.diagonal) s.masked_fill_(future_mask(t, q.device()), -std::numeric_limits<double>::infinity());
  return s;
}

// Keep-masks scaled by 1/(1-p), one per tile: the tile's index is the hash stream, so the
// backward pass draws the same masks.
struct DropoutMasks {
  double p;
  uint64_t seed;
  int64_t first_row = 0;  // of the [BH, nq, nk] tile: a thread's slice starts at this row of BH
  torch::Tensor get(const torch::Tensor& like, size_t tile) const {
    auto m = dropout_mask(like.sizes(), p, seed, tile, first_row * like.size(1) * like.size(2));
    return like.is_cpu() && like.scalar_type() == torch::kFloat32 ? m : m.to(like.options());
  }
};

struct BlockedAttentionFn : torch::autograd::Function<BlockedAttentionFn> {
  // q, k, v: [BH, T, hd] contiguous.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double p, int64_t block_q, int64_t block_k) {
    const int64_t BH = q.size(0), T = q.size(1), hd = q.size(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    const auto seed = static_cast<int64_t>(p > 0 ? draw_dropout_seed() : 0);
    std::optional<DropoutMasks> masks;
    if (p > 0) masks = DropoutMasks{p, static_cast<uint64_t>(seed)};

    auto out = torch::empty_like(q);
    auto lse = torch::empty({BH, T, 1}, q.options());
    const auto tiles = causal_tiles(T, {block_q, block_k});
    // Rows of BH are independent: in split mode each thread takes a block of them through
    // every tile (parallel_gemm.h); the dropout masks are slices of the whole tile's mask.
    for_row_blocks(BH, [&](int64_t b0, int64_t b1) {
      forward_rows(q.narrow(0, b0, b1 - b0), k.narrow(0, b0, b1 - b0), v.narrow(0, b0, b1 - b0), tiles, scale, masks,
                   b0, out.narrow(0, b0, b1 - b0), lse.narrow(0, b0, b1 - b0));
    });
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    ctx->saved_data["block_q"] = block_q;
    ctx->saved_data["block_k"] = block_k;
    return out;
  }

  static void forward_rows(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const std::vector<Tile>& tiles, double scale, std::optional<DropoutMasks> masks,
                           int64_t first_row, torch::Tensor out, torch::Tensor lse) {
    if (masks) masks->first_row = first_row;
    torch::Tensor m, l, acc;  // running max, running sum, running output of the current row block
    for (size_t i = 0; i < tiles.size(); ++i) {
      const Tile& t = tiles[i];
      auto s = tile_scores(q, k, t, scale);  // [BH, nq, nk]
      auto vt = v.narrow(1, t.k0, t.nk);
      if (t.k0 == 0) {  // first tile of a row block
        m = std::get<0>(s.max(-1, true));
        s.sub_(m).exp_();
        l = s.sum(-1, true);
        acc = torch::bmm(masks ? s.mul_(masks->get(s, i)) : s, vt);
      } else {  // online softmax: rescale what came before
        auto m_new = torch::maximum(m, std::get<0>(s.max(-1, true)));
        auto alpha = (m - m_new).exp_();
        s.sub_(m_new).exp_();
        l.mul_(alpha).add_(s.sum(-1, true));
        acc.mul_(alpha).baddbmm_(masks ? s.mul_(masks->get(s, i)) : s, vt);
        m = m_new;
      }
      if (t.k0 + t.nk == t.q0 + t.nq) {  // last tile of the row block
        out.narrow(1, t.q0, t.nq).copy_(acc.div_(l));
        lse.narrow(1, t.q0, t.nq).copy_(m.add_(l.log_()));
      }
    }
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const double p = ctx->saved_data["p"].toDouble();
    const BlockSizes blocks{ctx->saved_data["block_q"].toInt(), ctx->saved_data["block_k"].toInt()};
    std::optional<DropoutMasks> masks;
    if (p > 0) masks = DropoutMasks{p, static_cast<uint64_t>(ctx->saved_data["seed"].toInt())};
    const int64_t T = q.size(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));

    auto dout = grads[0].contiguous();
    auto dq = torch::zeros_like(q), dk = torch::zeros_like(k), dv = torch::zeros_like(v);
    const auto tiles = causal_tiles(T, blocks);
    for_row_blocks(q.size(0), [&](int64_t b0, int64_t b1) {
      auto rows = [&](const torch::Tensor& t) { return t.narrow(0, b0, b1 - b0); };
      backward_rows(rows(q), rows(k), rows(v), rows(out), rows(lse), rows(dout), tiles, scale, masks, b0, rows(dq),
                    rows(dk), rows(dv));
    });
    return {dq, dk, dv, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }

  static void backward_rows(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& out, const torch::Tensor& lse, const torch::Tensor& dout,
                            const std::vector<Tile>& tiles, double scale, std::optional<DropoutMasks> masks,
                            int64_t first_row, torch::Tensor dq, torch::Tensor dk, torch::Tensor dv) {
    if (masks) masks->first_row = first_row;
    auto delta = (dout * out).sum(-1, true);  // [BH, T, 1]: rowsum(dO ⊙ O) = Σ_k P·dP
    for (size_t i = 0; i < tiles.size(); ++i) {
      const Tile& t = tiles[i];
      auto s = tile_scores(q, k, t, scale);
      auto prob = s.sub_(lse.narrow(1, t.q0, t.nq)).exp_();  // P, [BH, nq, nk]
      auto dout_t = dout.narrow(1, t.q0, t.nq), kt = k.narrow(1, t.k0, t.nk), vt = v.narrow(1, t.k0, t.nk);
      auto dprob = torch::bmm(dout_t, vt.transpose(1, 2));  // dP of the dropped weights
      if (masks) {
        auto keep = masks->get(prob, i);
        dv.narrow(1, t.k0, t.nk).baddbmm_((prob * keep).transpose(1, 2), dout_t);
        dprob.mul_(keep);
      } else {
        dv.narrow(1, t.k0, t.nk).baddbmm_(prob.transpose(1, 2), dout_t);
      }
      auto ds = dprob.sub_(delta.narrow(1, t.q0, t.nq)).mul_(prob).mul_(scale);  // dS, scaled
      dq.narrow(1, t.q0, t.nq).baddbmm_(ds, kt);
      dk.narrow(1, t.k0, t.nk).baddbmm_(ds.transpose(1, 2), q.narrow(1, t.q0, t.nq));
    }
  }
};

}  // namespace

torch::Tensor blocked_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                       double dropout_p, bool training, BlockSizes blocks) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), hd = q.size(3);
  auto flat = [&](const torch::Tensor& t) { return t.reshape({B * H, T, hd}).contiguous(); };
  const double p = training ? dropout_p : 0.0;
  auto y = BlockedAttentionFn::apply(flat(q), flat(k), flat(v), p, std::max<int64_t>(1, blocks.query),
                                     std::max<int64_t>(1, blocks.key));
  return y.view({B, H, T, hd});
}

}  // namespace hsm
