// libFuzzer target: the diagnostics.jsonl readers of hsm/diagnostics_log.h, as the studio's
// Diagnostics view uses them on a run that a trainer (or anything else) is writing.
//
// Input: as fuzz_metrics.cpp's: byte 0 picks the slice poll() reads at a time; the rest is
// written to diagnostics.jsonl in pieces cut at 0x01 bytes (0x02 first: the piece replaces
// the file), the reader drained after each (fuzz_util.h, follow_pieces).
//
// The promises checked:
// - parse_diagnostics_record returns a record or throws std::runtime_error, on any line, and
//   a record it returns writes back to a line that parses to the same record;
// - layers_of takes any record it returned;
// - poll() does not throw, a drain ends, a skipped line is named with its file and line;
// - read piece by piece, the file gives the records that one read of the whole gives.
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "fuzz_util.h"
#include "hsm/diagnostics_log.h"

namespace {

constexpr uint64_t kSlices[] = {1, 7, 64, 4096, UINT64_MAX};

// NaN-aware equality: what a round trip and a second read must keep.
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool same(const hsm::Indicators& a, const hsm::Indicators& b) {
  bool s = same(a.entropy, b.entropy) && same(a.conc, b.conc) && same(a.headdiv, b.headdiv) && same(a.sink, b.sink);
  for (size_t n = 0; n < a.locfoc.size(); ++n) s = s && same(a.locfoc[n], b.locfoc[n]);
  return s;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

bool same(const hsm::DiagnosticsRecord& a, const hsm::DiagnosticsRecord& b) {
  if (a.step != b.step || a.prompt != b.prompt || a.layers.size() != b.layers.size()) return false;
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const auto &x = a.layers[l], &y = b.layers[l];
    if (x.layer != y.layer || x.mixer != y.mixer || x.kind != y.kind || !same(x.indicators, y.indicators) ||
        !same(x.lens_kl, y.lens_kl) || x.heads.size() != y.heads.size() || !same(x.weights.a, y.weights.a) ||
        !same(x.weights.b, y.weights.b) || x.weights.shifts != y.weights.shifts ||
        !same(x.weights.lag_weights, y.weights.lag_weights))
      return false;
    for (size_t h = 0; h < x.heads.size(); ++h)
      if (x.heads[h].head != y.heads[h].head || !same(x.heads[h].indicators, y.heads[h].indicators)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hsm::fuzz::ScratchDir scratch("diagnostics_log");
  if (size == 0) return 0;
  const uint64_t slice = kSlices[data[0] % 5];
  const std::string_view input = hsm::fuzz::as_text(data + 1, size - 1);
  const std::string dir = scratch.path().string();

  // Every line on its own.
  hsm::fuzz::for_each_line(input, [](const std::string& text) {
    try {
      const hsm::DiagnosticsRecord r = hsm::parse_diagnostics_record(text, "in");
      hsm::layers_of(r);
      const std::string line = hsm::diagnostics_record_to_json_line(r);
      if (!same(hsm::parse_diagnostics_record(line, "again"), r))
        hsm::fuzz::broken("a record written back does not read as itself: " + line);
    } catch (const std::runtime_error&) {
      // "not a diagnostics record", as documented
    }
  });

  hsm::DiagnosticsLogReader reader(dir);
  std::vector<hsm::DiagnosticsRecord> followed;
  const bool rewritten = hsm::fuzz::follow_pieces(scratch, "diagnostics.jsonl", input, slice, reader, followed);
  if (!rewritten)
    hsm::fuzz::expect_followed_as_whole(hsm::read_diagnostics_log(dir), followed, "diagnostics.jsonl",
                                        [](const auto& a, const auto& b) { return same(a, b); });
  return 0;
}
