// Permutation composition (Merrill, Petty & Sabharwal 2024: the word problems of S5 and A5,
// after Liu et al. 2023): a word of permutations g1..gn of {1..n}, and at every position t the
// composition so far, P_t = g_t ∘ P_{t-1} (P_0 the identity): P_t(x) = g_t(g_{t-1}(...g_1(x))).
// S5 and A5 are not solvable groups, so their word problem is NC1-complete: the paper's proof
// that neither transformers nor state-space models of fixed depth track it; the test split's
// words are four times as long.
//
// Token ids: the group's elements in lexicographic order of their one-line notation (the
// identity 12345 is 0; in S5, 12354 is 1 and 54321 is 119; A_n keeps the even ones in the same
// order); the next id pads.
#include <algorithm>
#include <numeric>

#include "tasks/state_tracking.h"

namespace hsm::tasks {
namespace {

class Permutation : public StateTrackingTask {
 public:
  Permutation() {
    add_setting("vocab", 128, 4, 65536, "tokens: the group's elements (S5: 120, A5: 60), then padding");
    add_setting("context", 64, 2, 65536, "window length: at least test_length");
    add_setting("n", 5, 2, 6, "permutations of {1..n}: S_n has n! elements");
    add_setting("alternating", 0, 0, 1, "1: the even permutations only (A_n; A5 has 60 elements)");
    add_lengths(16, 64);
  }
  std::string name() const override { return "permutation"; }
  std::string description() const override {
    return "permutations g1..gn of {1..5}; at each position their composition so far (S5 / A5 word problem); "
           "tested at 4x the training length";
  }
  int64_t answer_tokens() const override { return static_cast<int64_t>(group().size()); }  // S_n or A_n
  std::string source() const override {
    return "Merrill, Petty & Sabharwal 2024, The Illusion of State in State-Space Models (S5 and A5 word problems)";
  }
  std::string token_label(int32_t id) const override {
    const auto& g = group();
    if (id >= 0 && static_cast<size_t>(id) < g.size()) {
      std::string s;
      for (int v : g[static_cast<size_t>(id)]) s += static_cast<char>('1' + v);
      return s;
    }
    if (id == static_cast<int32_t>(g.size()) && id < vocab_size()) return "pad";
    return Task::token_label(id);
  }
  void check() const override {
    check_lengths();
    const auto need = static_cast<int64_t>(group().size()) + 1;
    if (get("vocab") < need)
      refuse(*this, "vocab=" + std::to_string(get("vocab")) + " cannot hold the group's " +
                        std::to_string(need - 1) + " elements and padding; " +
                        use_at_least(*this, "vocab", need, "use a smaller n"));
  }

 protected:
  void generate_word(TaskRng& rng, int64_t n, TaskExample& ex) const override {
    const auto& g = group();
    const auto elements = static_cast<int64_t>(g.size());
    std::vector<int> state(g.front().size());
    std::iota(state.begin(), state.end(), 0);  // P_0: the identity
    for (size_t t = 0; t < ex.tokens.size(); ++t) {
      if (static_cast<int64_t>(t) >= n) {
        ex.tokens[t] = static_cast<int32_t>(elements);  // padding
        continue;
      }
      const auto id = static_cast<int32_t>(rng.below(elements));
      const auto& step = g[static_cast<size_t>(id)];
      for (int& v : state) v = step[static_cast<size_t>(v)];  // P_t(x) = g_t(P_{t-1}(x))
      ex.tokens[t] = id;
      ex.targets[t] = id_of(state);
      ex.mask[t] = 1;
    }
  }

 private:
  using Elements = std::vector<std::vector<int>>;
  // The elements of S_n (even_only: A_n) in lexicographic order, 0-based one-line notation.
  static Elements elements_of(int n, bool even_only) {
    Elements out;
    std::vector<int> p(static_cast<size_t>(n));
    std::iota(p.begin(), p.end(), 0);
    do {
      int inversions = 0;
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) inversions += p[static_cast<size_t>(i)] > p[static_cast<size_t>(j)];
      if (!even_only || inversions % 2 == 0) out.push_back(p);
    } while (std::next_permutation(p.begin(), p.end()));
    return out;
  }
  // This task's group: every (n, alternating) built once, before any thread can ask (a
  // function-local static), so example() stays callable from any thread.
  const Elements& group() const {
    static const std::vector<Elements> all = [] {
      std::vector<Elements> v;
      for (int n = 0; n <= 6; ++n)
        for (bool even_only : {false, true}) v.push_back(n >= 2 ? elements_of(n, even_only) : Elements{});
      return v;
    }();
    return all[static_cast<size_t>(get("n") * 2 + get("alternating"))];
  }
  int32_t id_of(const std::vector<int>& p) const {
    const auto& g = group();
    return static_cast<int32_t>(std::lower_bound(g.begin(), g.end(), p) - g.begin());
  }
};

}  // namespace

std::unique_ptr<Task> make_permutation() { return std::make_unique<Permutation>(); }

}  // namespace hsm::tasks
