// MAD's noisy in-context recall (Poli et al. 2024 §3.1; mad-lab mad/data/instances.py:
// generate_noisy_in_context_recall_instance; configs/tasks/noisy-in-context-recall.yml: vocab 32
// of which 16 noise tokens, seq_len 128, frac_noise 0.2): in-context recall where each pair is,
// with probability `noise` percent, replaced by two tokens of a separate noise vocabulary.
#include "tasks/task_util.h"

namespace hsm::tasks {
namespace {

class NoisyRecall : public Task {
 public:
  NoisyRecall() {
    add_setting("vocab", 32, 5, 65536, "tokens, the noise tokens included (MAD: 32 to 144)");
    add_setting("context", 128, 4, 65536, "window length (MAD: 128 to 1024)");
    add_setting("noise_vocab", 16, 1, 65534, "noise tokens, the top of the vocabulary (MAD: 16)");
    add_setting("noise", 20, 0, 99, "percent of the pairs replaced by noise (MAD: 20 to 80)");
    add_train_and_seed(12'800);
  }
  std::string name() const override { return "noisy_recall"; }
  std::string description() const override {
    return "in-context recall with noise tokens between the pairs (MAD)";
  }
  int64_t answer_tokens() const override {  // the upper half of the tokens that are not noise
    const int64_t ns = get("vocab") - get("noise_vocab");
    return ns - ns / 2;
  }
  std::string source() const override {
    return "Poli et al. 2024, MAD (mad-lab mad/data/instances.py, noisy-in-context-recall.yml)";
  }
  std::string token_label(int32_t id) const override {
    const auto ns = static_cast<int32_t>(get("vocab") - get("noise_vocab"));
    if (id >= ns && id < vocab_size()) return "n" + std::to_string(id - ns);  // a noise token
    return key_value_label(*this, id, ns / 2, ns);
  }
  void check() const override {
    const int64_t V = get("vocab"), N = get("noise_vocab");
    if (V - N < 2)
      refuse(*this, "noise_vocab=" + std::to_string(N) + " leaves " + std::to_string(V - N) +
                        " tokens for keys and values; use noise_vocab 1 to " + std::to_string(V - 2) + " at vocab " +
                        std::to_string(V));
  }

 protected:
  void generate(TaskRng& rng, bool, TaskExample& ex) const override {
    in_context_recall(rng, get("vocab"), get("context"), get("noise_vocab"), static_cast<double>(get("noise")) / 100,
                      ex);
  }
};

}  // namespace

std::unique_ptr<Task> make_noisy_recall() { return std::make_unique<NoisyRecall>(); }

}  // namespace hsm::tasks
