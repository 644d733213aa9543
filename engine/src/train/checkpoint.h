#pragma once
// A checkpoint's optimizer state (docs/checkpoint-format.md): AdamW's moments in
// optimizer.safetensors, its step in the metadata. The checkpoint itself, its folder, its
// publication and its pruning are the run folder's (RunFolder::write_checkpoint,
// hsm/run_folder.h); the trainer writes its tensors into the files it is given.
#include <cstdint>
#include <string>

#include "train/adamw.h"

namespace hsm {

void save_optimizer(const AdamW& optimizer, const std::string& path);
void load_optimizer(AdamW& optimizer, const std::string& path, int64_t expected_step);

}  // namespace hsm
