// In-context learning of random regular languages: RegBench (Akyürek, Wang, Kim & Andreas 2024,
// "In-Context Language Learning: Architectures and Algorithms"; the dataset of their code,
// berlino/seq_icl, src/dataloaders/dfa.py with configs/dataset/icl_dfa.yaml). Every example is a
// language of its own: a random DFA, and words sampled from it joined by a separator; the model
// must infer the language from the words in its window and predict each next symbol. The paper's
// finding: transformers beat recurrent and convolutional mixers here, through "n-gram heads"
// (attention that looks up what followed the same last n symbols earlier in the window).
//
// Per example, as the reference draws it:
//   - states n uniform in [min_states, max_states] (4..12), state 0 the start, every state accepting;
//   - an alphabet of k distinct symbols, k uniform in [min_alphabet, vocab - 2] (4..18);
//   - each state has e outgoing edges, e uniform in [1, max_edges] (1..3), on e distinct symbols
//     of the alphabet, to e distinct states other than itself;
//   - w words, w uniform in [min_words, max_words] (10..19), each of length uniform in
//     [1, max_word_length] (1..49), walked from state 0 by an outgoing symbol chosen uniformly at
//     every step; joined by the separator, cut to the window (context + 1 tokens: the last one is
//     only a target), padded after.
// The reference then minimises and trims its DFA; that changes neither the language, nor the
// words' distribution (equivalent states have the same outgoing symbols), nor the legal sets, so
// the DFA here is the one drawn (unreachable states included, as drawn_from shows).
//
// Scoring, the reference's rule (train.py, _get_dfa_accuracy): a position is scored when the
// token after it is a symbol (not the separator, not padding); the prediction there is right when
// the current word so far followed by it is accepted, i.e. when it is one of the outgoing symbols
// of the state the word has reached (state 0 right after a separator). The separator is never a
// right prediction. The loss is taken on the scored positions against the symbol that was drawn.
//
// Token ids: symbols 0..vocab-3 ("a", "b", ...), the separator vocab-2 ("|"), padding vocab-1 (".").
#include <algorithm>
#include <climits>

#include <nlohmann/json.hpp>

#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

// The state `symbol` leads to from q; throws TaskError where q has no edge on it.
int32_t next_state(const DfaEdges& edges, int32_t q, int32_t symbol) {
  const auto& out = edges.at(static_cast<size_t>(q));
  const auto e = std::lower_bound(out.begin(), out.end(), std::make_pair(symbol, INT32_MIN));
  if (e == out.end() || e->first != symbol)
    throw TaskError("regbench: symbol " + std::to_string(symbol) + " has no edge from state " + std::to_string(q));
  return e->second;
}

// A DFA as drawn.
struct Dfa {
  std::vector<int32_t> alphabet;
  DfaEdges edges;
};

