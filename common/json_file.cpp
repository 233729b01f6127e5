#include "common/json_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/units.hpp"

namespace tpuemu {
namespace {

std::string byte_limit_text(std::size_t bytes) {
  return format_quantity(static_cast<double>(bytes), Quantity::kBytes);
}

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

InputFileError::InputFileError(std::string file, const std::string& message)
    : std::runtime_error(fmt::format("{}: {}", file, message)), file_(std::move(file)), message_(message) {}

std::string read_input_file(const std::string& path, std::size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputFileError(path, errno == ENOENT ? std::string("cannot open file: no such file")
                                               : fmt::format("cannot open file: {}", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) throw InputFileError(path, "is a directory, not a file");
  if (!S_ISREG(st.st_mode)) throw InputFileError(path, "is not a regular file");
  const auto too_big = [&](std::uint64_t size) {
    return InputFileError(path,
                          fmt::format("file is {} bytes, more than the limit of {}", size, byte_limit_text(max_bytes)));
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_big(static_cast<std::uint64_t>(st.st_size));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputFileError(path, "cannot open file");
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw InputFileError(path, "read error");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > max_bytes)
    throw InputFileError(path,
                         fmt::format("file grew beyond the limit of {} while being read", byte_limit_text(max_bytes)));
  return text;
}

nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    throw InputFileError(origin, fmt::format("{} bytes of JSON, more than the limit of {}", text.size(),
                                             byte_limit_text(limits.max_bytes)));
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
