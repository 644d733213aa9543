#pragma once
// Shared by the training suites: generated corpora, a tiny model and run, metrics as JSON.
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "hsm/task_run.h"
#include "hsm/trainer.h"
#include "test_util.h"

namespace hsm::test {

inline std::string temp_dir(const std::string& name) { return fresh_temp_dir("hsm_training_", name); }

// Little stories from a small grammar: learnable structure, many documents longer than
// the test context.
inline std::string make_corpus(const std::string& dir, int stories = 400) {
  static const char* names[] = {"Lily", "Tom", "Ben", "Mia", "Sam"};
  static const char* things[] = {"ball", "cat", "dog", "tree", "box", "cake"};
  static const char* moods[] = {"happy", "sad", "big", "red", "little"};
  std::mt19937 rng(11);
  std::string text;
  for (int s = 0; s < stories; ++s) {
    const char* n = names[rng() % 5];
    for (int k = 0; k < 4; ++k) {
      text += std::string("Once upon a time, ") + n + " saw a " + moods[rng() % 5] + " " + things[rng() % 6] + ". " + n +
              " was very " + moods[rng() % 5] + ". ";
    }
    text += "The end.\n<|endoftext|>\n";
  }
  const std::string path = dir + "/stories.txt";
  std::ofstream(path) << text;
  return path;
}

inline ModelConfig tiny_model(const std::string& mixer = "hsm_ab", int layers = 3) {
  ModelConfig c;
  c.name = "tiny-" + mixer;
  c.vocab_size = 300;
  c.d_model = 32;
  c.context = 32;
  c.dropout = 0.0;
  for (int l = 0; l < layers; ++l) c.layers.push_back({mixer, 64, mixer == "attn" ? 4 : 1});
  return c;
}

inline RunSpec tiny_run(const std::string& dir, const std::string& data, int64_t steps) {
  RunSpec spec;
  spec.run_dir = dir + "/run";
  spec.data_path = data;
  spec.cache_dir = dir + "/cache";
  spec.model = tiny_model();
  spec.train.steps = steps;
  spec.train.batch_size = 16;
  spec.train.lr = 0.003;
  spec.train.eval_every = 10;
  spec.train.eval_batches = 4;
  spec.train.log_every = 5;
  spec.train.checkpoint_every = 10;
  spec.train.threads = 1;  // deterministic reduction order
  spec.train.device = "cpu";
  return spec;
}

// A task run (task.json, no tokenizer.model) in DIR/run: two attention layers of tiny_model
// trained `steps` steps on `task`, validated at the end. The engine's and the studio's tests of
// task runs (test_task_probe.cpp, tests/app/test_task_run_views.cpp) train it.
inline RunSpec tiny_task_run(const std::string& dir, const std::string& task, int64_t steps = 10) {
  RunSpec spec;
  spec.run_dir = dir + "/run";
  spec.task = task;
  spec.model = tiny_model("attn", 2);
  adopt_task_shape(spec.model, *parse_task(task));
  spec.train.steps = steps;
  spec.train.batch_size = 16;
  spec.train.lr = 3e-3;
  spec.train.eval_every = steps;
  spec.train.eval_batches = 1;
  spec.train.log_every = 5;
  spec.train.checkpoint_every = steps;
  spec.train.threads = 1;
  spec.train.device = "cpu";
  spec.train.probe_text.clear();
  return spec;
}

inline std::vector<nlohmann::json> read_metrics_json(const std::string& run_dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

inline std::vector<double> train_losses(const std::vector<nlohmann::json>& metrics) {
  std::vector<double> out;
  for (const auto& m : metrics)
    if (m["kind"] == "train") out.push_back(m["train_loss"]);
  return out;
}

}  // namespace hsm::test
