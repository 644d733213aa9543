// MAD's compression (Poli et al. 2024 §3.1; mad-lab mad/data/instances.py:
// generate_compression_instance; configs/tasks/compression.yml: vocab 16, seq_len 32): random
// tokens, then the compression token, after which the whole sequence is to be reconstructed.
// MAD trains an encoder with a separate MLP decoder reading only the compression token's
// embedding; a decoder-only LM has no such bottleneck, so here the reconstruction is asked in
// the same window: after the compression token, at each blank the next token of the sequence
// (the first one at the compression token itself). docs/lab.md says what this changes.
#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

class Compress : public Task {
 public:
  Compress() {
    add_setting("vocab", 16, 3, 65536, "tokens, the blank and the compression token included (MAD: 16 to 128)");
    add_setting("context", 64, 4, 65536, "window length: (context - 1) / 2 tokens to compress (MAD: 32 to 256)");
    add_train_and_seed(12'800);
  }
  std::string name() const override { return "compress"; }
  std::string description() const override {
    return "random tokens, the compression token, then reproduce them all (MAD, decoder-only form)";
  }
  int64_t answer_tokens() const override { return get("vocab") - 2; }  // the random tokens
  std::string source() const override {
    return "Poli et al. 2024, MAD (mad-lab mad/data/instances.py, compression.yml), adapted";
  }
  std::string token_label(int32_t id) const override { return blank_and_marker_label(*this, id, "zip"); }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    const int64_t V = get("vocab"), T = get("context"), n = (T - 1) / 2;
    const auto blank = static_cast<int32_t>(V - 2), marker = static_cast<int32_t>(V - 1);
    for (int64_t i = 0; i < n; ++i) ex.tokens[static_cast<size_t>(i)] = static_cast<int32_t>(rng.below(V - 2));
    for (int64_t t = n; t < T; ++t) ex.tokens[static_cast<size_t>(t)] = t == n ? marker : blank;
    for (int64_t i = 0; i < n; ++i) {
      const auto at = static_cast<size_t>(n + i);
      ex.targets[at] = ex.tokens[static_cast<size_t>(i)];
      ex.mask[at] = 1;
    }
  }
};

}  // namespace

std::unique_ptr<Task> make_compress() { return std::make_unique<Compress>(); }

}  // namespace hsm::tasks
