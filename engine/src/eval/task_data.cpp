#include "eval/task_data.h"

namespace hsm {

TaskBatch TaskData::batch(TaskSplit split, const std::vector<int64_t>& indices, const torch::Device& device,
                          std::vector<TaskExample>* examples) const {
  const auto B = static_cast<int64_t>(indices.size()), T = task_->context();
  auto x = torch::empty({B, T}, torch::kLong), y = torch::empty({B, T}, torch::kLong);
  std::vector<int64_t> rows;
  auto* xp = x.data_ptr<int64_t>();
  auto* yp = y.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    TaskExample ex = task_->example(split, indices[static_cast<size_t>(b)]);
    for (int64_t t = 0; t < T; ++t) {
      const auto i = static_cast<size_t>(t);
      xp[b * T + t] = ex.tokens[i];
      yp[b * T + t] = ex.targets[i];
      if (ex.mask[i]) rows.push_back(b * T + t);
    }
    if (examples) examples->push_back(std::move(ex));
  }
  TaskBatch out;
  out.x = x.to(device);
  out.y = y.to(device);
  out.rows = torch::tensor(rows, torch::kLong).to(device);
  return out;
}

torch::Tensor TaskData::loss(Gpt& model, const TaskBatch& b) {
  const auto h = model->hidden(b.x);
  const auto flat = h.reshape({-1, h.size(-1)}).index_select(0, b.rows);
  return lm_head_loss(flat, model->tok_emb->weight, b.y.reshape({-1}).index_select(0, b.rows));
}

TaskScore TaskData::score(Gpt& model, TaskSplit split, int64_t count, int64_t batch_size, const torch::Device& device,
                          const CancelFlag* cancel) const {
  const bool was_training = model->is_training();
  if (was_training) model->eval();  // a model in eval mode is left untouched: other threads may read it
  torch::NoGradGuard no_grad;
  TaskScore s;
  double loss_sum = 0;
  int64_t right = 0, whole = 0;
  const int64_t T = task_->context();
  for (int64_t first = 0; first < count; first += batch_size) {
    if (cancel && *cancel) {
      if (was_training) model->train();
      throw Cancelled();
    }
    std::vector<int64_t> indices;
    for (int64_t i = first; i < std::min(count, first + batch_size); ++i) indices.push_back(i);
    std::vector<TaskExample> examples;
    const TaskBatch b = batch(split, indices, device, &examples);
    const auto h = model->hidden(b.x);
    const auto flat = h.reshape({-1, h.size(-1)}).index_select(0, b.rows);
    const auto logits = torch::matmul(flat, model->tok_emb->weight.t()).to(torch::kFloat);
    const auto targets = b.y.reshape({-1}).index_select(0, b.rows);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    const auto predicted = logits.argmax(-1).to(torch::kCPU).contiguous();
    const auto rows = b.rows.to(torch::kCPU).contiguous();
    const auto* pp = predicted.data_ptr<int64_t>();
    const auto* rp = rows.data_ptr<int64_t>();
    // The answers come in example order (rows ascend): count each example's misses. Right is the
    // example's own rule (TaskExample::right_answer): the target, or one of a set (regbench).
    std::vector<int64_t> missed(indices.size(), 0);
    for (int64_t a = 0; a < rows.numel(); ++a) {
      const auto e = static_cast<size_t>(rp[a] / T);
      const auto t = static_cast<size_t>(rp[a] % T);
      const bool hit = examples[e].right_answer(t, static_cast<int32_t>(pp[a]));
      if (hit) ++right;
      else ++missed[e];
      const int64_t d = examples[e].answer_difficulty(t);
      if (d >= 0) {
        auto& cell = s.by_difficulty[d];
        cell.first += hit ? 1 : 0;
        ++cell.second;
      }
    }
    for (int64_t m : missed) whole += m == 0 ? 1 : 0;
    s.answers += rows.numel();
    s.examples += static_cast<int64_t>(indices.size());
  }
  if (was_training) model->train();
  if (s.answers > 0) {
    s.loss = loss_sum / static_cast<double>(s.answers);
    s.answer_accuracy = static_cast<double>(right) / static_cast<double>(s.answers);
  }
  if (s.examples > 0) s.sequence_accuracy = static_cast<double>(whole) / static_cast<double>(s.examples);
  return s;
}

}  // namespace hsm
