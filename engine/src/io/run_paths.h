#pragma once
// A run folder's files and how a folder is written as one unit (docs/checkpoint-format.md),
// without LibTorch: what training, export and the studio's "save as" share (issues 34, 35).
//   model.safetensors, config.json, tokenizer.model, metrics.jsonl, diagnostics.jsonl,
//   best.safetensors, checkpoints/step-N/, .lock
// Run folders are things people download, so nothing in one is trusted to stay inside it:
// the trainer refuses a folder whose own files are symbolic links (check_no_links), and the
// lock, records and temporaries are opened without following one.
#include <string>

namespace hsm {

struct RunPaths {
  explicit RunPaths(std::string dir);
  // optimizer: where runs written before step folders kept it (read by resume only)
  std::string dir, weights, optimizer, config, tokenizer, metrics, diagnostics, checkpoints, best, lock;
};

// Throws std::runtime_error naming the first of the run folder's own entries (the files
// above, checkpoints/ and what it holds) that is a symbolic link: writing through it would
// change a file outside the folder.
void check_no_links(const RunPaths& paths);

// A folder written whole and then published by rename (a checkpoint, an export, a "save
// as"): stage_folder() makes `<dest>.tmp.<pid>` empty (a killed writer's is removed by
// remove_dead_temporaries), the caller writes every file into it, and publish_folder() flushes
// it and renames it to `dest`. An existing `dest` is exchanged with it in one rename
// (renameat2 RENAME_EXCHANGE) and then removed, so `dest` is at every moment the old folder
// whole or the new one whole. Throws std::runtime_error naming the folder and the reason.
std::string stage_folder(const std::string& dest);
void publish_folder(const std::string& staged, const std::string& dest);

}  // namespace hsm
