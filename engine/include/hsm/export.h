#pragma once
// Exporting a run folder for distribution (bundled demo models): the weights in a smaller
// dtype, with config.json, tokenizer.model and metrics.jsonl; no optimizer state, so an
// export is for generation, evaluation and inspection, not for resuming. Loading converts
// F16 / BF16 back to F32 (every computation is F32).
#include <string>

namespace hsm {

struct ExportOptions {
  std::string dtype = "F16";  // "F16", "BF16" or "F32"
  bool best = false;          // take best.safetensors (the best validation) when the run has one
};

// Throws naming the file on a folder that is not a run, or std::invalid_argument on a bad dtype.
void export_run(const std::string& run_dir, const std::string& out_dir, const ExportOptions& options = {});

}  // namespace hsm
