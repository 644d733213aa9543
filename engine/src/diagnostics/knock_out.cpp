// The torch-free half of hsm/knock_out.h: the CLI's spelling of a knock-out set.
#include "hsm/knock_out.h"

#include <stdexcept>

namespace hsm {
namespace {

int64_t parse_index(const std::string& text, const std::string& item) {
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || v < 0)
    throw std::invalid_argument("knock-out '" + item +
                                "': expected LAYER or LAYER:HEAD with 0-based indices (e.g. 3 or 3:1)");
  return v;
}

}  // namespace

std::vector<KnockOut> parse_knock_outs(const std::string& text) {
  std::vector<KnockOut> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    const size_t colon = item.find(':');
    KnockOut k;
    k.layer = parse_index(item.substr(0, colon), item);
    if (colon != std::string::npos) k.head = parse_index(item.substr(colon + 1), item);
    out.push_back(k);
    begin = end + 1;
  }
  return out;
}

std::string knock_out_label(const KnockOut& k) {
  std::string s = "layer " + std::to_string(k.layer);
  if (k.head >= 0) s += " head " + std::to_string(k.head);
  return s;
}

}  // namespace hsm
