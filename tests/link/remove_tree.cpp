// Removes a folder tree with std::filesystem::remove_all; exit 0 when it is gone.
#include <cstdint>
#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path p = argv[1];
  const auto n = std::filesystem::remove_all(p);
  std::printf("removed %ju entries\n", static_cast<std::uintmax_t>(n));
  return std::filesystem::exists(p) ? 1 : 0;
}
