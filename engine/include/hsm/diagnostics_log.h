#pragma once
// RUN/diagnostics.jsonl (issue 23, docs/checkpoint-format.md): at every validation the trainer
// diagnoses a fixed probe text (TrainSettings::probe_text) and appends one JSON line:
//   {"step", "prompt", "layers": [{"layer", "mixer", "kind", "indicators": {...as hsm diagnose},
//    "heads": [{"head", "indicators"}], "weights": {"a", "b", "shifts", "lag_weights" where the
//    mixer has them}, "lens_kl": mean over positions of KL(final ‖ this layer's lens)}]}
// A resumed run drops the lines past its checkpoint and goes on appending, so no step is
// recorded twice. Plain C++ (hsm_core): the reader, the line format and the record's layers as
// the Diagnostics view draws them; the trainer writes the lines (engine).
#include <cstdint>
#include <string>
#include <vector>

#include "hsm/diagnostics.h"
#include "hsm/jsonl_tail.h"
namespace hsm {

struct DiagnosticsHeadRecord {
  int head = 0;
  Indicators indicators;
};

struct DiagnosticsLayerRecord {
  int layer = 0;
  std::string mixer;                          // mixer id, as config.json names it
  MatrixKind kind = MatrixKind::kAttention;   // the matrix the indicators were computed on
  Indicators indicators;                      // raw, per layer (as LayerDiagnostics::indicators)
  std::vector<DiagnosticsHeadRecord> heads;
  MixerWeights weights;                       // a, b, shifts, lag weights (empty where the mixer has none)
  double lens_kl = 0;                         // mean KL(p_final ‖ p_lens after this layer), nats
};

struct DiagnosticsRecord {
  int64_t step = 0;
  std::string prompt;
  std::vector<DiagnosticsLayerRecord> layers;
};

// The "indicators" object exactly as `hsm diagnose --json` writes it (one writer for both):
// {"entropy", "conc", "headdiv", "sink", "locfoc": [4 numbers]}, as JSON text.
std::string indicators_to_json(const Indicators& i);

// One record <-> one line (no newline). parse throws std::runtime_error naming `where`
// ("<path> line N") and what is wrong.
std::string diagnostics_record_to_json_line(const DiagnosticsRecord& r);
DiagnosticsRecord parse_diagnostics_record(const std::string& line, const std::string& where);

// The record's layers as a Diagnosis has them (no matrices: heads carry indicators only), with
// `normalised` filled across layers (normalise_across_layers), for the radar, the overview and
// the table of the Diagnostics view at a past step.
std::vector<LayerDiagnostics> layers_of(const DiagnosticsRecord& r);

// Incremental reader of RUN/diagnostics.jsonl, as MetricsReader (run_folder.h) reads
// metrics.jsonl: each poll() returns the records appended since the last one; a file that
// shrank or was replaced (a resume dropped lines) starts over (reset()). Damaged lines are
// skipped and described in problems().
class DiagnosticsLogReader {
 public:
  static constexpr uint64_t kMaxLineBytes = 16 * 1024 * 1024;  // vector a/b of a wide model
  explicit DiagnosticsLogReader(std::string run_dir);
  std::vector<DiagnosticsRecord> poll(uint64_t max_bytes = UINT64_MAX);
  bool reset() const { return tail_.reset(); }  // the last poll() started over
  bool more() const { return tail_.more(); }  // the last poll() stopped before the end of the file
  bool exists() const;  // the run has a diagnostics.jsonl at all
  const std::vector<std::string>& problems() const { return tail_.problems(); }
  int64_t skipped() const { return tail_.skipped(); }
  const std::string& path() const { return tail_.path(); }

 private:
  JsonlTail tail_;
};

// Every record of a run folder's diagnostics.jsonl (empty when there is none).
std::vector<DiagnosticsRecord> read_diagnostics_log(const std::string& run_dir);

}  // namespace hsm
