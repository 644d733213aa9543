#pragma once
// Activation and attribution patching over a Gpt (hsm/trace.h says what they measure): observers
// (model/sites.h) on the model's one forward read and replace the block's sites,
//   the residual h entering block l;  the mixer's output y (0 when knocked out);  the FFN's output f
// so a run with no site patched gives forward()'s logits, and a change to the block changes these too.
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "hsm/progress.h"
#include "model/model.h"

namespace hsm {

// One run's activations at every site: [L] tensors [1, T, d] each (undefined for a skipped
// layer's mixer and FFN), the residual at each block's input, and log p(answer) at the answer.
struct SiteActivations {
  std::vector<torch::Tensor> residual, mixer, ffn;
  int64_t answer = 0;  // the answer token (the run's most likely one when none was given)
  double answer_logprob = 0;
};

// The sites in the order of hsm::Trace's maps.
enum class PatchSite { kResidual = 0, kMixer = 1, kFfn = 2 };
constexpr int kPatchSites = 3;

// Runs idx [1, T] and records its activations; the answer is token `answer` predicted at
// position `at` (answer < 0: the run's most likely token there). No gradients.
SiteActivations record_sites(GptImpl& model, const torch::Tensor& idx, int64_t at, int64_t answer);

// Exact patching: for each site, layer and position p <= at, the corrupted run with that one
// activation replaced by the clean run's, rerun from that layer on (positions batched); returns
// log p(answer) per site as [L * T] (NaN where the site does not exist, the corrupted run's own
// value after `at`). `corrupt_idx`: the corrupted tokens (for the QK streams of DA layers).
std::vector<std::vector<double>> patched_logprobs(GptImpl& model, const torch::Tensor& corrupt_idx,
                                                  const SiteActivations& clean, const SiteActivations& corrupt,
                                                  int64_t at, int64_t answer,
                                                  const std::function<void(double)>& progress,
                                                  const CancelFlag* cancel);

// Attribution patching: per site [L * T], sum over d of (clean - corrupt) * d lp / d activation,
// from one forward and backward pass of the corrupted run (NaN where the site does not exist).
std::vector<std::vector<double>> attribution_estimates(GptImpl& model, const torch::Tensor& corrupt_idx,
                                                       const SiteActivations& clean, int64_t at, int64_t answer);

}  // namespace hsm
