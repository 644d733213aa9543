// Training and scoring on a synthetic task (issue 38): the loss on answers only, the accuracies
// in metrics.jsonl, a learning check (attention learns MQAR; one step does not), and the
// refusals (a model that does not fit, a run resumed on another task).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hsm/task_run.h"
#include "eval/task_data.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

ModelConfig attention_model(const Task& task, int layers = 2) {
  ModelConfig c;
  c.name = "attn-" + std::to_string(layers);
  c.d_model = 64;
  c.dropout = 0.0;
  for (int l = 0; l < layers; ++l) c.layers.push_back({"attn", 256, 4});
  adopt_task_shape(c, task);
  return c;
}

RunSpec task_run(const std::string& dir, const std::string& spec_text, int64_t steps, double lr = 3e-3) {
  RunSpec spec;
  spec.run_dir = dir + "/run";
  spec.task = spec_text;
  spec.model = attention_model(*parse_task(spec_text));
  spec.train.steps = steps;
  spec.train.batch_size = 32;
  spec.train.lr = lr;
  spec.train.warmup_steps = std::min<int64_t>(steps / 10, 30);
  spec.train.cosine = true;
  spec.train.min_lr = lr / 10;
  spec.train.weight_decay = 0;
  spec.train.eval_every = 100;
  spec.train.eval_batches = 2;
  spec.train.log_every = 10;
  spec.train.checkpoint_every = 1000;
  spec.train.threads = 1;
  spec.train.device = "cpu";
  spec.train.probe_text.clear();
  return spec;
}

