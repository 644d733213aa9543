#include "number_options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace hsm::cli {
namespace {

std::string bound_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

std::string range_words(double min, double max, bool min_exclusive) {
  if (std::isinf(max)) return min_exclusive ? "use a number above " + bound_text(min) : "use " + bound_text(min) + " or more";
  return min_exclusive ? "use a number above " + bound_text(min) + ", at most " + bound_text(max)
                       : "use " + bound_text(min) + " to " + bound_text(max);
}

std::string whole_range_words(int64_t min, int64_t max) {
  if (max == std::numeric_limits<int64_t>::max()) return "use " + std::to_string(min) + " or more";
  return "use " + std::to_string(min) + " to " + std::to_string(max);
}

std::string shown(const std::string& text) { return text.empty() ? "(empty)" : "'" + text + "'"; }

// `text` as a number (strtod's whole text), or false.
bool parse_number(const std::string& text, double& out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0';
}

std::string whole_problem(const std::string& text, int64_t min, int64_t max, const std::string& words) {
  const std::string use = words.empty() ? whole_range_words(min, max) : words;
  errno = 0;
  char* end = nullptr;
  const long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && end != text.c_str() && *end == '\0' && errno == 0)
    return v < min || v > max ? text + " is out of range; " + use : "";
  double d = 0;
  if (!parse_number(text, d)) return shown(text) + " is not a whole number; " + use;
  if (std::isnan(d)) return "NaN is not a number; " + use;
  if (std::isfinite(d) && d == std::floor(d) && errno != ERANGE && std::abs(d) < 9.2e18)
    return "";  // 1e3: a whole number CLI11 converts
  if (std::isfinite(d) && d != std::floor(d) && std::abs(d) < 9.2e18) return text + " is not a whole number; " + use;
  return text + " is beyond what this option can hold; " + use;
}

}  // namespace

std::string number_problem(const std::string& text, double min, double max, bool min_exclusive) {
  const std::string use = range_words(min, max, min_exclusive);
  double v = 0;
  if (!parse_number(text, v)) return shown(text) + " is not a number; " + use;
  if (std::isnan(v)) return "NaN is not a number; " + use;
  if (std::isinf(v) || errno == ERANGE) return text + " is beyond what this option can hold; " + use;
  if (v < min || (min_exclusive && v == min) || v > max) return text + " is out of range; " + use;
  return "";
}

CLI::Validator number_in(double min, double max, bool min_exclusive) {
  const std::string words = range_words(min, max, min_exclusive).substr(4);  // "0 to 2", "1 or more"
  return CLI::Validator([=](std::string& text) { return number_problem(text, min, max, min_exclusive); }, words);
}

CLI::Validator whole_in(int64_t min, int64_t max, const std::string& use) {
  const std::string words = (use.empty() ? whole_range_words(min, max) : use).substr(4);
  return CLI::Validator([=](std::string& text) { return whole_problem(text, min, max, use); }, words);
}

int machine_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const std::string& help) {
  const int cores = machine_cores();
  auto* option = cmd->add_option("--threads", threads, help + "; more than this machine's cores are its cores");
  // A count above the cores is made the cores first (the transform runs before the check), so the
  // check refuses only what is no count: NaN, a fraction, a negative number, one past int64.
  const std::string use = "use 0 (every core) to " + std::to_string(cores) + " (this machine's cores)";
  option->check(whole_in(0, std::numeric_limits<int64_t>::max(), use));
  option->transform(CLI::Validator(
      [cores](std::string& text) {
        const long long n = std::strtoll(text.c_str(), nullptr, 10);
        if (n > cores) {
          std::cerr << "hsm: note: --threads " << text << " is more than this machine's " << cores
                    << (cores == 1 ? " core" : " cores") << "; using " << cores << "\n";
          text = std::to_string(cores);
        }
        return std::string();
      },
      ""));
  return option;
}

}  // namespace hsm::cli
