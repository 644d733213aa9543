#pragma once
// The ranges of the CLI's numeric options, declared once (issue 65): every number `hsm` takes on
// its command line is checked by one of these validators before the command runs. They refuse
// NaN, infinities and values beyond the range, and say what to use in words ("--threshold: nan
// is not a number; use 0 to 2"), never CLI11's "[0 - 1.79769e+308]" bound of 300 digits.
// `hsm train`'s own settings are checked by their declaration (hsm/settings.h) the same way.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>

namespace hsm::cli {

// A finite number in [min, max] ((min, max] when min_exclusive). max = infinity: "MIN or more".
CLI::Validator number_in(double min, double max = std::numeric_limits<double>::infinity(), bool min_exclusive = false);
// A whole number in [min, max]; max = INT64_MAX: "MIN or more". `use`: the range in other words
// ("use 0 (random) to 9223372036854775807").
CLI::Validator whole_in(int64_t min, int64_t max = std::numeric_limits<int64_t>::max(), const std::string& use = "");

// What a validator above says of `text`, or "" when it takes it (for values not parsed by CLI11,
// e.g. a list's items): the same words.
std::string number_problem(const std::string& text, double min, double max, bool min_exclusive = false);

// The cores this machine has (std::thread::hardware_concurrency, at least 1).
int machine_cores();
// --threads N on cmd: 0 (every core, the default) up to this machine's cores. A larger count is
// used as the machine's cores, with a note on stderr naming both (issue 65: 1024 threads on two
// cores made four tokens take a minute).
CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const std::string& help = "CPU threads (default: all cores)");

}  // namespace hsm::cli