class RegBench : public Task {
 public:
  RegBench() {
    add_setting("vocab", 20, 7, 65536, "tokens: the symbols, then the separator '|' and padding '.' (reference: 18 + 2)");
    add_setting("context", 256, 2, 65536, "window length; the words are cut to it (reference: up to 4096)");
    add_setting("min_states", 4, 2, 1024, "fewest states of a DFA (reference: 4)");
    add_setting("max_states", 12, 2, 1024, "most states of a DFA (reference: 12)");
    add_setting("min_alphabet", 4, 1, 65534, "fewest symbols of a DFA's alphabet; the most is vocab - 2 (reference: 4 of 18)");
    add_setting("max_edges", 3, 1, 1023, "most outgoing edges of a state, each on its own symbol to its own state (reference: 3)");
    add_setting("min_words", 10, 1, 65536, "fewest words per example (reference: 10)");
    add_setting("max_words", 19, 1, 65536, "most words per example (reference: 19)");
    add_setting("max_word_length", 49, 1, 65536, "longest word; lengths are uniform from 1 (reference: 49)");
    add_train_and_seed(5000);  // the reference's 5,000 training DFAs
  }
  std::string name() const override { return "regbench"; }
  std::string description() const override {
    return "in-context language learning: words of a random DFA joined by '|'; predict each next symbol, right when "
           "the DFA allows it";
  }
  std::string source() const override {
    return "Akyürek et al. 2024, In-Context Language Learning: Architectures and Algorithms (RegBench; "
           "berlino/seq_icl src/dataloaders/dfa.py)";
  }
  int64_t answer_tokens() const override { return get("vocab") - 2; }  // the symbols
  // A guesser that knows the symbols but not the language: uniform over them, right with
  // probability |legal| / symbols at each answer; its mean over the answers of the first 1,000
  // test examples (the lab scores test examples from index 0). Drawn as example() draws them,
  // without building the examples (the Lab view asks for it while it paints).
  double chance() const override {
    const auto sep = static_cast<int32_t>(vocab_size() - 2);
    const auto T = static_cast<size_t>(context());
    double sum = 0;
    int64_t answers = 0;
    for (int64_t i = 0; i < 1000; ++i) {
      TaskRng rng = rng_of(TaskSplit::kTest, i);
      const Drawn d = draw(rng);
      int32_t q = 0;
      for (size_t t = 0; t < T && t + 1 < d.seq.size(); ++t) {
        q = d.seq[t] == sep ? 0 : next_state(d.dfa.edges, q, d.seq[t]);
        if (d.seq[t + 1] == sep) continue;
        sum += static_cast<double>(d.dfa.edges[static_cast<size_t>(q)].size());
        ++answers;
      }
    }
    return answers == 0 ? 0.0 : sum / static_cast<double>(answers) / static_cast<double>(answer_tokens());
  }
  std::string token_label(int32_t id) const override {
    const auto V = static_cast<int32_t>(vocab_size());
    if (id < 0 || id >= V) return "#" + std::to_string(id);
    if (id == V - 2) return "|";
    if (id == V - 1) return ".";
    if (id < 26) return std::string(1, static_cast<char>('a' + id));
    return "s" + std::to_string(id);
  }
  void check() const override {
    const int64_t symbols = get("vocab") - 2;
    if (get("min_states") > get("max_states"))
      refuse(*this, "min_states=" + std::to_string(get("min_states")) + " exceeds max_states=" +
                        std::to_string(get("max_states")) + "; use min_states 2 to " + std::to_string(get("max_states")));
    if (get("min_words") > get("max_words"))
      refuse(*this, "min_words=" + std::to_string(get("min_words")) + " exceeds max_words=" +
                        std::to_string(get("max_words")) + "; use min_words 1 to " + std::to_string(get("max_words")));
    if (get("min_alphabet") > symbols)
      refuse(*this, "min_alphabet=" + std::to_string(get("min_alphabet")) + " is more than the " +
                        std::to_string(symbols) + " symbols of vocab=" + std::to_string(get("vocab")) + "; " +
                        use_at_least(*this, "vocab", get("min_alphabet") + 2, "use a smaller min_alphabet"));
    // Each of a state's edges takes its own symbol and goes to its own other state.
    const int64_t most = std::min(get("min_alphabet"), get("min_states") - 1);
    if (get("max_edges") > most)
      refuse(*this, "max_edges=" + std::to_string(get("max_edges")) + " needs that many symbols (min_alphabet " +
                        std::to_string(get("min_alphabet")) + ") and other states (min_states - 1 = " +
                        std::to_string(get("min_states") - 1) + "); use max_edges 1 to " + std::to_string(most));
  }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    const auto V = static_cast<int32_t>(vocab_size());
    const Drawn d = draw(rng);
    dfa_answers(d.dfa.edges, V - 2, V - 1, d.seq, ex);
    ex.distance.assign(ex.tokens.size(), 0);
    for (size_t t = 0; t < ex.tokens.size(); ++t)
      if (ex.mask[t]) ex.distance[t] = d.word_of[t + 1];  // the answer's word: how many words came before it
    ex.drawn_from = describe(d.dfa, V - 2, V - 1);
  }

 private:
  // An example before it is a window: its DFA, its token stream (words joined by the separator,
  // at most context + 1 tokens) and each token's word index.
  struct Drawn {
    Dfa dfa;
    std::vector<int32_t> seq, word_of;
  };
  Drawn draw(TaskRng& rng) const {
    Drawn d;
    d.dfa = draw_dfa(rng);
    const auto sep = static_cast<int32_t>(vocab_size() - 2);
    const auto T = static_cast<size_t>(context());
    const int64_t words = get("min_words") + rng.below(get("max_words") - get("min_words") + 1);
    for (int64_t w = 0; w < words && d.seq.size() < T + 1; ++w) {
      if (w > 0) {
        d.seq.push_back(sep);
        d.word_of.push_back(static_cast<int32_t>(w));
      }
      const int64_t length = 1 + rng.below(get("max_word_length"));
      int32_t q = 0;
      for (int64_t i = 0; i < length; ++i) {
        const auto& out = d.dfa.edges[static_cast<size_t>(q)];
        const auto& [symbol, next] = out[static_cast<size_t>(rng.below(static_cast<int64_t>(out.size())))];
        d.seq.push_back(symbol);
        d.word_of.push_back(static_cast<int32_t>(w));
        q = next;
      }
    }
    if (d.seq.size() > T + 1) {
      d.seq.resize(T + 1);
      d.word_of.resize(T + 1);
    }
    return d;
  }
  Dfa draw_dfa(TaskRng& rng) const {
    const int64_t n = get("min_states") + rng.below(get("max_states") - get("min_states") + 1);
    const int64_t symbols = get("vocab") - 2;
    const int64_t k = get("min_alphabet") + rng.below(symbols - get("min_alphabet") + 1);
    Dfa d;
    d.alphabet = distinct(rng, 0, static_cast<int32_t>(symbols), k);
    std::sort(d.alphabet.begin(), d.alphabet.end());
    d.edges.resize(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) {
      const int64_t e = 1 + rng.below(get("max_edges"));
      const auto which = distinct(rng, 0, static_cast<int32_t>(k), e);            // of the alphabet
      const auto to = distinct(rng, 0, static_cast<int32_t>(n - 1), e);           // of the other states
      auto& out = d.edges[static_cast<size_t>(s)];
      for (int64_t i = 0; i < e; ++i) {
        const int32_t other = to[static_cast<size_t>(i)];
        out.emplace_back(d.alphabet[static_cast<size_t>(which[static_cast<size_t>(i)])],
                         other >= s ? other + 1 : other);  // skip the state itself
      }
      std::sort(out.begin(), out.end());
    }
    return d;
  }
  static std::string describe(const Dfa& d, int32_t sep, int32_t pad) {
    nlohmann::json edges = nlohmann::json::array();
    for (const auto& out : d.edges) {
      nlohmann::json o = nlohmann::json::array();
      for (const auto& [symbol, next] : out) o.push_back({symbol, next});
      edges.push_back(o);
    }
    return nlohmann::json{{"dfa", {{"start", 0}, {"alphabet", d.alphabet}, {"edges", edges}}},
                          {"separator", sep},
                          {"pad", pad}}
        .dump();
  }
};

}  // namespace

void dfa_answers(const DfaEdges& edges, int32_t separator, int32_t pad, const std::vector<int32_t>& seq,
                 TaskExample& ex) {
  const size_t T = ex.tokens.size();
  ex.accepted.assign(T, {});
  int32_t q = 0;  // the state after tokens[0..t] within the current word
  for (size_t t = 0; t < T; ++t) {
    ex.mask[t] = 0;
    if (t >= seq.size()) {
      ex.tokens[t] = pad;
      continue;
    }
    ex.tokens[t] = seq[t];
    q = seq[t] == separator ? 0 : next_state(edges, q, seq[t]);
    if (t + 1 >= seq.size() || seq[t + 1] == separator) continue;  // the reference scores symbols only
    ex.targets[t] = seq[t + 1];
    ex.mask[t] = 1;
    for (const auto& [symbol, next] : edges[static_cast<size_t>(q)]) ex.accepted[t].push_back(symbol);
  }
}

std::unique_ptr<Task> make_regbench() { return std::make_unique<RegBench>(); }

}  // namespace hsm::tasks
