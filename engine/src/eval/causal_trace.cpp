// Causal tracing of a Gpt (eval/causal_trace.h), over eval/patching.h and eval/routes.h.
#include "eval/causal_trace.h"

#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>

#include "eval/patching.h"
#include "eval/routes.h"

namespace hsm {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The sums Pearson's r needs, over the cells finite in both maps.
struct Moments {
  double n = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  void add(const TraceMap& a, const TraceMap& b) {
    for (size_t i = 0; i < a.effect.size() && i < b.effect.size(); ++i) {
      const double x = a.effect[i], y = b.effect[i];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      n += 1, sa += x, sb += y, saa += x * x, sbb += y * y, sab += x * y;
    }
  }
  double r() const {
    if (n < 2) return NAN;
    const double cov = sab - sa * sb / n, va = saa - sa * sa / n, vb = sbb - sb * sb / n;
    return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : NAN;
  }
};

// Pearson's r over the cells both maps have (finite in both), every site together.
double correlation(const std::vector<TraceMap>& a, const std::vector<TraceMap>& b) {
  Moments m;
  for (size_t s = 0; s < a.size() && s < b.size(); ++s) m.add(a[s], b[s]);
  return m.r();
}

torch::Device device_of(GptImpl& model) {
  const auto params = model.parameters();
  return params.empty() ? torch::Device(torch::kCPU) : params.front().device();
}

torch::Tensor ids_tensor(const std::vector<int32_t>& ids, const torch::Device& device) {
  return torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong).view({1, -1}).to(device);
}

// A prompt the model can run: 1 to context tokens of its vocabulary.
void check_prompt(const ModelConfig& config, const std::vector<int32_t>& ids, const char* what) {
  const std::string w = what;
  if (ids.empty()) throw std::invalid_argument(w + ": the prompt has no tokens");
  if (static_cast<int64_t>(ids.size()) > config.context)
    throw std::invalid_argument(w + ": the prompt is " + std::to_string(ids.size()) + " tokens; the model reads at most " +
                                std::to_string(config.context) + " (its context): shorten it");
  for (int32_t id : ids)
    if (id < 0 || id >= config.vocab_size)
      throw std::invalid_argument(w + ": token id " + std::to_string(id) + " is outside the vocabulary of " +
                                  std::to_string(config.vocab_size));
}

// The answer position asked for (-1: the last of T), checked.
int64_t answer_position(int64_t asked, int64_t T, const char* what) {
  const int64_t at = asked < 0 ? T - 1 : asked;
  if (at >= T)
    throw std::invalid_argument(std::string(what) + ": answer position " + std::to_string(at) +
                                " is outside the prompt (0 to " + std::to_string(T - 1) + ")");
  return at;
}

}  // namespace

