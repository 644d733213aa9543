#include "io/run_paths.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "io/io_util.h"

namespace fs = std::filesystem;

namespace hsm {

RunPaths::RunPaths(std::string d)
    : dir(std::move(d)),
      weights((fs::path(dir) / "model.safetensors").string()),
      optimizer((fs::path(dir) / "optimizer.safetensors").string()),
      config((fs::path(dir) / "config.json").string()),
      tokenizer((fs::path(dir) / "tokenizer.model").string()),
      metrics((fs::path(dir) / "metrics.jsonl").string()),
      diagnostics((fs::path(dir) / "diagnostics.jsonl").string()),
      checkpoints((fs::path(dir) / "checkpoints").string()),
      best((fs::path(dir) / "best.safetensors").string()),
      lock((fs::path(dir) / ".lock").string()) {}

namespace {

void refuse_link(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    throw std::runtime_error("'" + path + "' is a symbolic link: a run folder's files are its own, and writing "
                             "through the link would change a file outside the folder; replace the link by the "
                             "file it points to, or remove it");
}

// `dest` without a trailing separator ("out/" would stage inside the folder it replaces).
std::string folder_path(const std::string& dest) {
  fs::path d = fs::path(dest).lexically_normal();
  if (d.filename().empty()) d = d.parent_path();
  return d.string();
}

}  // namespace

void check_no_links(const RunPaths& p) {
  for (const std::string& f : {p.weights, p.optimizer, p.config, p.tokenizer, p.metrics, p.diagnostics, p.best,
                               p.lock, p.checkpoints})
    refuse_link(f);
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(p.checkpoints, ec))) return;
  for (const auto& entry : fs::directory_iterator(p.checkpoints, ec)) {
    refuse_link(entry.path().string());
    std::error_code inner;
    if (entry.is_directory(inner))
      for (const auto& file : fs::directory_iterator(entry.path(), inner)) refuse_link(file.path().string());
  }
}

std::string stage_folder(const std::string& dest_path) {
  const std::string staged = folder_path(dest_path) + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staged, ec);
  fs::create_directories(staged, ec);
  if (ec) throw std::runtime_error("cannot make the folder '" + staged + "': " + ec.message());
  return staged;
}

void publish_folder(const std::string& staged, const std::string& dest_path) {
  const std::string dest = folder_path(dest_path);
  sync_dir(staged);
  const std::string parent = fs::path(dest).has_parent_path() ? fs::path(dest).parent_path().string() : ".";
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dest, ec))) {
    if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0) {
      const int err = errno;
      if (err != EINVAL && err != ENOSYS)
        throw std::runtime_error("cannot replace '" + dest + "' by '" + staged + "': " + std::strerror(err));
      // A file system without the exchange: the old folder steps aside first (for a moment
      // `dest` is missing, never mixed).
      const std::string old = dest + ".old.tmp." + std::to_string(::getpid());
      fs::remove_all(old, ec);
      fs::rename(dest, old, ec);
      if (ec) throw std::runtime_error("cannot move '" + dest + "' aside: " + ec.message());
      fs::rename(staged, dest, ec);
      if (ec) {
        std::error_code back;
        fs::rename(old, dest, back);
        throw std::runtime_error("cannot rename '" + staged + "' to '" + dest + "': " + ec.message());
      }
      sync_dir(parent);
      fs::remove_all(old, ec);
      return;
    }
    sync_dir(parent);
    fs::remove_all(staged, ec);  // now the old folder
    return;
  }
  fs::rename(staged, dest, ec);
  if (ec) throw std::runtime_error("cannot rename '" + staged + "' to '" + dest + "': " + ec.message());
  sync_dir(parent);
}

}  // namespace hsm
