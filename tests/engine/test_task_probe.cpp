// A task run in the studio's Diagnostics and Probe views (issue 38): a model loaded from a task
// run (no tokenizer.model) diagnosed and probed on a test example given as token ids, its
// tokens shown by the task's labels. The token-id path is the text path (a corpus run gives the
// same diagnosis either way); the prediction at each answer is the model's own next token there.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "hsm/evaluator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/safetensors.h"
#include "hsm/task_run.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

constexpr const char* kTask = "mqar:vocab=64,pairs=4,context=32";

// A task run of kTask (training_test_util.h), trained 10 steps.
std::string task_run(const std::string& dir) {
  const RunSpec spec = tiny_task_run(dir, kTask);
  Trainer(spec).run();
  return spec.run_dir;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// A weight of a run's model.safetensors as a tensor (F32 as the trainer writes them).
torch::Tensor weight(const SafetensorsFile& f, const std::string& name) {
  const TensorBlob* t = f.find(name);
  if (!t || t->dtype != "F32") throw std::runtime_error("no F32 tensor " + name);
  return torch::from_blob(const_cast<char*>(t->data.data()), t->shape, torch::kFloat32).clone();
}

// Layer 0's attention weights for `ids`, computed here from the weights file alone (GPT-2,
// pre-layer-norm: h = tok_emb[x] + pos_emb[t]; LN1; q, k from qkv; causal softmax(q kᵀ/√hd)
// per head): [heads, L, L].
torch::Tensor first_layer_attention(const std::string& run, const std::vector<int32_t>& ids, int64_t heads) {
  const SafetensorsFile f = read_safetensors(run + "/model.safetensors");
  const int64_t L = static_cast<int64_t>(ids.size());
  const auto x = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong);
  const auto h = weight(f, "tok_emb.weight").index_select(0, x) + weight(f, "pos_emb.weight").narrow(0, 0, L);
  const int64_t d = h.size(1), hd = d / heads;
  const auto n = torch::layer_norm(h, {d}, weight(f, "blocks.0.ln1.weight"), weight(f, "blocks.0.ln1.bias"), 1e-5);
  const auto qkv = torch::matmul(n, weight(f, "blocks.0.mixer.qkv.weight").t()) + weight(f, "blocks.0.mixer.qkv.bias");
  const auto q = qkv.narrow(1, 0, d).view({L, heads, hd}).transpose(0, 1);
  const auto k = qkv.narrow(1, d, d).view({L, heads, hd}).transpose(0, 1);
  auto scores = torch::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(hd));
  scores = scores.masked_fill(torch::ones({L, L}, torch::kBool).triu(1), -std::numeric_limits<float>::infinity());
  return torch::softmax(scores, -1);
}

}  // namespace

// On a corpus run, the diagnosis of a prompt's token ids is the diagnosis of the prompt, and
// both are the model's: the token ids are the tokenizer's for the text, and layer 0's attention
// weights are the ones computed here from the weights file (not by the engine's code).
TEST(TaskProbe, TokenIdDiagnosisIsTheTextDiagnosis) {
  const std::string dir = temp_dir("task_probe_text");
  RunSpec spec = tiny_run(dir, make_corpus(dir, 200), 10);
  spec.model = tiny_model("attn", 2);  // attention: the matrices depend on the tokens
  spec.train.probe_text.clear();
  Trainer(spec).run();
  const auto model = Model::load(spec.run_dir, "cpu");
  const std::string prompt = "Once upon a time, Lily saw a red ball.";
  const std::vector<int32_t> encoded = model->tokenizer().encode(prompt);
  ASSERT_GT(encoded.size(), 4u);
  const Diagnosis text = Prober(model).diagnose(prompt);
  const Diagnosis ids = Prober(model).diagnose_tokens(encoded);
  for (const Diagnosis* d : {&text, &ids}) {
    ASSERT_EQ(d->token_ids, encoded);
    ASSERT_EQ(d->tokens.size(), encoded.size());
    for (size_t i = 0; i < encoded.size(); ++i) EXPECT_EQ(d->tokens[i], model->tokenizer().piece(encoded[i]));
    ASSERT_EQ(d->layers.size(), 2u);
    const torch::Tensor expected = first_layer_attention(spec.run_dir, encoded, 4);
    ASSERT_EQ(d->layers[0].heads.size(), 4u);
    for (int64_t h = 0; h < 4; ++h) {
      const std::vector<float>& m = d->layers[0].heads[static_cast<size_t>(h)].matrix;
      ASSERT_EQ(static_cast<int64_t>(m.size()), expected.size(1) * expected.size(2));
      const auto got = torch::from_blob(const_cast<float*>(m.data()), {expected.size(1), expected.size(2)});
      EXPECT_TRUE(torch::allclose(got, expected[h], 1e-4, 1e-5))
          << "layer 0 head " << h << ": largest difference " << (got - expected[h]).abs().max().item<float>();
    }
  }
  for (size_t l = 0; l < ids.layers.size(); ++l)
    for (size_t h = 0; h < ids.layers[l].heads.size(); ++h)
      EXPECT_EQ(ids.layers[l].heads[h].matrix, text.layers[l].heads[h].matrix) << "layer " << l << " head " << h;
  EXPECT_THROW(Prober(model).task_prompt(0), std::invalid_argument);  // a corpus run has no task
  EXPECT_THROW(Evaluator(model).score_task(10), std::invalid_argument);
  EXPECT_THROW(Prober(model).diagnose_tokens({}), std::invalid_argument);
  EXPECT_THROW(Prober(model).diagnose_tokens({0, 300}), std::invalid_argument);  // outside the vocabulary
}

