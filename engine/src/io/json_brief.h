#pragma once
// A JSON value as an error message shows it (internal header).
#include <nlohmann/json.hpp>
#include <string>

namespace hsm {

// The value's text when it is a scalar or a flat array or object ("100", "[0, 4, 8]"),
// cut to max_chars; otherwise only its kind and size ("an array of 2 items"). Never the
// whole of a nested value: nlohmann's dump() recurses once per level, so a damaged file
// nested a million levels deep overflowed the stack while its error message was being
// written (found by fuzz/fuzz_safetensors.cpp).
inline std::string json_brief(const nlohmann::json& v, size_t max_chars = 80) {
  bool flat = v.is_primitive();
  if (v.is_structured()) {
    flat = true;
    for (const auto& item : v) flat = flat && item.is_primitive();
  }
  if (!flat)
    return std::string(v.is_array() ? "an array of " : "an object of ") + std::to_string(v.size()) +
           (v.is_array() ? " items" : " keys");
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

}  // namespace hsm
