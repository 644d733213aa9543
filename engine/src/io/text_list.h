#pragma once
// The CLI's small list spellings ("3,4:1", "0:0.5:1.2,2:0:1"), split and read alike by
// parse_knock_outs and parse_ab_edits (internal header, torch-free).
#include <cstdint>
#include <string>
#include <vector>

namespace hsm {

// Every item between separators, without the spaces around it, empty ones included
// ("a, ,b" → {"a", "", "b"}; "" → {""}): the caller refuses an empty item with its own message.
std::vector<std::string> split_list(const std::string& text, char separator = ',');

// A whole non-negative decimal number ("3"); false for "", "-1", "3x", "1.5" or past int64.
bool parse_index(const std::string& text, int64_t& out);

}  // namespace hsm
