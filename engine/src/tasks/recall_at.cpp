// Recall at a distance (issue 38): a key A and its value B, filler, then A again at the last
// position, whose answer is B. The distance from the first A to the second is drawn from
// [min_distance, max_distance], so accuracy can be read against it: in an HSM stack a token d
// positions back reaches the last position only through the fixed 2^l shift paths.
#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

class RecallAt : public Task {
 public:
  RecallAt() {
    add_setting("vocab", 64, 4, 65536, "tokens; keys from [0, vocab/2), values from [vocab/2, vocab)");
    add_setting("context", 64, 4, 65536, "window length; the query is its last token");
    add_setting("min_distance", 2, 2, 65535, "shortest distance from the key to its query");
    add_setting("max_distance", 63, 2, 65535, "longest distance (at most context - 1)");
    add_train_and_seed(100'000);
  }
  std::string name() const override { return "recall_at"; }
  std::string description() const override {
    return "A B, filler, A again at distance d (a range): answer B; accuracy against distance";
  }
  int64_t answer_tokens() const override { return get("vocab") - get("vocab") / 2; }  // [vocab/2, vocab)
  bool answers_carry_distance() const override { return true; }
  std::string source() const override { return "this project (issue 38): the 2^l path question of HSM"; }
  std::string token_label(int32_t id) const override {
    return key_value_label(*this, id, static_cast<int32_t>(get("vocab") / 2), static_cast<int32_t>(get("vocab")));
  }
  void check() const override {
    const int64_t T = get("context"), lo = get("min_distance"), hi = get("max_distance");
    if (hi > T - 1)
      refuse(*this, "max_distance=" + std::to_string(hi) + " does not fit context " + std::to_string(T) +
                        "; use max_distance 2 to " + std::to_string(T - 1));
    if (lo > hi)
      refuse(*this, "min_distance=" + std::to_string(lo) + " is above max_distance=" + std::to_string(hi) +
                        "; use min_distance 2 to " + std::to_string(hi));
  }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    const int64_t V = get("vocab"), T = get("context"), lo = get("min_distance"), hi = get("max_distance");
    const int64_t d = lo + rng.below(hi - lo + 1);
    const auto a = static_cast<int32_t>(rng.below(V / 2));
    const auto b = static_cast<int32_t>(V / 2 + rng.below(V - V / 2));
    for (auto& t : ex.tokens) {  // filler: any token but the key, so the query is unambiguous
      t = static_cast<int32_t>(rng.below(V - 1));
      if (t >= a) ++t;
    }
    const auto q = static_cast<size_t>(T - 1);
    ex.tokens[q - static_cast<size_t>(d)] = a;
    ex.tokens[q - static_cast<size_t>(d) + 1] = b;
    ex.tokens[q] = a;
    ex.targets[q] = b;
    ex.mask[q] = 1;
    ex.difficulty = d;
  }
};

}  // namespace

std::unique_ptr<Task> make_recall_at() { return std::make_unique<RecallAt>(); }

}  // namespace hsm::tasks
