// The torch-free half of hsm/knock_out.h: the CLI's spelling of a knock-out set.
#include "hsm/knock_out.h"

#include <stdexcept>

#include "io/text_list.h"

namespace hsm {
namespace {

int64_t parse_item_index(const std::string& text, const std::string& item) {
  int64_t v = -1;
  if (!parse_index(text, v))
    throw std::invalid_argument("knock-out '" + item +
                                "': expected LAYER or LAYER:HEAD with 0-based indices (e.g. 3 or 3:1)");
  return v;
}

}  // namespace

std::vector<KnockOut> parse_knock_outs(const std::string& text) {
  std::vector<KnockOut> out;
  for (const std::string& item : split_list(text)) {
    const std::vector<std::string> parts = split_list(item, ':');
    if (parts.size() > 2) parse_item_index("", item);  // LAYER:HEAD at most
    KnockOut k;
    k.layer = parse_item_index(parts[0], item);
    if (parts.size() == 2) k.head = parse_item_index(parts[1], item);
    out.push_back(k);
  }
  return out;
}

std::string knock_out_label(const KnockOut& k) {
  std::string s = "layer " + std::to_string(k.layer);
  if (k.head >= 0) s += " head " + std::to_string(k.head);
  return s;
}

}  // namespace hsm
