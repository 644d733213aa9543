#include "eval/patching.h"

#include <cmath>
#include <limits>

#include "model/sites.h"

namespace hsm {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr Site kSites[kPatchSites] = {Site::kResidual, Site::kMixer, Site::kFfn};  // PatchSite's order

// log p(answer) at position `at` of each row of z, the final norm's output [B, T, d]: [B].
torch::Tensor answer_logprobs(GptImpl& m, const torch::Tensor& z, int64_t at, int64_t answer) {
  const auto logits = m.output(z.select(1, at));  // [B, V], the tied output
  return torch::log_softmax(logits.to(torch::kFloat), -1).select(1, answer);
}

std::vector<double> to_doubles(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Observers that keep every block's residual, mixer and FFN output in `acts` ([site][layer];
// undefined for a skipped layer's mixer and FFN).
Observers recorder(std::vector<torch::Tensor> (&acts)[kPatchSites], size_t layers) {
  Observers o;
  for (int s = 0; s < kPatchSites; ++s) {
    acts[s].assign(layers, torch::Tensor());
    o.at(kSites[s], [&acts, s](const SiteEvent& e) {
      acts[s][static_cast<size_t>(e.layer)] = e.value;
      return torch::Tensor();
    });
  }
  return o;
}

}  // namespace

SiteActivations record_sites(GptImpl& model, const torch::Tensor& idx, int64_t at, int64_t answer) {
  torch::NoGradGuard no_grad;
  SiteActivations a;
  std::vector<torch::Tensor> acts[kPatchSites];
  const auto z = model.hidden(idx, recorder(acts, model.blocks.size()));
  a.residual = std::move(acts[0]);
  a.mixer = std::move(acts[1]);
  a.ffn = std::move(acts[2]);
  if (answer < 0) answer = model.output(z.select(1, at))[0].argmax().item<int64_t>();  // the run's own most likely token
  a.answer = answer;
  a.answer_logprob = answer_logprobs(model, z, at, answer).item<double>();
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
  const std::vector<torch::Tensor>* clean_acts[kPatchSites] = {&clean.residual, &clean.mixer, &clean.ffn};
  const std::vector<torch::Tensor>* corrupt_acts[kPatchSites] = {&corrupt.residual, &corrupt.mixer, &corrupt.ffn};
  std::vector<std::vector<double>> out(kPatchSites, std::vector<double>(static_cast<size_t>(L * T), kNaN));
  for (int64_t l = 0; l < L; ++l) {
    const auto ul = static_cast<size_t>(l);
    for (int s = 0; s < kPatchSites; ++s) {
      if (cancel && cancel->load()) throw Cancelled();
      if (kSites[s] != Site::kResidual && model.skipped(ul)) continue;
      // The corrupted run from block l on, its activation at (site, l) replaced by the patched one;
      // the mixer's own output where the FFN's is patched (the same values, rows of another batch).
      // Every FFN output seen: the blocks take record_sites' path (the FFN's output a tensor of its
      // own, not added in place), so the patched runs' sums are the recorded runs'.
      Observers patch;
      patch.at(Site::kFfn, [](const SiteEvent&) { return torch::Tensor(); });
      const auto value = patched((*corrupt_acts[s])[ul], (*clean_acts[s])[ul]);
      if (kSites[s] == Site::kFfn)
        patch.at(Site::kMixer, l, [&](const SiteEvent& e) { return corrupt.mixer[ul].expand_as(e.value); });
      patch.at(kSites[s], l, [&](const SiteEvent&) { return value; });
      const auto start = corrupt.residual[ul].expand({B, T, corrupt.residual[ul].size(2)});
      const auto lp = to_doubles(answer_logprobs(model, model.hidden_from(start, ul, qk, patch), at, answer));
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
  const auto z = model.hidden_from(e, 0, qk, recorder(acts, model.blocks.size()));
  for (auto& y : acts[1])
    if (y.defined() && !y.requires_grad()) y = torch::Tensor();  // a knocked-out mixer: nothing flows through it
  const auto lp = answer_logprobs(model, z, at, answer).sum();
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
