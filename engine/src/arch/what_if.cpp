// The torch-free half of hsm/what_if.h: the CLI's spelling of a/b edits and the edits in words.
#include "hsm/what_if.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "io/text_list.h"

namespace hsm {
namespace {

[[noreturn]] void bad_item(const std::string& item, const std::string& why) {
  throw std::invalid_argument("--set-ab item '" + item + "': " + why +
                              "; expected LAYER:A:B with a 0-based layer and two finite numbers (e.g. 3:0.5:1.2)");
}

float parse_value(const std::string& text, const std::string& item, const char* name) {
  size_t used = 0;
  double v = NAN;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) bad_item(item, std::string(name) + " '" + text + "' is not a number");
  if (!std::isfinite(v) || std::fabs(v) > 3.4e38) bad_item(item, std::string(name) + " '" + text + "' is not finite");
  return static_cast<float>(v);
}

// Shortest text that reads back as the same float ("0.5", "1.2").
std::string number_text(float v) {
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

std::vector<AbEdit> parse_ab_edits(const std::string& text) {
  std::vector<AbEdit> out;
  for (const std::string& item : split_list(text)) {
    const std::vector<std::string> parts = split_list(item, ':');
    if (parts.size() != 3) bad_item(item, "it needs three parts separated by ':'");
    AbEdit e;
    if (!parse_index(parts[0], e.layer)) bad_item(item, "layer '" + parts[0] + "' is not a 0-based index");
    e.a = {parse_value(parts[1], item, "a")};
    e.b = {parse_value(parts[2], item, "b")};
    out.push_back(std::move(e));
  }
  return out;
}

std::string ab_edit_label(const AbEdit& e) {
  std::string s = "layer " + std::to_string(e.layer);
  if (e.a.size() == 1 && e.b.size() == 1) return s + " a=" + number_text(e.a[0]) + " b=" + number_text(e.b[0]);
  return s + " a,b edited";
}

std::string what_if_label(const WhatIf& w) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "; ") + part; };
  for (const KnockOut& k : w.knock_out) add(knock_out_label(k) + " knocked out");
  for (const AbEdit& e : w.ab) add(ab_edit_label(e));
  return s.empty() ? "no edits" : s;
}

}  // namespace hsm
