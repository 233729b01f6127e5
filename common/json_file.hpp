// The one bounded reader of the JSON files tpuemu takes as input (chip
// presets, --chip-file, run-case's case.json): a size limit checked before
// reading and a nesting limit checked before nlohmann builds anything.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/input_file.hpp"

namespace tpuemu {

struct JsonLimits {
  std::size_t max_bytes = std::size_t{1} << 20;
  int max_depth = 64;  // objects and arrays nested in each other, the outermost one counting 1
};

// Parses `text` (named `origin` in errors) with the limits. Throws
// InputFileError: "parse error at line L, column C: ..." for malformed JSON or
// nesting deeper than limits.max_depth (refused before parsing, so nothing
// recursive ever sees it), or a size message.
nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits = {});

// read_input_file + parse_json.
nlohmann::json read_json_file(const std::string& path, const JsonLimits& limits = {});

}  // namespace tpuemu
