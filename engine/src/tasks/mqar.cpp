// Multi-query associative recall, as Zoology generates it (Arora et al. 2023, "Zoology:
// Measuring and Improving Recall in Efficient Language Models"; HazyResearch/zoology,
// zoology/data/multiquery_ar.py): `pairs` key-value pairs from disjoint key and value
// vocabularies at the start, then each key once more at an even offset of the rest of the
// window, the offsets drawn without replacement from a power law (power_a 0.01: close queries
// are more likely); at a query the answer is its key's value. Every other position holds a
// random token (random_non_queries).
#include <cmath>

#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

class Mqar : public Task {
 public:
  Mqar() {
    add_setting("vocab", 256, 4, 65536, "tokens; keys from [1, vocab/2), values from [vocab/2, vocab) (Zoology: 8192)");
    add_setting("pairs", 8, 1, 4096, "key-value pairs per window, each queried once (Zoology: 4 to 64)");
    add_setting("context", 64, 4, 65536, "window length, even (Zoology: 64 to 512)");
    add_train_and_seed(100'000);
  }
  std::string name() const override { return "mqar"; }
  std::string description() const override {
    return "multi-query associative recall: key-value pairs, then the keys again; answer each with its value";
  }
  int64_t answer_tokens() const override { return get("vocab") - get("vocab") / 2; }  // [vocab/2, vocab)
  bool answers_carry_distance() const override { return true; }
  std::string source() const override {
    return "Arora et al. 2023, Zoology (zoology/data/multiquery_ar.py)";
  }
  std::string token_label(int32_t id) const override {
    return key_value_label(*this, id, static_cast<int32_t>(get("vocab") / 2), static_cast<int32_t>(get("vocab")));
  }
  void check() const override {
    const int64_t V = get("vocab"), P = get("pairs"), T = get("context");
    if (T % 2 != 0) refuse(*this, "context=" + std::to_string(T) + " must be even; use an even context 4 to 65536");
    if (4 * P > T)
      refuse(*this, "pairs=" + std::to_string(P) + " needs context >= 4 x pairs (" + std::to_string(4 * P) +
                        "); use pairs 1 to " + std::to_string(T / 4) + " at context " + std::to_string(T));
    if (V <= T)
      refuse(*this, "vocab=" + std::to_string(V) + " must exceed the context (" + std::to_string(T) +
                        ", as Zoology asks); " +
                        use_at_least(*this, "vocab", T + 1, "use a context below it"));
    if (V / 2 - 1 < P)
      refuse(*this, "vocab=" + std::to_string(V) + " holds " + std::to_string(V / 2 - 1) + " keys, fewer than pairs=" +
                        std::to_string(P) + "; " + use_at_least(*this, "vocab", 2 * P + 2, "use fewer pairs"));
  }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    const int64_t V = get("vocab"), P = get("pairs"), T = get("context");
    const auto half = static_cast<int32_t>(V / 2);
    const auto keys = distinct(rng, 1, half - 1, P);
    const auto values = distinct(rng, half, static_cast<int32_t>(V) - half, P);
    for (int64_t i = 0; i < P; ++i) {
      ex.tokens[static_cast<size_t>(2 * i)] = keys[static_cast<size_t>(i)];
      ex.tokens[static_cast<size_t>(2 * i + 1)] = values[static_cast<size_t>(i)];
    }
    // Query slots: gap g puts key i at position 2P + 2g; p(g) ∝ a·(g+1)^(a−1), drawn without
    // replacement (numpy's choice renormalises over what is left, as this does).
    const int64_t space = (T - 2 * P) / 2;
    constexpr double kPowerA = 0.01;
    std::vector<double> p(static_cast<size_t>(space));
    for (int64_t g = 0; g < space; ++g) p[static_cast<size_t>(g)] = kPowerA * std::pow(g + 1.0, kPowerA - 1);
    std::vector<uint8_t> filled(static_cast<size_t>(T), 0);
    ex.distance.assign(static_cast<size_t>(T), 0);  // each answer's key-query distance
    for (int64_t i = 0; i < 2 * P; ++i) filled[static_cast<size_t>(i)] = 1;
    for (int64_t i = 0; i < P; ++i) {
      double total = 0;
      for (double w : p) total += w;
      double u = rng.uniform() * total;
      int64_t g = 0;
      while (g + 1 < space && (u -= p[static_cast<size_t>(g)]) >= 0) ++g;
      while (p[static_cast<size_t>(g)] == 0) --g;  // rounding at the end: the last one still open
      p[static_cast<size_t>(g)] = 0;
      const auto at = static_cast<size_t>(2 * P + 2 * g);
      ex.tokens[at] = keys[static_cast<size_t>(i)];
      ex.targets[at] = values[static_cast<size_t>(i)];
      ex.mask[at] = 1;
      ex.distance[at] = static_cast<int32_t>(at - static_cast<size_t>(2 * i));  // key i sits at 2i
      filled[at] = 1;
    }
    for (size_t t = 0; t < filled.size(); ++t)
      if (!filled[t]) ex.tokens[t] = static_cast<int32_t>(rng.below(V));
  }
};

}  // namespace

std::unique_ptr<Task> make_mqar() { return std::make_unique<Mqar>(); }

}  // namespace hsm::tasks
