// RunFolder::keep_log_records_to (hsm/run_folder.h): a resumed run's record log cut back to its
// checkpoint's step, as metrics.jsonl and diagnostics.jsonl are.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hsm/run_folder.h"
#include "io/io_util.h"

namespace fs = std::filesystem;

namespace hsm {

std::vector<int64_t> RunFolder::keep_log_records_to(const std::string& log_path, int64_t step, int64_t& damaged) const {
  damaged = 0;
  std::vector<int64_t> steps;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(log_path, ec))) return steps;
  std::istringstream in(read_text_file(log_path, "record log", 1ull << 30));
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    const auto s = j.is_object() ? j.find("step") : j.end();
    if (!j.is_object() || s == j.end() || !s->is_number_integer()) {
      ++damaged;  // a torn or foreign line (a kill mid-write is cut off by RecordLog already)
      continue;
    }
    if (s->get<int64_t>() > step) continue;
    steps.push_back(s->get<int64_t>());
    kept += line + "\n";
  }
  write_file_atomic(log_path, kept);
  return steps;
}

}  // namespace hsm
