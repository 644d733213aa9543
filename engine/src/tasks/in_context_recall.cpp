// MAD's in-context recall (Poli et al. 2024, "Mechanistic Design and Scaling of Hybrid
// Architectures", §3.1 and athms/mad-lab, mad/data/instances.py:
// generate_in_context_recall_instance; configs/tasks/in-context-recall.yml: vocab 16, seq_len
// 128, multi_query): a stream of key-value pairs, keys and values from disjoint halves of the
// vocabulary, each key always followed by the same value within a window; the answer after a
// key seen before is its value.
#include <map>

#include "tasks/task_util.h"

namespace hsm::tasks {

void in_context_recall(TaskRng& rng, int64_t vocab, int64_t context, int64_t noise_vocab, double frac_noise,
                       TaskExample& ex) {
  // The sequence S of context + 1 tokens: inputs are S[0..T), targets S[1..T] (MAD's shift).
  // MAD's sequences are pairs; an odd length starts with one lone value, never an answer.
  const int64_t L = context + 1, ns = vocab - noise_vocab;
  const int64_t keys = ns / 2, values = ns - ns / 2;
  std::vector<int32_t> s;
  std::vector<uint8_t> answer;
  s.reserve(static_cast<size_t>(L));
  if (L % 2) {
    s.push_back(static_cast<int32_t>(keys + rng.below(values)));
    answer.push_back(0);
  }
  const int64_t pairs = L / 2;
  std::map<int32_t, int32_t> kv;
  std::vector<int32_t> presented;
  const int64_t not_noise = rng.below(pairs - 1);  // at least one pair before the probe
  for (int64_t i = 0; i + 1 < pairs; ++i) {
    if (frac_noise > 0 && i != not_noise && rng.uniform() < frac_noise) {
      for (int j = 0; j < 2; ++j) {
        s.push_back(static_cast<int32_t>(ns + rng.below(noise_vocab)));
        answer.push_back(0);
      }
      continue;
    }
    const auto k = static_cast<int32_t>(rng.below(keys));
    auto it = kv.find(k);
    const bool seen = it != kv.end();
    if (!seen) it = kv.emplace(k, static_cast<int32_t>(keys + rng.below(values))).first;
    s.push_back(k);
    answer.push_back(0);
    s.push_back(it->second);
    answer.push_back(seen ? 1 : 0);
    if (!seen) presented.push_back(k);
  }
  const int32_t probe = presented[static_cast<size_t>(rng.below(static_cast<int64_t>(presented.size())))];
  s.push_back(probe);
  answer.push_back(0);
  s.push_back(kv[probe]);
  answer.push_back(1);
  for (int64_t t = 0; t < context; ++t) {
    const auto i = static_cast<size_t>(t);
    ex.tokens[i] = s[i];
    ex.targets[i] = s[i + 1];
    ex.mask[i] = answer[i + 1];
  }
}

namespace {

class InContextRecall : public Task {
 public:
  InContextRecall() {
    add_setting("vocab", 16, 4, 65536, "tokens: keys the lower half, values the upper (MAD: 16 to 128)");
    add_setting("context", 128, 4, 65536, "window length (MAD: 128 to 1024)");
    add_train_and_seed(12'800);
  }
  std::string name() const override { return "in_context_recall"; }
  std::string description() const override {
    return "key-value pairs in a stream; after a key seen before, its value (MAD)";
  }
  int64_t answer_tokens() const override { return get("vocab") - get("vocab") / 2; }  // the upper half
  std::string source() const override {
    return "Poli et al. 2024, MAD (mad-lab mad/data/instances.py, in-context-recall.yml)";
  }
  std::string token_label(int32_t id) const override {
    return key_value_label(*this, id, static_cast<int32_t>(get("vocab") / 2), static_cast<int32_t>(get("vocab")));
  }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    in_context_recall(rng, get("vocab"), get("context"), 0, 0.0, ex);
  }
};

}  // namespace

std::unique_ptr<Task> make_in_context_recall() { return std::make_unique<InContextRecall>(); }

}  // namespace hsm::tasks