Trace trace_gpt(GptImpl& model, const TraceRequest& r, const TokenLabel& label,
                const std::function<void(double)>& progress, const CancelFlag* cancel) {
  const ModelConfig& config = model.config;
  const int64_t T = static_cast<int64_t>(r.clean.size());
  if (T == 0) throw std::invalid_argument("trace: the clean prompt has no tokens");
  if (r.corrupt.size() != r.clean.size())
    throw std::invalid_argument("trace: the corrupted prompt has " + std::to_string(r.corrupt.size()) +
                                " tokens and the clean one " + std::to_string(T) +
                                "; patching needs the same positions in both (replace a token by one of the same length)");
  check_prompt(config, r.clean, "trace");
  check_prompt(config, r.corrupt, "trace");
  const int64_t at = answer_position(r.answer_position, T, "trace");
  if (r.answer_token >= config.vocab_size)
    throw std::invalid_argument("trace: answer token " + std::to_string(r.answer_token) +
                                " is outside the vocabulary of " + std::to_string(config.vocab_size));

  Trace t;
  t.clean = r.clean;
  t.corrupt = r.corrupt;
  for (int32_t id : r.clean) t.clean_labels.push_back(label(id));
  for (int32_t id : r.corrupt) t.corrupt_labels.push_back(label(id));
  for (int64_t p = 0; p < T; ++p)
    if (r.clean[static_cast<size_t>(p)] != r.corrupt[static_cast<size_t>(p)]) t.corrupted_positions.push_back(p);
  if (t.corrupted_positions.empty())
    throw std::invalid_argument("trace: the corrupted prompt equals the clean one; replace a token in it");
  t.layers = static_cast<int64_t>(model.blocks.size());
  t.positions = T;
  t.answer_position = at;

  const torch::Device device = device_of(model);
  const auto clean_idx = ids_tensor(r.clean, device), corrupt_idx = ids_tensor(r.corrupt, device);
  const SiteActivations clean = record_sites(model, clean_idx, at, r.answer_token);
  t.answer_token = static_cast<int32_t>(clean.answer);
  t.answer_label = label(t.answer_token);
  const SiteActivations corrupt = record_sites(model, corrupt_idx, at, t.answer_token);
  t.clean_logprob = clean.answer_logprob;
  t.corrupt_logprob = corrupt.answer_logprob;
  const double span = t.clean_logprob - t.corrupt_logprob;
  t.no_effect = !(std::abs(span) > 1e-4);
  if (t.no_effect && !r.allow_no_effect)
    throw std::invalid_argument("trace: the corruption leaves log p(" + t.answer_label + ") as it was (clean " +
                                std::to_string(t.clean_logprob) + ", corrupted " + std::to_string(t.corrupt_logprob) +
                                "); nothing to trace: replace a token the answer depends on");
  auto to_maps = [&](const std::vector<std::vector<double>>& values, bool are_logprobs) {
    std::vector<TraceMap> maps;
    for (int s = 0; s < kPatchSites; ++s) {
      TraceMap map{trace_sites()[static_cast<size_t>(s)], values[static_cast<size_t>(s)]};
      for (double& v : map.effect)
        if (std::isfinite(v)) v = (are_logprobs ? v - t.corrupt_logprob : v) / span;
      maps.push_back(std::move(map));
    }
    return maps;
  };
  const double exact_share = r.exact && r.attribution ? 0.9 : 1.0;
  if (r.exact && !t.no_effect) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto lp = patched_logprobs(model, corrupt_idx, clean, corrupt, at, t.answer_token,
                                     [&](double f) {
                                       if (progress) progress(f * exact_share);
                                     },
                                     cancel);
    t.exact = to_maps(lp, true);
    t.exact_seconds = seconds_since(t0);
  }
  if (r.attribution && !t.no_effect) {
    if (cancel && cancel->load()) throw Cancelled();
    const auto t0 = std::chrono::steady_clock::now();
    t.attribution = to_maps(attribution_estimates(model, corrupt_idx, clean, at, t.answer_token), false);
    t.attribution_seconds = seconds_since(t0);
  }
  t.agreement = correlation(t.exact, t.attribution);
  if (r.routes) t.routes = routes_gpt(model, r.clean, at, label);
  if (progress) progress(1.0);
  return t;
}

Routes routes_gpt(GptImpl& model, const std::vector<int32_t>& tokens, int64_t answer_position_asked,
                  const TokenLabel& label) {
  check_prompt(model.config, tokens, "routes");
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t at = answer_position(answer_position_asked, T, "routes");
  const auto t0 = std::chrono::steady_clock::now();
  Routes r;
  r.tokens = tokens;
  for (int32_t id : tokens) r.labels.push_back(label(id));
  information_flow(model, ids_tensor(tokens, device_of(model)), at, r);
  r.seconds = seconds_since(t0);
  return r;
}

TraceRequest task_trace_request(const Task& task, int64_t index, int64_t vocab_size) {
  const TaskPrompt p = hsm::task_prompt(task, index);
  if (p.answers.empty()) throw std::invalid_argument("trace: test example " + std::to_string(index) + " has no answer");
  TraceRequest r;
  r.clean = p.tokens;
  r.answer_position = p.answers.back();
  r.answer_token = p.targets[static_cast<size_t>(r.answer_position)];
  // The token the answer depends on: the earlier occurrence of the token at the answer position
  // (the stored key) when there is one, else that token.
  const int32_t query = p.tokens[static_cast<size_t>(r.answer_position)];
  int64_t where = r.answer_position;
  for (int64_t q = 0; q < r.answer_position; ++q)
    if (p.tokens[static_cast<size_t>(q)] == query) {
      where = q;
      break;
    }
  // Its replacement: the first id after it (cyclically) that the prompt does not hold.
  const std::set<int32_t> present(p.tokens.begin(), p.tokens.end());
  const auto V = static_cast<int32_t>(vocab_size);
  int32_t other = -1;
  for (int32_t k = 1; k < V && other < 0; ++k)
    if (!present.count((query + k) % V)) other = (query + k) % V;
  if (other < 0) other = (query + 1) % V;  // every id is present: any other one
  r.corrupt = r.clean;
  r.corrupt[static_cast<size_t>(where)] = other;
  return r;
}

const std::vector<std::string>& trace_sites() {
  static const std::vector<std::string> sites = {"residual", "mixer", "ffn"};  // kPatchSites, in its order
  return sites;
}

const TraceMap* trace_map(const std::vector<TraceMap>& maps, const std::string& site) {
  for (const TraceMap& m : maps)
    if (m.site == site) return &m;
  return nullptr;
}

double trace_agreement(const TraceMap& exact, const TraceMap& estimate) {
  Moments m;
  m.add(exact, estimate);
  return m.r();
}

}  // namespace hsm
