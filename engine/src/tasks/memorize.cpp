// MAD's memorization (Poli et al. 2024 §3.1; mad-lab mad/data/instances.py:
// generate_memorization_instance and generate_kv_map; configs/tasks/memorization.yml: vocab 256,
// seq_len 32, 256 training examples): one fixed key-to-value map for the whole task (from the
// data seed), windows of keys each followed by the insert token, at which the answer is the
// key's value. Nothing in the window tells the value: it must be in the weights. Test windows
// are other sequences of the same keys (the facts are the task).
#include <algorithm>

#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

class Memorize : public Task {
 public:
  Memorize() {
    add_setting("vocab", 256, 3, 65536, "tokens: keys, values and the insert token (MAD: 256 to 8192)");
    add_setting("context", 32, 2, 65536, "window length, even: context / 2 facts asked (MAD: 32)");
    add_train_and_seed(256);
  }
  std::string name() const override { return "memorize"; }
  std::string description() const override {
    return "a fixed key-value map; key then insert token: answer its value from memory (MAD)";
  }
  int64_t answer_tokens() const override {  // the values of the map's facts
    const int64_t ns = get("vocab") - 1;
    return std::min(ns / 2, ns - ns / 2);
  }
  std::string source() const override {
    return "Poli et al. 2024, MAD (mad-lab mad/data/instances.py, memorization.yml)";
  }
  std::string token_label(int32_t id) const override {
    const auto ns = static_cast<int32_t>(get("vocab") - 1);
    return id == ns ? "ins" : key_value_label(*this, id, ns / 2, ns);  // the insert token
  }
  void check() const override {
    if (get("context") % 2 != 0)
      refuse(*this, "context=" + std::to_string(get("context")) + " must be even; use an even context 2 to 65536");
  }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    const int64_t V = get("vocab"), T = get("context"), ns = V - 1, keys = ns / 2;
    // The map: both halves shuffled by the data seed alone (not the example's), then zipped.
    TaskRng map_rng(static_cast<uint64_t>(get("seed")) * 0x9e3779b97f4a7c15ULL + 12345);
    const auto key_order = distinct(map_rng, 0, static_cast<int32_t>(keys), keys);
    const auto value_order = distinct(map_rng, static_cast<int32_t>(keys), static_cast<int32_t>(ns - keys), ns - keys);
    const int64_t facts = std::min(keys, ns - keys);
    const auto insert = static_cast<int32_t>(V - 1);
    for (int64_t i = 0; i < T / 2; ++i) {
      const auto f = static_cast<size_t>(rng.below(facts));
      const auto at = static_cast<size_t>(2 * i);
      ex.tokens[at] = key_order[f];
      ex.tokens[at + 1] = insert;
      ex.targets[at + 1] = value_order[f];
      ex.mask[at + 1] = 1;
    }
  }
};

}  // namespace

std::unique_ptr<Task> make_memorize() { return std::make_unique<Memorize>(); }

}  // namespace hsm::tasks
