// The one bounded reader of the JSON files tpuemu takes as input (chip
// presets, --chip-file, run-case's case.json): a size limit checked before
// reading and a nesting limit checked before nlohmann builds anything.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tpuemu {

// A file that cannot be read or is not acceptable JSON. what() reads
// "<file>: <message>"; file() and message() give the parts.
class InputFileError : public std::runtime_error {
 public:
  InputFileError(std::string file, const std::string& message);
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string message_;
};

struct JsonLimits {
  std::size_t max_bytes = std::size_t{1} << 20;
  int max_depth = 64;  // objects and arrays nested in each other, the outermost one counting 1
};

// The whole of a regular file of at most `max_bytes` bytes. Contract: checks
// the size with stat before reading and reads no more than max_bytes + 1
// bytes (a file growing meanwhile is still refused). Throws InputFileError if
// the file is missing, not a regular file, too large or unreadable.
std::string read_input_file(const std::string& path, std::size_t max_bytes);

// Parses `text` (named `origin` in errors) with the limits. Throws
// InputFileError: "parse error at line L, column C: ..." for malformed JSON or
// nesting deeper than limits.max_depth (refused before parsing, so nothing
// recursive ever sees it), or a size message.
nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits = {});

// read_input_file + parse_json.
nlohmann::json read_json_file(const std::string& path, const JsonLimits& limits = {});

}  // namespace tpuemu
