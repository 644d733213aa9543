#include "output_file.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "hsm/run_folder.h"

namespace fs = std::filesystem;

namespace hsm::cli {
namespace {

// The path is inside (or is) `folder`: compared by their real paths, links resolved.
bool is_inside(const std::string& path, const std::string& folder) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec), f = fs::weakly_canonical(fs::absolute(folder), ec);
  if (ec) return false;
  return std::mismatch(f.begin(), f.end(), p.begin(), p.end()).first == f.end();
}

// The run folder (or export) that holds `path`, or "".
std::string run_folder_holding(const std::string& path) {
  std::error_code ec;
  for (fs::path p = fs::weakly_canonical(fs::absolute(path), ec).parent_path(); !ec && !p.empty(); p = p.parent_path()) {
    if (is_run_folder(p.string())) return p.string();
    if (p == p.root_path()) break;
  }
  return {};
}

}  // namespace

void check_output_file(const std::string& option, const std::string& path, const std::vector<std::string>& inputs,
                       bool force) {
  const std::string at = option + " '" + path + "': ";
  if (const std::string run = run_folder_holding(path); !run.empty())
    throw std::invalid_argument(at + "it is inside the run folder '" + run +
                                "', whose files (the weights are a hard link to its newest checkpoint, the tokenizer "
                                "is the one its ids mean) are never written by this command: choose a file outside it");
  std::error_code ec;
  for (const std::string& input : inputs)
    if (!input.empty() && (is_inside(path, input) || (fs::exists(path, ec) && fs::equivalent(path, input, ec))))
      throw std::invalid_argument(at + "it is '" + input + "', an input of this command, or inside it: choose another "
                                  "file");
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return;
  if (fs::is_directory(st)) throw std::invalid_argument(at + "it is a folder: give a file name");
  if (!fs::is_regular_file(st) && !fs::is_symlink(st))
    throw std::invalid_argument(at + "it is not a regular file (a FIFO, a device or a socket): choose a file");
  if (!force)
    throw std::invalid_argument(at + "the file exists and this command did not write it: choose a new file, or "
                                "give --force to replace it (a link is replaced, never written through)");
}

}  // namespace hsm::cli
