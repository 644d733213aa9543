// libFuzzer target: the traces.jsonl readers of hsm/formation.h (issue 67), as the studio's Trace
// view, `hsm trace --over-training` and the lab's table and report use them on a run that a
// trainer (or anything else) is writing.
//
// Input: as fuzz_metrics.cpp's: byte 0 picks the slice poll() reads at a time; the rest is
// written to traces.jsonl in pieces cut at 0x01 bytes (0x02 first: the piece replaces the file),
// the reader drained after each (fuzz_util.h, follow_pieces).
//
// The promises checked:
// - parse_trace_record returns a record or throws std::runtime_error, on any line, and a record
//   it returns writes back to a line that parses to the same record;
// - parse_formation_point (the light reader, which skips the maps and routes) returns a point or
//   throws std::runtime_error, on any line; on a line parse_trace_record reads, it returns the
//   point formation() takes from that record (the same step, accuracy, loss, share and effects);
// - formation() takes whatever points it returned, and summary() writes it;
// - poll() does not throw, a drain ends, a skipped line is named with its file and line;
// - read piece by piece, the file gives the records that one read of the whole gives.
#include <cmath>
#include <stdexcept>

#include "fuzz_util.h"
#include "hsm/formation.h"

namespace {

constexpr uint64_t kSlices[] = {1, 7, 64, 4096, UINT64_MAX};

// NaN-aware equality: what a round trip and a second read must keep.
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

bool same(const hsm::TraceRecord& a, const hsm::TraceRecord& b) {
  if (a.step != b.step || !same(a.val_loss, b.val_loss) || !same(a.accuracy, b.accuracy) || a.example != b.example ||
      a.clean != b.clean || a.corrupt != b.corrupt || a.clean_labels != b.clean_labels ||
      a.corrupt_labels != b.corrupt_labels || a.corrupted_positions != b.corrupted_positions || a.layers != b.layers ||
      a.positions != b.positions || a.answer_position != b.answer_position || a.answer_token != b.answer_token ||
      a.answer_label != b.answer_label || !same(a.clean_logprob, b.clean_logprob) ||
      !same(a.corrupt_logprob, b.corrupt_logprob) || a.no_effect != b.no_effect ||
      !same(a.route_threshold, b.route_threshold) || !same(a.route_share, b.route_share) ||
      !same(a.mixer_effect, b.mixer_effect) || !same(a.seconds, b.seconds) || a.exact.size() != b.exact.size() ||
      a.routes.size() != b.routes.size())
    return false;
  for (size_t i = 0; i < a.exact.size(); ++i)
    if (a.exact[i].site != b.exact[i].site || !same(a.exact[i].effect, b.exact[i].effect)) return false;
  for (size_t i = 0; i < a.routes.size(); ++i) {
    const hsm::RouteEdge &x = a.routes[i], &y = b.routes[i];
    if (x.layer != y.layer || x.from != y.from || x.to != y.to || !same(x.weight, y.weight) || x.kind != y.kind)
      return false;
  }
  return true;
}

bool same(const hsm::FormationPoint& p, const hsm::TraceRecord& r) {
  return p.step == r.step && same(p.val_loss, r.val_loss) && same(p.accuracy, r.accuracy) &&
         same(p.route_share, r.route_share) && same(p.mixer_effect, r.mixer_effect);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hsm::fuzz::ScratchDir scratch("traces");
  if (size == 0) return 0;
  const uint64_t slice = kSlices[data[0] % 5];
  const std::string_view input = hsm::fuzz::as_text(data + 1, size - 1);
  const std::string dir = scratch.path().string();

  // Every line on its own, by both readers.
  hsm::fuzz::for_each_line(input, [](const std::string& text) {
    bool full = false;
    hsm::TraceRecord record;
    try {
      record = hsm::parse_trace_record(text, "in");
      full = true;
      const std::string line = hsm::trace_record_to_json_line(record);
      if (!same(hsm::parse_trace_record(line, "again"), record))
        hsm::fuzz::broken("a record written back does not read as itself: " + line);
    } catch (const std::runtime_error&) {
      // "not a trace record", as documented
    }
    try {
      std::string example;
      const hsm::FormationPoint point = hsm::parse_formation_point(text, "in", &example);
      if (full && (!same(point, record) || example != record.example))
        hsm::fuzz::broken("the light reader's point is not the record's: " + text);
      const hsm::Formation f = hsm::formation(std::vector<hsm::FormationPoint>{point, point});
      (void)f.summary();
    } catch (const std::runtime_error& e) {
      if (full) hsm::fuzz::broken(std::string("the light reader refused a line the full reader reads: ") + e.what());
    }
  });

  hsm::TraceLogReader reader(dir);
  std::vector<hsm::TraceRecord> followed;
  const bool rewritten = hsm::fuzz::follow_pieces(scratch, "traces.jsonl", input, slice, reader, followed);
  if (!rewritten)
    hsm::fuzz::expect_followed_as_whole(hsm::read_trace_log(dir), followed, "traces.jsonl",
                                        [](const auto& a, const auto& b) { return same(a, b); });
  (void)hsm::formation(followed).summary();
  return 0;
}