std::string error_of(const RunSpec& spec) {
  try {
    Trainer(spec).run();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The loss is the mean cross-entropy over the answer positions and nothing else: changing a
// target off the answers leaves it, and it equals the masked mean computed from the logits.
TEST(TaskTraining, LossIsTakenOnAnswerPositionsOnly) {
  torch::manual_seed(3);
  TaskData data(parse_task("mqar:vocab=64,pairs=4,context=32"));
  Gpt model(attention_model(data.task()));
  model->eval();
  TaskBatch b = data.batch(TaskSplit::kTrain, {0, 1, 2, 3}, torch::kCPU);
  const double loss = TaskData::loss(model, b).item<double>();
  const auto logits = model->forward(b.x).reshape({-1, 64});
  const auto y = b.y.reshape({-1});
  const auto mask = torch::zeros({y.size(0)}, torch::kBool).index_fill_(0, b.rows, true);
  const auto all = torch::nn::functional::cross_entropy(
      logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  EXPECT_NEAR(loss, all.masked_select(mask).mean().item<double>(), 1e-4);
  EXPECT_GT(std::abs(loss - all.mean().item<double>()), 1e-3) << "the loss must not be over every position";
  EXPECT_EQ(b.rows.size(0), 16);  // 4 examples x 4 pairs
  auto y2 = b.y.clone();
  y2.masked_fill_(~mask.reshape(y2.sizes()), 7);
  b.y = y2;
  EXPECT_NEAR(TaskData::loss(model, b).item<double>(), loss, 1e-6);
}

// The task loss's gradient, through the training path as it runs (float32: the fused output
// layer, the blocked attention, the row selection of the answers), against central finite
// differences, parameter tensor by parameter tensor. A plateau in the learning check could be
// a wrong gradient somewhere in that path (the attention's queries and keys, say) rather than
// too few steps: this rules it out for every weight of a 2-layer attention model on MQAR.
TEST(TaskTraining, TaskLossGradientMatchesFiniteDifferences) {
  torch::manual_seed(5);
  TaskData data(parse_task("mqar:vocab=64,pairs=4,context=32"));
  Gpt model(attention_model(data.task()));
  model->train();  // dropout 0: train mode is deterministic
  {
    // Away from the initial point (weights of 0.02) so that attention is not near uniform and
    // every path carries gradient.
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() >= 2) p.mul_(10);
  }
  const TaskBatch b = data.batch(TaskSplit::kTrain, {0, 1, 2, 3, 4, 5, 6, 7}, torch::kCPU);
  model->zero_grad();
  TaskData::loss(model, b).backward();
  int checked = 0, large = 0;
  for (const auto& named : model->named_parameters()) {
    torch::Tensor p = named.value();
    const torch::Tensor grad = p.grad().clone();
    torch::Tensor u = torch::randn_like(p);
    u.div_(u.norm());
    const double analytic = (grad * u).sum().item<double>();
    const double eps = 1e-2;
    auto loss_at = [&](double s) {
      torch::NoGradGuard no_grad;
      p.add_(u, s);
      const double l = TaskData::loss(model, b).item<double>();
      p.add_(u, -s);
      return l;
    };
    const double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, 0.03 * std::abs(numeric) + 2e-4) << named.key();
    ++checked;
    if (std::abs(numeric) > 5e-3) ++large;  // 25 times the absolute tolerance: a wrong gradient shows
  }
  EXPECT_GE(checked, 20) << "embeddings, two blocks' attention, FFN and norms, final norm";
  EXPECT_GE(large, checked * 3 / 4) << "most directions must move the loss, or the comparison proves nothing";
}

TEST(TaskTraining, ScoreDoesNotDependOnTheBatchSize) {
  torch::manual_seed(4);
  TaskData data(parse_task("recall_at:vocab=32,context=24,max_distance=20"));
  Gpt model(attention_model(data.task()));
  const TaskScore a = data.score(model, TaskSplit::kTest, 50, 7, torch::kCPU);
  const TaskScore b = data.score(model, TaskSplit::kTest, 50, 64, torch::kCPU);
  EXPECT_EQ(a.answers, 50);
  EXPECT_EQ(a.examples, 50);
  EXPECT_DOUBLE_EQ(a.answer_accuracy, b.answer_accuracy);
  EXPECT_DOUBLE_EQ(a.sequence_accuracy, a.answer_accuracy) << "one answer per example";
  EXPECT_NEAR(a.loss, b.loss, 1e-5);
  int64_t n = 0;
  for (const auto& [d, c] : a.by_difficulty) n += c.second;
  EXPECT_EQ(n, 50);
}

// RegBench's answers are sets (docs/lab.md, "regbench"): TaskData::score counts a prediction right
// when the example's DFA allows it, not only when it is the symbol that was drawn. The count is
// made here from the model's own logits and the example's sets; an untrained model predicts some
// legal symbols that were not drawn, so exact match would count fewer.
TEST(TaskTraining, RegBenchScoreCountsLegalSymbolsNotTheSampledOne) {
  torch::manual_seed(5);
  TaskData data(parse_task("regbench:context=64"));
  Gpt model(attention_model(data.task()));
  model->eval();
  const int64_t n = 40;
  const TaskScore s = data.score(model, TaskSplit::kTest, n, 16, torch::kCPU);
  int64_t in_set = 0, exact = 0, answers = 0;
  {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> all;
    for (int64_t i = 0; i < n; ++i) all.push_back(i);
    std::vector<TaskExample> examples;
    const TaskBatch b = data.batch(TaskSplit::kTest, all, torch::kCPU, &examples);
    const auto best = torch::matmul(model->hidden(b.x), model->tok_emb->weight.t()).argmax(-1);  // [B, T]
    for (int64_t i = 0; i < n; ++i) {
      const TaskExample& ex = examples[static_cast<size_t>(i)];
      for (size_t t = 0; t < ex.mask.size(); ++t) {
        if (!ex.mask[t]) continue;
        const auto p = static_cast<int32_t>(best[i][static_cast<int64_t>(t)].item<int64_t>());
        const auto& set = ex.accepted[t];
        in_set += std::find(set.begin(), set.end(), p) != set.end();
        exact += p == ex.targets[t];
        ++answers;
      }
    }
  }
  ASSERT_EQ(s.answers, answers);
  EXPECT_DOUBLE_EQ(s.answer_accuracy, static_cast<double>(in_set) / static_cast<double>(answers));
  EXPECT_GT(in_set, exact) << "some predictions are legal symbols other than the one drawn";
  int64_t right = 0, counted = 0;
  for (const auto& [word, c] : s.by_difficulty) {
    EXPECT_GE(word, 0);
    right += c.first;
    counted += c.second;
  }
  EXPECT_EQ(counted, answers) << "every answer counted by its word's index";
  EXPECT_EQ(right, in_set);
}

// The learning check, small enough for the suite (the issue's own, >= 0.9 at 8 pairs and
// context 64, is a documented command in docs/lab.md): one step leaves two attention layers at
// d 64 near chance; 400 steps of 128 take them past MQAR's plateau to exact recall. The batch
// is the point: at 32 examples a step this model sat on the plateau (the answer is one of the
// window's 4 values, about 1 in 4 right, loss ≈ ln 4) for 3,000 steps; at 128 it left it by
// step 220 (docs/lab.md, "The learning check"; 400 leaves room for another CPU's rounding).
// One head and no MLP (FFN of width 1), as Zoology's MQAR models: the cheapest that learns it.
TEST(TaskTraining, AttentionLearnsMqarAndOneStepDoesNot) {
  const std::string dir = temp_dir("mqar_learns");
  const std::string task = "mqar:vocab=64,pairs=4,context=32";
  RunSpec one = task_run(dir + "/one", task, 1);
  Trainer(one).run();
  const TaskScore chance = score_task_run(one.run_dir, 256);
  EXPECT_LT(chance.answer_accuracy, 0.1) << "values are 1 of 32: chance is about 0.03";

  RunSpec spec = task_run(dir + "/many", task, 400);
  for (LayerSpec& l : spec.model.layers) {
    l.heads = 1;
    l.ffn = 1;
  }
  spec.train.batch_size = 128;
  spec.train.warmup_steps = 100;
  spec.train.cosine = false;
  const TrainSummary s = Trainer(spec).run();
  const TaskScore learned = score_task_run(spec.run_dir, 512);
  EXPECT_GE(learned.answer_accuracy, 0.9) << "after " << s.steps << " steps in " << s.wall_s << " s";
  EXPECT_LT(learned.loss, 0.5);
  EXPECT_EQ(run_task(spec.run_dir), parse_task(task)->spec());

  // metrics.jsonl carries both accuracies at every eval point.
  int evals = 0;
  for (const auto& m : read_metrics_json(spec.run_dir))
    if (m["kind"] == "eval") {
      ++evals;
      ASSERT_TRUE(m.contains("answer_accuracy"));
      ASSERT_TRUE(m.contains("sequence_accuracy"));
      EXPECT_LE(m["sequence_accuracy"].get<double>(), m["answer_accuracy"].get<double>() + 1e-12);
    }
  EXPECT_GE(evals, 3);
}

TEST(TaskTraining, ModelsThatDoNotFitAndOtherTasksOnResumeAreRefused) {
  const std::string dir = temp_dir("task_refusals");
  RunSpec spec = task_run(dir, "mqar:vocab=64,pairs=4,context=32", 2);
  spec.model.vocab_size = 5000;  // a config's vocabulary is never changed behind its back
  const std::string vocab = error_of(spec);
  EXPECT_NE(vocab.find("vocab_size 5000 of the model does not fit task mqar, whose vocabulary is 64 tokens; set "
                       "vocab_size 64"),
            std::string::npos)
      << vocab;
  EXPECT_FALSE(std::filesystem::exists(spec.run_dir)) << "a refused start leaves no run folder";
  spec = task_run(dir, "mqar:vocab=64,pairs=4,context=32", 2);
  spec.model.context = 16;
  EXPECT_NE(error_of(spec).find("set context 32"), std::string::npos);
  spec.model.context = 64;  // longer does not fit either: the model's windows are the task's
  EXPECT_NE(error_of(spec).find("context 64 of the model does not fit task mqar's windows of 32 tokens"),
            std::string::npos);

  spec = task_run(dir, "mqar:vocab=64,pairs=4,context=32", 2);
  Trainer(spec).run();
  RunSpec again = spec;
  again.resume = true;
  again.train.steps = 4;
  again.task = "mqar:vocab=64,pairs=2,context=32";
  const std::string other = error_of(again);
  EXPECT_NE(other.find("--task mqar:vocab=64,pairs=2,context=32,train=100000,seed=1: the run trains on "
                       "mqar:vocab=64,pairs=4"),
            std::string::npos)
      << other;
  again.task = "";  // its own task
  EXPECT_EQ(Trainer(again).run().steps, 4);
  again.task = "mqar:vocab=64,pairs=4,context=32";  // the same task, spelled out
  again.train.steps = 5;
  EXPECT_EQ(Trainer(again).run().steps, 5);
}
