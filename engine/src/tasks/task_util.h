#pragma once
// What the task files share: their factories (the registry in task.cpp lists them) and the
// drawing helpers their definitions use.
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "hsm/tasks.h"

namespace hsm::tasks {

std::unique_ptr<Task> make_mqar();
std::unique_ptr<Task> make_recall_at();
std::unique_ptr<Task> make_in_context_recall();
std::unique_ptr<Task> make_fuzzy_recall();
std::unique_ptr<Task> make_noisy_recall();
std::unique_ptr<Task> make_selective_copy();
std::unique_ptr<Task> make_compress();
std::unique_ptr<Task> make_memorize();
std::unique_ptr<Task> make_parity();
std::unique_ptr<Task> make_permutation();
std::unique_ptr<Task> make_regbench();

// k distinct values of [first, first + n), in random order (numpy's choice without replacement).
std::vector<int32_t> distinct(TaskRng& rng, int32_t first, int32_t n, int64_t k);

// "task: problem; use RANGE" as one line.
[[noreturn]] void refuse(const Task& task, const std::string& problem);

// The fix a refusal names for a setting that must be at least `least`: "use vocab 33 to 65536",
// or, when no value of its range is enough (issue 46: "use vocab 65537 to 65536"), "vocab is at
// most 65536: <otherwise>".
std::string use_at_least(const Task& task, const std::string& key, int64_t least, const std::string& otherwise);

// MAD's in-context recall (mad/data/instances.py, generate_in_context_recall_instance) with
// multi_query on, as MAD's benchmark runs it: keys and values from disjoint vocabularies, pairs
// back to back; the value of every key seen before is an answer. noise_vocab tokens after the
// keys and values stand in for a pair with probability frac_noise (noisy recall).
void in_context_recall(TaskRng& rng, int64_t vocab, int64_t context, int64_t noise_vocab, double frac_noise,
                       TaskExample& ex);

// The label of a task whose keys are [0, values_from) and values [values_from, values_end):
// "k<id>", "v<id - values_from>"; other ids in the vocabulary as numbers, outside it "#<id>".
// The task labels its special tokens (blank, pad, ...) before asking this.
std::string key_value_label(const Task& task, int32_t id, int32_t values_from, int32_t values_end);

// The label of a task whose last two tokens are a blank ("_") and a marker (`marker`: the copy
// or compression token) and whose others are data tokens ("t<id>").
std::string blank_and_marker_label(const Task& task, int32_t id, const char* marker);

// A DFA's transitions (regbench): edges[q] = its (symbol, next state) pairs, ascending by symbol;
// state 0 starts, every state accepts.
using DfaEdges = std::vector<std::vector<std::pair<int32_t, int32_t>>>;
// RegBench's answers for `seq`, words of the DFA joined by `separator` (regbench.cpp): fills
// ex.tokens with seq's first tokens (padding after), and at every t whose next token is a symbol
// the mask, the target (that symbol) and accepted[t], the outgoing symbols of the state the word
// so far has reached (state 0 right after a separator). Throws TaskError for a symbol the DFA
// does not allow.
void dfa_answers(const DfaEdges& edges, int32_t separator, int32_t pad, const std::vector<int32_t>& seq,
                 TaskExample& ex);

// Sets targets where the mask is 0: the next input token, 0 past the end (tasks.h).
void fill_unmasked_targets(TaskExample& ex);

}  // namespace hsm::tasks
