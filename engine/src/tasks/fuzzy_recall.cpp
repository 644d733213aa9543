// MAD's fuzzy in-context recall (Poli et al. 2024 §3.1; mad-lab mad/data/instances.py:
// generate_fuzzy_in_context_recall_instance; configs/tasks/fuzzy-in-context-recall.yml: vocab
// 16, seq_len 128, key and value motifs up to 3 tokens, multi_query): keys and values are runs of
// 1 to k (1 to v) distinct tokens, so the model must find where a key ends; after a key seen
// before, every token of its value is an answer. Training windows mix key sizes; test windows
// use keys of the largest size only, as MAD's do. The window is left-padded with the pad token.
// One change: a final probe whose key never came before is no answer (MAD scores it).
#include <map>

#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

using Motif = std::vector<int32_t>;

class FuzzyRecall : public Task {
 public:
  FuzzyRecall() {
    add_setting("vocab", 16, 6, 65536, "tokens: keys, values and a pad token (MAD: 16 to 128)");
    add_setting("context", 128, 16, 65536, "window length (MAD: 128 to 1024)");
    add_setting("key_size", 3, 1, 8, "longest key, in tokens (MAD: 3)");
    add_setting("value_size", 3, 1, 8, "longest value, in tokens (MAD: 3)");
    add_train_and_seed(12'800);
  }
  std::string name() const override { return "fuzzy_recall"; }
  std::string description() const override {
    return "in-context recall with keys and values of 1 to 3 tokens each (MAD)";
  }
  int64_t answer_tokens() const override {  // value tokens: [keys, vocab - 1)
    const int64_t ns = get("vocab") - 1;
    return ns - ns / 2;
  }
  std::string source() const override {
    return "Poli et al. 2024, MAD (mad-lab mad/data/instances.py, fuzzy-in-context-recall.yml)";
  }
  std::string token_label(int32_t id) const override {
    const auto ns = static_cast<int32_t>(get("vocab") - 1);
    return id == ns ? "pad" : key_value_label(*this, id, ns / 2, ns);
  }
  void check() const override {
    const int64_t ns = get("vocab") - 1, k = get("key_size"), v = get("value_size"), T = get("context");
    if (ns / 2 < k || ns - ns / 2 < v)
      refuse(*this, "vocab=" + std::to_string(get("vocab")) + " is too small for keys of " + std::to_string(k) +
                        " and values of " + std::to_string(v) + " distinct tokens; " +
                        use_at_least(*this, "vocab", 2 * std::max(k, v) + 1, "use shorter keys and values"));
    if (T < 4 * (k + v))
      refuse(*this, "context=" + std::to_string(T) + " is too short for keys of " + std::to_string(k) +
                        " and values of " + std::to_string(v) + " tokens; " +
                        use_at_least(*this, "context", 4 * (k + v), "use shorter keys and values"));
  }

 protected:
  void generate(TaskRng& rng, bool training, TaskExample& ex) const override {
    const int64_t V = get("vocab"), T = get("context"), K = get("key_size"), W = get("value_size");
    const int64_t ns = V - 1, keys = ns / 2;
    const auto pad = static_cast<int32_t>(V - 1);
    // A motif of `size` distinct tokens (MAD draws one of the vocabulary's permutations).
    auto key = [&](int64_t size) { return distinct(rng, 0, static_cast<int32_t>(keys), size); };
    auto value = [&](int64_t size) {
      return distinct(rng, static_cast<int32_t>(keys), static_cast<int32_t>(ns - keys), size);
    };
    auto key_size = [&] { return training ? 1 + rng.below(K) : K; };
    const int64_t kp = key_size(), vp = 1 + rng.below(W);
    const Motif k_probe = key(kp), v_probe = value(vp);
    const int64_t probe_at = rng.below(T - 2 * (kp + vp));
    bool probe_added = false;
    std::map<Motif, Motif> kv;
    std::vector<int32_t> s;
    std::vector<uint8_t> answer;
    auto put = [&](const Motif& m, bool is_answer) {
      s.insert(s.end(), m.begin(), m.end());
      answer.insert(answer.end(), m.size(), is_answer ? 1 : 0);
    };
    while (static_cast<int64_t>(s.size()) < T - (kp + vp) - (K + W)) {
      const int64_t ks = key_size(), vs = 1 + rng.below(W);
      if (static_cast<int64_t>(s.size()) >= probe_at && !probe_added) {
        put(k_probe, false);
        put(v_probe, false);
        kv[k_probe] = v_probe;
        probe_added = true;
        continue;
      }
      const Motif k = key(ks);
      Motif v;
      if (k == k_probe) {
        v = v_probe;
        probe_added = true;
      } else if (auto it = kv.find(k); it != kv.end()) {
        v = it->second;
      } else {
        v = value(vs);
      }
      const bool seen = kv.count(k) > 0;
      put(k, false);
      put(v, seen);
      kv[k] = v;
    }
    // MAD asks for the probe's value even when the pairs ended before its place (probe_at
    // late in the window): then nothing in the window tells it, so it is no answer here.
    put(k_probe, false);
    put(v_probe, probe_added);
    // Left-pad to T + 1 tokens, then inputs S[0..T), targets S[1..T] (MAD's shift).
    const size_t L = static_cast<size_t>(T + 1), n = s.size(), lead = L - n;
    for (int64_t t = 0; t < T; ++t) {
      const auto i = static_cast<size_t>(t);
      ex.tokens[i] = i < lead ? pad : s[i - lead];
      ex.targets[i] = i + 1 < lead ? pad : s[i + 1 - lead];
      ex.mask[i] = i + 1 < lead ? 0 : answer[i + 1 - lead];
    }
  }
};

}  // namespace

std::unique_ptr<Task> make_fuzzy_recall() { return std::make_unique<FuzzyRecall>(); }

}  // namespace hsm::tasks