TEST(TaskProbe, ATaskRunIsDiagnosedAndProbedOnATestExample) {
  const std::string run = task_run(temp_dir("task_probe_task"));
  ASSERT_FALSE(std::filesystem::exists(run + "/tokenizer.model"));
  const auto model = Model::load(run, "cpu");
  ASSERT_NE(model->task(), nullptr);
  EXPECT_EQ(model->task()->spec(), parse_task(kTask)->spec());
  try {
    model->tokenizer();
    ADD_FAILURE() << "a task run has no tokenizer";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("task mqar"), std::string::npos) << e.what();
  }

  const Prober prober(model);
  const TaskPrompt p = prober.task_prompt(3);
  const TaskPrompt plain = task_prompt(*model->task(), 3);
  EXPECT_EQ(p.tokens, plain.tokens);
  ASSERT_EQ(p.answers.size(), 4u);  // every query of the 4 pairs
  ASSERT_EQ(p.predicted.size(), p.answers.size());
  for (size_t i = 0; i < p.answers.size(); ++i) {
    // The prediction at an answer is the model's next token for the prompt cut there.
    const auto t = static_cast<size_t>(p.answers[i]);
    const std::vector<int32_t> prefix(p.tokens.begin(), p.tokens.begin() + static_cast<long>(t) + 1);
    EXPECT_EQ(p.predicted[i], argmax(prober.logits(prefix))) << "answer " << i;
    EXPECT_EQ(p.predicted_labels[i], model->task()->token_label(p.predicted[i]));
  }

  const Diagnosis d = prober.diagnose_tokens(p.tokens);
  EXPECT_EQ(d.token_ids, p.tokens);
  EXPECT_EQ(d.tokens, p.labels);
  EXPECT_EQ(d.tokens[0].front(), 'k');  // mqar starts with a key
  EXPECT_EQ(d.tokens[1].front(), 'v');  // and its value

  // The lens ranks the right answer at each answer position; its last layer's top token there
  // is the prediction.
  const Probe probe = prober.probe_tokens(p.tokens, 5, p.targets);
  EXPECT_EQ(probe.tokens, p.labels);
  for (size_t i = 0; i < p.answers.size(); ++i) {
    const auto t = static_cast<size_t>(p.answers[i]);
    EXPECT_EQ(probe.lens.back().top[t][0].id, p.predicted[i]);
    EXPECT_EQ(probe.lens.back().top[t][0].piece, p.predicted_labels[i]);
    EXPECT_EQ(probe.lens.back().target_rank[t] == 1, p.predicted[i] == p.targets[t]) << "answer " << i;
  }
  EXPECT_GE(probe.lens.back().target_rank.back(), 1);  // the last position is an answer: ranked too

  // Scored on its test set: the trained model as score_task_run (hsm eval) scores it; an edit
  // (layer 0's mixer knocked out) is scored as edited.
  const TaskScore trained = Evaluator(model).score_task(100);
  const TaskScore run_score = score_task_run(run, 100);
  EXPECT_EQ(trained.answers, 400);
  EXPECT_DOUBLE_EQ(trained.loss, run_score.loss);
  EXPECT_DOUBLE_EQ(trained.answer_accuracy, run_score.answer_accuracy);
  const TaskScore edited = Evaluator(model->edited(WhatIf{{KnockOut{0, -1}}, {}})).score_task(100);
  EXPECT_NE(edited.loss, trained.loss);
  EXPECT_THROW(Evaluator(model).score_task(0), std::invalid_argument);

  // Saved as a new folder ("Save as…" of a what-if), it is still a task run.
  const std::string copy = std::filesystem::path(run).parent_path().string() + "/copy";
  model->save_as(copy);
  EXPECT_EQ(run_task(copy), run_task(run));
  EXPECT_EQ(Prober(Model::load(copy, "cpu")).task_prompt(3).predicted, p.predicted);
}
