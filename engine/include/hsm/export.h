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
  // Replace an existing non-empty --out that is not an earlier export (its files are lost).
  // Even then a folder that is or holds the run exported, or any run's checkpoints, is refused.
  bool force = false;
};

// The export is written whole into a temporary sibling of `out_dir` and renamed into place. An
// existing `out_dir` is replaced only when it is empty or an earlier export, or with `force`
// (never a link, a file, the run itself or a folder holding it or a run's checkpoints).
// Throws naming the file on a folder that is not a run, or std::invalid_argument on a bad dtype
// or an `out_dir` it may not replace (the message says why and what to do).
void export_run(const std::string& run_dir, const std::string& out_dir, const ExportOptions& options = {});

}  // namespace hsm
