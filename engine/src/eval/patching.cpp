#include "eval/patching.h"

#include <cmath>
#include <limits>

namespace hsm {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A QK stream of batch 1 for a run of batch B.
torch::Tensor qk_for(const torch::Tensor& qk, int64_t batch) {
  return qk.defined() && qk.size(0) == 1 && batch > 1 ? qk.expand({batch, qk.size(1), qk.size(2)}) : qk;
}

// The block's sites, as BlockImpl::forward computes them in eval mode.
torch::Tensor mixer_output(BlockImpl& b, const torch::Tensor& h, const torch::Tensor& qk) {
  if (b.mixer_knocked_out) return torch::zeros_like(h);
  const auto x = b.ln1->forward(h);
  const auto q = qk_for(qk, h.size(0));
  return (b.qk_mixer && q.defined()) ? b.qk_mixer->forward_qk(x, b.ln1->forward(q)) : b.mixer->forward(x);
}
torch::Tensor ffn_output(BlockImpl& b, const torch::Tensor& mid) { return b.ffn->forward(b.ln2->forward(mid)); }

// Blocks [from, L) on the residual h [B, T, d].
torch::Tensor run_from(GptImpl& m, size_t from, torch::Tensor h, const std::vector<torch::Tensor>& qk) {
  for (size_t l = from; l < m.blocks.size(); ++l) {
    if (m.skipped(l)) continue;
    const auto mid = h + mixer_output(*m.blocks[l], h, qk[l]);
    h = mid + ffn_output(*m.blocks[l], mid);
  }
  return h;
}

// log p(answer) at position `at` of each row: [B].
torch::Tensor answer_logprobs(GptImpl& m, const torch::Tensor& h, int64_t at, int64_t answer) {
  const auto z = m.ln_f->forward(h.select(1, at));               // [B, d]
  const auto logits = torch::matmul(z, m.tok_emb->weight.t());   // [B, V], the tied output
  return torch::log_softmax(logits.to(torch::kFloat), -1).select(1, answer);
}

std::vector<double> to_doubles(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

SiteActivations record_sites(GptImpl& model, const torch::Tensor& idx, int64_t at, int64_t answer) {
  torch::NoGradGuard no_grad;
  SiteActivations a;
  const auto e = model.embed(idx);
  const auto qk = model.qk_streams(e, idx.size(1));
  auto h = e;
  for (size_t l = 0; l < model.blocks.size(); ++l) {
    a.residual.push_back(h);
    if (model.skipped(l)) {
      a.mixer.emplace_back();
      a.ffn.emplace_back();
      continue;
    }
    a.mixer.push_back(mixer_output(*model.blocks[l], h, qk[l]));
    const auto mid = h + a.mixer.back();
    a.ffn.push_back(ffn_output(*model.blocks[l], mid));
    h = mid + a.ffn.back();
  }
  if (answer < 0) {  // the run's own most likely token at `at`
    const auto logits = torch::matmul(model.ln_f->forward(h.select(1, at)), model.tok_emb->weight.t());
    answer = logits[0].argmax().item<int64_t>();
  }
  a.answer = answer;
  a.answer_logprob = answer_logprobs(model, h, at, answer).item<double>();
  return a;
}

std::vector<std::vector<double>> patched_logprobs(GptImpl& model, const torch::Tensor& corrupt_idx,
                                                  const SiteActivations& clean, const SiteActivations& corrupt,
                                                  int64_t at, int64_t answer,
                                                  const std::function<void(double)>& progress,
                                                  const CancelFlag* cancel) {
  torch::NoGradGuard no_grad;
  const int64_t L = static_cast<int64_t>(model.blocks.size()), T = corrupt_idx.size(1), B = at + 1;
  const auto qk = model.qk_streams(model.embed(corrupt_idx), T);
  // Row p of the batch patches position p: index (p, p) of a [B, T, d] copy of the corrupted run.
  const auto rows = torch::arange(B, torch::TensorOptions().dtype(torch::kLong).device(corrupt_idx.device()));
  auto patched = [&](const torch::Tensor& corrupt_act, const torch::Tensor& clean_act) {
    auto x = corrupt_act.expand({B, T, corrupt_act.size(2)}).clone();
    x.index_put_({rows, rows}, clean_act[0].narrow(0, 0, B));
    return x;
  };
  std::vector<std::vector<double>> out(kPatchSites, std::vector<double>(static_cast<size_t>(L * T), kNaN));
  for (int64_t l = 0; l < L; ++l) {
    const auto ul = static_cast<size_t>(l);
    for (int s = 0; s < kPatchSites; ++s) {
      if (cancel && cancel->load()) throw Cancelled();
      const auto site = static_cast<PatchSite>(s);
      if (site != PatchSite::kResidual && model.skipped(ul)) continue;
      torch::Tensor h;
      if (site == PatchSite::kResidual) {
        h = run_from(model, ul, patched(corrupt.residual[ul], clean.residual[ul]), qk);
      } else {
        BlockImpl& b = *model.blocks[ul];
        if (site == PatchSite::kMixer) {
          const auto mid = corrupt.residual[ul] + patched(corrupt.mixer[ul], clean.mixer[ul]);
          h = mid + ffn_output(b, mid);
        } else {
          h = corrupt.residual[ul] + corrupt.mixer[ul] + patched(corrupt.ffn[ul], clean.ffn[ul]);
        }
        h = run_from(model, ul + 1, h, qk);
      }
      const auto lp = to_doubles(answer_logprobs(model, h, at, answer));
      auto& row = out[static_cast<size_t>(s)];
      for (int64_t p = 0; p < T; ++p)  // after `at` nothing reaches the answer: the corrupted run's value
        row[static_cast<size_t>(l * T + p)] = p <= at ? lp[static_cast<size_t>(p)] : corrupt.answer_logprob;
      if (progress) progress(static_cast<double>(l * kPatchSites + s + 1) / static_cast<double>(L * kPatchSites));
    }
  }
  return out;
}

std::vector<std::vector<double>> attribution_estimates(GptImpl& model, const torch::Tensor& corrupt_idx,
                                                       const SiteActivations& clean, int64_t at, int64_t answer) {
  torch::AutoGradMode grad_on(true);
  const int64_t L = static_cast<int64_t>(model.blocks.size()), T = corrupt_idx.size(1);
  const auto e = model.embed(corrupt_idx).detach().requires_grad_();
  const auto qk = model.qk_streams(e.detach(), T);
  // The corrupted run with every site kept, as a graph from e.
  std::vector<torch::Tensor> acts[kPatchSites];
  auto h = e;
  for (int64_t l = 0; l < L; ++l) {
    BlockImpl& b = *model.blocks[static_cast<size_t>(l)];
    acts[0].push_back(h);
    if (model.skipped(static_cast<size_t>(l))) {
      acts[1].emplace_back();
      acts[2].emplace_back();
      continue;
    }
    auto y = mixer_output(b, h, qk[static_cast<size_t>(l)]);
    if (!y.requires_grad()) y = torch::Tensor();  // a knocked-out mixer: nothing flows through it
    const auto mid = y.defined() ? h + y : h;
    const auto f = ffn_output(b, mid);
    acts[1].push_back(y);
    acts[2].push_back(f);
    h = mid + f;
  }
  const auto lp = answer_logprobs(model, h, at, answer).sum();
  std::vector<torch::Tensor> inputs;
  for (const auto& site : acts)
    for (const auto& t : site)
      if (t.defined()) inputs.push_back(t);
  const auto grads = torch::autograd::grad({lp}, inputs, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                           /*create_graph=*/false, /*allow_unused=*/true);
  const std::vector<torch::Tensor>* clean_acts[kPatchSites] = {&clean.residual, &clean.mixer, &clean.ffn};
  std::vector<std::vector<double>> out(kPatchSites, std::vector<double>(static_cast<size_t>(L * T), kNaN));
  size_t g = 0;
  torch::NoGradGuard no_grad;
  for (int s = 0; s < kPatchSites; ++s)
    for (int64_t l = 0; l < L; ++l) {
      const auto& corrupt_act = acts[s][static_cast<size_t>(l)];
      auto& row = out[static_cast<size_t>(s)];
      if (!corrupt_act.defined()) {
        // A knocked-out mixer's output is 0 in both runs: no effect. A skipped layer has no site.
        if (s == 1 && !model.skipped(static_cast<size_t>(l)))
          for (int64_t p = 0; p < T; ++p) row[static_cast<size_t>(l * T + p)] = 0;
        continue;
      }
      const auto& grad = grads[g++];
      const auto diff = (*clean_acts[s])[static_cast<size_t>(l)] - corrupt_act.detach();
      const auto est = grad.defined() ? to_doubles((diff * grad).sum(-1)[0]) : std::vector<double>(T, 0.0);
      for (int64_t p = 0; p < T; ++p) row[static_cast<size_t>(l * T + p)] = est[static_cast<size_t>(p)];
    }
  return out;
}

}  // namespace hsm
