#include "io/text_list.h"

#include <cerrno>
#include <cstdlib>

namespace hsm {

std::vector<std::string> split_list(const std::string& text, char separator) {
  std::vector<std::string> items;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(separator, begin);
    std::string item = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    const size_t first = item.find_first_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, item.find_last_not_of(" \t") - first + 1);
    items.push_back(std::move(item));
    if (end == std::string::npos) return items;
    begin = end + 1;
  }
}

bool parse_index(const std::string& text, int64_t& out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;  // no sign, no space
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

}  // namespace hsm
