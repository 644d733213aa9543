// Parity (Merrill, Petty & Sabharwal 2024, the word problem of Z2): a word of bits, and at every
// position the parity of the bits so far (0 even, 1 odd). Tracking it needs state that flips with
// every 1: a fixed, input-independent shift of the past (HSM's a, b) cannot carry it to unbounded
// lengths, which is the paper's prediction; the test split's words are four times as long.
#include "tasks/state_tracking.h"

namespace hsm::tasks {
namespace {

class Parity : public StateTrackingTask {
 public:
  static constexpr int32_t kPad = 2;
  Parity() {
    add_setting("vocab", 3, 3, 65536, "tokens: 0 and 1 (the bits, and the answers even / odd), 2 padding");
    add_setting("context", 64, 2, 65536, "window length: at least test_length");
    add_lengths(16, 64);
  }
  std::string name() const override { return "parity"; }
  std::string description() const override {
    return "bits b1..bn; at each position the parity of the bits so far; tested at 4x the training length";
  }
  int64_t answer_tokens() const override { return 2; }  // even, odd
  std::string source() const override {
    return "Merrill, Petty & Sabharwal 2024, The Illusion of State in State-Space Models (parity, Z2)";
  }
  std::string token_label(int32_t id) const override {
    if (id == kPad) return "pad";
    return Task::token_label(id);
  }
  void check() const override { check_lengths(); }

 protected:
  void generate_word(TaskRng& rng, int64_t n, TaskExample& ex) const override {
    int32_t parity = 0;
    for (size_t t = 0; t < ex.tokens.size(); ++t) {
      if (static_cast<int64_t>(t) >= n) {
        ex.tokens[t] = kPad;
        continue;
      }
      const auto bit = static_cast<int32_t>(rng.below(2));
      parity ^= bit;
      ex.tokens[t] = bit;
      ex.targets[t] = parity;
      ex.mask[t] = 1;
    }
  }
};

}  // namespace

std::unique_ptr<Task> make_parity() { return std::make_unique<Parity>(); }

}  // namespace hsm::tasks
