#pragma once
// How a folder is written as one unit (a checkpoint, an export, a "save as"; issues 34, 35):
// the internal half of RunFolder (hsm/run_folder.h). No LibTorch.
#include <string>

namespace hsm {

// stage_folder() makes `<dest>.tmp.<pid>` empty (a killed writer's is removed by
// remove_dead_temporaries), the caller writes every file into it, and publish_folder() flushes
// it and renames it to `dest`. An existing `dest` is exchanged with it in one rename
// (renameat2 RENAME_EXCHANGE) and then removed, so `dest` is at every moment the old folder
// whole or the new one whole. Throws std::runtime_error naming the folder and the reason.
std::string stage_folder(const std::string& dest);
void publish_folder(const std::string& staged, const std::string& dest);

}  // namespace hsm
