#pragma once
// Checked reading of a JSON record's fields (internal): each value's kind checked, so a damaged
// line is refused saying what is wrong ("<where>: \"step\" is not a whole number") rather than
// read as zeros or thrown from deep inside nlohmann. The run folder's line readers
// (diagnostics.jsonl, traces.jsonl) read their records through it.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace hsm {

struct JsonFields {
  using json = nlohmann::json;
  const std::string& where;  // named first in every complaint ("<path> line N"); may be empty

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(where.empty() ? what : where + ": " + what);
  }
  // j[key], refused as "<in> has no \"key\"" when absent.
  const json& member(const json& j, const char* key, const std::string& in = "the record") const {
    auto it = j.find(key);
    if (it == j.end()) fail(in + " has no \"" + key + "\"");
    return *it;
  }
  // Numbers; null stands for a value that was not finite (the writers' NaN).
  double number(const json& j, const std::string& what) const {
    if (j.is_null()) return NAN;
    if (!j.is_number()) fail(what + " is not a number");
    return j.get<double>();
  }
  int64_t whole(const json& j, const std::string& what) const {
    if (!j.is_number_integer() && !j.is_number_unsigned()) fail(what + " is not a whole number");
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(what + " is too large");
    const auto v = j.get<int64_t>();
    if (v < 0) fail(what + " is negative");
    return v;
  }
  // A whole number small enough for an index (a layer, a head).
  int small(const json& j, const std::string& what) const {
    const int64_t v = whole(j, what);
    if (v > 1'000'000) fail(what + " is too large");
    return static_cast<int>(v);
  }
  std::string text(const json& j, const std::string& what) const {
    if (!j.is_string()) fail(what + " is not text");
    return j.get<std::string>();
  }
  const json& array(const json& j, const std::string& what) const {
    if (!j.is_array()) fail(what + " is not a list");
    return j;
  }
  const json& object(const json& j, const std::string& what) const {
    if (!j.is_object()) fail(what + " is not an object");
    return j;
  }
  template <typename T = int64_t>
  std::vector<T> wholes(const json& j, const std::string& what) const {
    std::vector<T> out;
    for (const json& v : array(j, what)) out.push_back(static_cast<T>(whole(v, what + " value")));
    return out;
  }
  std::vector<double> numbers(const json& j, const std::string& what) const {
    std::vector<double> out;
    for (const json& v : array(j, what)) out.push_back(number(v, what + " value"));
    return out;
  }
  std::vector<float> floats(const json& j, const std::string& what) const {
    std::vector<float> out;
    for (const json& v : array(j, what)) out.push_back(static_cast<float>(number(v, what + " value")));
    return out;
  }
  std::vector<std::string> texts(const json& j, const std::string& what) const {
    std::vector<std::string> out;
    for (const json& v : array(j, what)) out.push_back(text(v, what + " value"));
    return out;
  }
};

}  // namespace hsm
