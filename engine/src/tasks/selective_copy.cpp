// MAD's selective copying (Poli et al. 2024 §3.1; mad-lab mad/data/instances.py:
// generate_copying_instance with selective=True; configs/tasks/selective-copying.yml: vocab 16,
// seq_len 256, 16 tokens to copy): `copy` tokens scattered among blank tokens (every blank
// inserted before a random one of them), then the copy token, then blanks; at the i-th blank
// after the copy token the answer is the i-th token to copy.
#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

class SelectiveCopy : public Task {
 public:
  SelectiveCopy() {
    add_setting("vocab", 16, 3, 65536, "tokens, the blank and the copy token included (MAD: 16 to 128)");
    add_setting("context", 256, 4, 65536, "window length (MAD: 256 to 1024)");
    add_setting("copy", 16, 1, 32767, "tokens to copy (MAD: 16 to 96)");
    add_train_and_seed(12'800);
  }
  std::string name() const override { return "selective_copy"; }
  std::string description() const override {
    return "tokens scattered among blanks; after the copy token, repeat them in order (MAD)";
  }
  int64_t answer_tokens() const override { return get("vocab") - 2; }  // the tokens to copy
  std::string source() const override {
    return "Poli et al. 2024, MAD (mad-lab mad/data/instances.py, selective-copying.yml)";
  }
  std::string token_label(int32_t id) const override { return blank_and_marker_label(*this, id, "copy"); }
  void check() const override {
    const int64_t T = get("context"), n = get("copy");
    if (T <= 2 * n + 1)
      refuse(*this, "copy=" + std::to_string(n) + " needs context > 2 x copy + 1 (" + std::to_string(2 * n + 1) +
                        "); use copy 1 to " + std::to_string((T - 2) / 2) + " at context " + std::to_string(T));
  }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    const int64_t V = get("vocab"), T = get("context"), n = get("copy");
    const auto blank = static_cast<int32_t>(V - 2), copy_token = static_cast<int32_t>(V - 1);
    const int64_t blanks = T - 2 * n - 1;
    std::vector<int32_t> to_copy(static_cast<size_t>(n));
    for (auto& t : to_copy) t = static_cast<int32_t>(rng.below(V - 2));
    // numpy.insert at indices drawn from [0, n): each blank lands before the token at its index.
    std::vector<int64_t> before(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < blanks; ++i) ++before[static_cast<size_t>(rng.below(n))];
    size_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t b = 0; b < before[static_cast<size_t>(i)]; ++b) ex.tokens[at++] = blank;
      ex.tokens[at++] = to_copy[static_cast<size_t>(i)];
    }
    ex.tokens[at++] = copy_token;
    for (int64_t i = 0; i < n; ++i, ++at) {
      ex.tokens[at] = blank;
      ex.targets[at] = to_copy[static_cast<size_t>(i)];
      ex.mask[at] = 1;
    }
  }
};

}  // namespace

std::unique_ptr<Task> make_selective_copy() { return std::make_unique<SelectiveCopy>(); }

}  // namespace hsm::tasks
