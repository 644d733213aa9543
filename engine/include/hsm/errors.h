#pragma once
// What the user reads when something fails: one line that names the input and the fix, never
// a library's own text (issue 19). The CLI and the studio show every caught exception through
// error_text(); the readers phrase JSON errors through json_error_text().
#include <exception>
#include <string>

namespace hsm {

// An exception as one line for a person: the first line of its message (LibTorch appends a
// stack trace), without a library's bracketed tag ("[enforce fail at alloc_cpu.cpp:75]"); an
// allocation that failed ("can't allocate memory", std::bad_alloc) says so and what to shrink.
std::string error_text(const std::exception& e);

// nlohmann::json's error message in plain words: "[json.exception.parse_error.101] parse error
// at line 2, column 1: syntax error while parsing object - unexpected end of input; expected
// '}'" becomes "line 2, column 1: unexpected end of input; expected '}'".
std::string json_error_text(const std::string& what);

}  // namespace hsm
