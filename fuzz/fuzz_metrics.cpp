// libFuzzer target: the metrics readers of hsm/run_folder.h, as the studio uses them on a
// run's metrics.jsonl that a trainer (or anything else) is writing.
//
// Input: byte 0 picks the slice poll() reads at a time; the rest is what gets written to
// metrics.jsonl, in pieces cut at 0x01 bytes: each piece is appended (a writer's flush, which
// may end mid-line), or, when it starts with 0x02, replaces the file (a resume rewrote it).
// After each piece the reader is drained as the studio does: poll() again while more().
//
// The promises checked:
// - metric_from_json_line returns a record or throws std::invalid_argument, on any line;
// - poll() does not throw, and a drain ends: more() cannot stay true without progress;
// - a line it skips is reported with the file and the line number;
// - read piece by piece, the file gives the records that one read of the whole gives.
#include <cstring>
#include <stdexcept>

#include "fuzz_util.h"
#include "hsm/run_folder.h"

namespace {

constexpr uint64_t kSlices[] = {1, 7, 64, 4096, UINT64_MAX};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same(const hsm::MetricRecord& a, const hsm::MetricRecord& b) {
  return a.kind == b.kind && a.step == b.step && a.total_steps == b.total_steps && same_bits(a.epoch, b.epoch) &&
         same_bits(a.train_loss, b.train_loss) && same_bits(a.val_loss, b.val_loss) &&
         same_bits(a.val_accuracy, b.val_accuracy) && same_bits(a.tokens_per_s, b.tokens_per_s) &&
         same_bits(a.lr, b.lr) && same_bits(a.wall_s, b.wall_s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hsm::fuzz::ScratchDir scratch("metrics");
  if (size == 0) return 0;
  const uint64_t slice = kSlices[data[0] % 5];
  const std::string_view input = hsm::fuzz::as_text(data + 1, size - 1);
  const std::string dir = scratch.path().string();

  // Every line on its own.
  hsm::fuzz::for_each_line(input, [](const std::string& line) {
    try {
      hsm::metric_from_json_line(line);
    } catch (const std::invalid_argument&) {
      // "not a metrics record", as documented
    }
  });

  // The file written piece by piece, the reader following it.
  hsm::MetricsReader reader(dir);
  std::vector<hsm::MetricRecord> followed;
  const bool rewritten = hsm::fuzz::follow_pieces(scratch, "metrics.jsonl", input, slice, reader, followed);

  if (!rewritten)
    hsm::fuzz::expect_followed_as_whole(hsm::read_metrics(dir), followed, "metrics.jsonl",
                                        [](const auto& a, const auto& b) { return same(a, b); });
  return 0;
}
