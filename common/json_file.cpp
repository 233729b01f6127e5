#include "common/json_file.hpp"

#include <fmt/format.h>

#include "common/units.hpp"

namespace tpuemu {
namespace {

// Refuses nesting deeper than `max_depth` with the line and column of the
// first bracket too many. Strings are skipped the way the JSON grammar
// delimits them, so on every prefix nlohmann accepts this counts the depth
// nlohmann would reach; on malformed text nlohmann stops at the first error,
// inside a prefix this scan has already bounded.
void check_depth(std::string_view text, const std::string& origin, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  std::size_t line = 1;
  std::size_t column = 0;
  for (const char c : text) {
    if (c == '\n') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        if (++depth > max_depth) {
          throw InputFileError(origin, fmt::format("parse error at line {}, column {}: objects and arrays nested "
                                                   "more than {} deep",
                                                   line, column, max_depth));
        }
        break;
      case '}':
      case ']':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    throw InputFileError(origin, fmt::format("{} bytes of JSON, more than the limit of {}", text.size(),
                                             format_quantity(static_cast<double>(limits.max_bytes), Quantity::kBytes)));
  }
  check_depth(text, origin, limits.max_depth);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann reports "[json.exception.parse_error.101] parse error at line L, column C: ..."
    const std::string what = e.what();
    const auto pos = what.find("] ");
    throw InputFileError(origin, pos == std::string::npos ? what : what.substr(pos + 2));
  }
}

nlohmann::json read_json_file(const std::string& path, const JsonLimits& limits) {
  return parse_json(read_input_file(path, limits.max_bytes), path, limits);
}

}  // namespace tpuemu
