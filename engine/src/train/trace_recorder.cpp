#include "train/trace_recorder.h"

#include <algorithm>
#include <chrono>

#include "eval/diagnose.h"
#include "hsm/formation.h"
#include "hsm/run_folder.h"
#include "train/eval_mode.h"
#include "hsm/tokenizer.h"


namespace hsm {

TraceRecorder::TraceRecorder(RunFolder& folder, const TrainSettings& s, const Task* task,
                             const Tokenizer* tokenizer, const ModelConfig& config, bool resume, int64_t start_step,
                             const std::function<void(const std::string&)>& log)
    : folder_(folder), every_(s.trace_every) {
  if (resume) {  // as the metrics: records past the checkpoint go
    int64_t damaged = 0;
    const std::vector<int64_t> kept = folder.keep_log_records_to(folder.traces, start_step, damaged);
    if (damaged > 0) log(std::to_string(damaged) + " damaged line(s) of traces.jsonl dropped");
    records_ = static_cast<int64_t>(kept.size());
    for (int64_t step : kept) last_step_ = std::max(last_step_, step);
  }
  try {
    if (task && s.trace_example >= 0) {
      request_ = task_trace_request(*task, s.trace_example, config.vocab_size);
      example_ = "test example " + std::to_string(s.trace_example) + " of " + task->name();
      label_ = [task](int32_t id) { return task->token_label(id); };
    } else if (!task && tokenizer && !s.trace_text.empty()) {
      TraceRequest r;
      r.clean = prompt_token_ids(*tokenizer, s.trace_text, config.context, 0, "--trace-text");
      r.corrupt = prompt_token_ids(*tokenizer, s.trace_corrupt, config.context, 0, "--trace-corrupt");
      if (r.clean.size() != r.corrupt.size())
        throw std::invalid_argument("--trace-text is " + std::to_string(r.clean.size()) + " tokens and --trace-corrupt " +
                                    std::to_string(r.corrupt.size()) +
                                    "; patching needs the same positions in both (replace a token by one of the same length)");
      request_ = r;
      example_ = "text";
      label_ = [tokenizer](int32_t id) { return tokenizer->piece(id); };
    }
  } catch (const std::exception& e) {
    log(std::string("traces.jsonl: no traces: ") + e.what());
    request_.reset();
  }
  folder.start_traces(resume, request_.has_value());  // a new run's records start afresh
  if (!request_) return;
  request_->exact = true;
  request_->attribution = false;  // the exact maps are what is compared across steps
  request_->routes = true;
  request_->allow_no_effect = true;  // a model that does not (yet) use the key is a record too
}

bool TraceRecorder::due(int64_t step) const {
  if (!on() || records_ >= kMaxTraceRecords) return false;
  return every_ <= 0 || last_step_ < 0 || step - last_step_ >= every_;
}

void TraceRecorder::record(Gpt& model, int64_t step, double val_loss, double accuracy) {
  if (!due(step)) return;
  const auto t0 = std::chrono::steady_clock::now();
  const EvalModeScope eval_mode(model);  // no dropout: the same model `hsm trace` loads
  torch::NoGradGuard no_grad;
  const Trace t = trace_gpt(*model, *request_, label_);
  TraceRecord r;
  r.step = step;
  r.val_loss = val_loss;
  r.accuracy = accuracy;
  r.example = example_;
  r.clean = t.clean;
  r.corrupt = t.corrupt;
  r.clean_labels = t.clean_labels;
  r.corrupt_labels = t.corrupt_labels;
  r.corrupted_positions = t.corrupted_positions;
  r.layers = t.layers;
  r.positions = t.positions;
  r.answer_position = t.answer_position;
  r.answer_token = t.answer_token;
  r.answer_label = t.answer_label;
  r.clean_logprob = t.clean_logprob;
  r.corrupt_logprob = t.corrupt_logprob;
  r.no_effect = t.no_effect;
  r.exact = t.exact;
  r.route_threshold = kTraceRouteThreshold;
  r.routes = prune_routes(t.routes, kTraceRouteThreshold);
  if (r.routes.size() > kMaxRouteEdges) {  // the strongest, in their order
    std::vector<double> w;
    for (const RouteEdge& e : r.routes) w.push_back(e.weight);
    std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(kMaxRouteEdges - 1), w.end(), std::greater<>());
    const double cut = w[kMaxRouteEdges - 1];
    std::vector<RouteEdge> kept;
    for (const RouteEdge& e : r.routes)
      if (e.weight >= cut && kept.size() < kMaxRouteEdges) kept.push_back(e);
    r.routes = std::move(kept);
  }
  r.route_share = route_share(t.routes, t.corrupted_positions);
  r.mixer_effect = mixer_effects(t.exact, t.layers, t.positions);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (const std::string failure = folder_.append_trace(trace_record_to_json_line(r)); !failure.empty())
    throw std::runtime_error("cannot write " + folder_.traces + " (" + failure + ")");
  ++records_;
  last_step_ = step;
  seconds_ += r.seconds;
}

}  // namespace hsm
