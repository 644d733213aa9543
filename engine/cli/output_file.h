#pragma once
// The one file a command was told to write (`hsm eval --per-token FILE`, `hsm tokenizer train
// --out FILE`): written only where nothing of the user's is lost (issue 46, docs/safety.md).
#include <string>
#include <vector>

namespace hsm::cli {

// Throws std::invalid_argument naming `option` and `path` when the command may not write it:
// never a file inside a run folder (its model.safetensors is a hard link to the newest
// checkpoint's; its tokenizer is the one its ids mean) or one of the command's `inputs` (or
// inside one), even with `force`; an existing file only with `force` (then it is replaced by a
// rename, a link or a hard link there never written through); never a folder or a FIFO or device.
// Checked before the command's work, so a refusal costs nothing.
void check_output_file(const std::string& option, const std::string& path, const std::vector<std::string>& inputs,
                       bool force);

}  // namespace hsm::cli
