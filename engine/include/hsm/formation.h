#pragma once
// Watching a mechanism form (issue 67; docs/diagnostics.md, "Over training: when a route forms").
// While a run trains, at its validations, the trainer traces one fixed example (a task run's test
// example with its key replaced, as `hsm trace --example` does; a language run's clean/corrupted
// prompt pair) and appends one record to RUN/traces.jsonl (RunFolder::traces): the exact patching
// maps (hsm/trace.h), the information flow routes into the answer (hsm/routes.h), and the
// validation's loss and accuracy. This header holds the record, its line format, the reader, and
// the series read from them: per step, the accuracy, the route share from the corrupted position
// and each layer's mixer effect, with the step a route formed and the step accuracy jumped — one
// function for the CLI (`hsm trace RUN --over-training`), the studio and the lab. Plain C++.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/jsonl_tail.h"
#include "hsm/routes.h"
#include "hsm/trace_maps.h"

namespace hsm {

// The share of the answer's information flow that starts at `positions` (tokens entering the
// model there): the routes' weights multiplied along every path from node (0, p) to the output
// node and summed over paths. The weights into a node sum to 1, so the shares of all positions
// sum to 1; a position no edge path connects to the output (outside a shift stack's reach) has
// exactly 0. Uses every edge of `routes` (unpruned, as Tracer::routes gives them).
double route_share(const Routes& routes, const std::vector<int64_t>& positions);
// Each layer's mixer effect: the largest value of the exact "mixer" map over that layer's
// positions (NaN for a layer without a mixer site, or when there is no mixer map).
std::vector<double> mixer_effects(const std::vector<TraceMap>& exact, int64_t layers, int64_t positions);

// One line of RUN/traces.jsonl.
struct TraceRecord {
  int64_t step = 0;
  double val_loss = NAN;   // this step's validation
  double accuracy = NAN;   // its answer accuracy (a task run) or top-1 accuracy (a corpus run)
  std::string example;     // "test example N of TASK", or "text"
  std::vector<int32_t> clean, corrupt;
  std::vector<std::string> clean_labels, corrupt_labels;
  std::vector<int64_t> corrupted_positions;
  int64_t layers = 0, positions = 0, answer_position = 0;
  int32_t answer_token = 0;
  std::string answer_label;
  double clean_logprob = 0, corrupt_logprob = 0;
  // Exact patching (residual, mixer, ffn), as `hsm trace --no-attribution` gives them; empty when
  // the corruption left log p(answer) as it was (nothing to trace: no_effect).
  std::vector<TraceMap> exact;
  bool no_effect = false;
  double route_threshold = 0;     // the routes kept: prune_routes(all, route_threshold)
  std::vector<RouteEdge> routes;  // at most kMaxRouteEdges, the strongest
  double route_share = 0;         // from the corrupted positions, on every edge (route_share())
  std::vector<double> mixer_effect;  // per layer (mixer_effects())
  double seconds = 0;             // what the record took
};

// The bound on the log (docs/diagnostics.md): at most this many records a run (the recorder
// records no more after them and says so), each with at most kMaxRouteEdges edges and three maps
// of layers x positions numbers.
constexpr int64_t kMaxTraceRecords = 200;
constexpr size_t kMaxRouteEdges = 400;
// The routes a record keeps (as `hsm trace --routes --threshold`).
constexpr double kTraceRouteThreshold = 0.02;

std::string trace_record_to_json_line(const TraceRecord& r);
// Throws std::runtime_error naming `where` ("<path> line N") and what is wrong.
TraceRecord parse_trace_record(const std::string& line, const std::string& where);

// Incremental reader of RUN/traces.jsonl (as DiagnosticsLogReader reads diagnostics.jsonl).
class TraceLogReader {
 public:
  static constexpr uint64_t kMaxLineBytes = 16 * 1024 * 1024;
  explicit TraceLogReader(std::string run_dir);
  std::vector<TraceRecord> poll(uint64_t max_bytes = UINT64_MAX);
  bool reset() const { return tail_.reset(); }
  bool more() const { return tail_.more(); }
  bool exists() const;
  const std::vector<std::string>& problems() const { return tail_.problems(); }
  int64_t skipped() const { return tail_.skipped(); }
  const std::string& path() const { return tail_.path(); }

 private:
  JsonlTail tail_;
};

// Every record of a run folder's traces.jsonl (empty when there is none).
std::vector<TraceRecord> read_trace_log(const std::string& run_dir);

// ---- the series over training, and the two marked steps --------------------------------------

// The rule (docs/diagnostics.md): a route has formed at the first record step from which the
// route share is >= share_threshold at that record and every later one; accuracy jumped at the
// first record step whose accuracy is >= first + accuracy_fraction x (last - first) (none when the
// last is not above the first).
struct FormationRule {
  double share_threshold = 0.1;
  double accuracy_fraction = 0.5;
};

struct FormationPoint {
  int64_t step = 0;
  double val_loss = NAN, accuracy = NAN;
  double route_share = 0;
  std::vector<double> mixer_effect;  // per layer
};

struct Formation {
  FormationRule rule;
  std::vector<FormationPoint> points;  // by step
  int64_t layers = 0;
  int64_t formed_step = -1;    // -1: no route formed (the share never stayed above the threshold)
  int64_t accuracy_step = -1;  // -1: no gain
  double accuracy_first = NAN, accuracy_last = NAN, accuracy_level = NAN;  // the level crossed
  double max_share = 0;        // the largest route share of any record
  // One line: "route formed at step 700, accuracy crossed 0.50 at 750" or "no route from the
  // corrupted position formed in 2000 steps (largest share 0.000); accuracy ...".
  std::string summary() const;
};

// The series of `records` (any order; a step recorded twice keeps the later line) by `rule`.
Formation formation(const std::vector<TraceRecord>& records, const FormationRule& rule = {});
// The same from the points alone (read_formation_points): the same Formation.
Formation formation(const std::vector<FormationPoint>& points, const FormationRule& rule = {});

// The light reader: what formation() needs of a line of traces.jsonl (step, val_loss, accuracy,
// route_share, mixer_effect; layers to check it), read without building the maps and routes that
// are nearly all of a record (20-31 kB on the lab's gpt). Those fields are checked as
// parse_trace_record checks them; the others are only skipped over as well-formed JSON. A line
// parse_trace_record reads gives the point formation(records) takes from it. `example` (when
// given) gets the record's "example". Throws std::runtime_error naming `where`, as it does.
FormationPoint parse_formation_point(const std::string& line, const std::string& where,
                                     std::string* example = nullptr);
// Every line's point of a run folder's traces.jsonl (a damaged line skipped, as TraceLogReader
// skips it; empty when there is none); `example`: the last line's.
std::vector<FormationPoint> read_formation_points(const std::string& run_dir, std::string* example = nullptr);
// read_formation_points + formation: what the lab (a cell's runs), the report and the studio call.
Formation run_formation(const std::string& run_dir, const FormationRule& rule = {});

}  // namespace hsm
