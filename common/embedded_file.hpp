// A text file compiled into the binary (see cmake/EmbedFiles.cmake).
#pragma once

#include <span>
#include <string_view>

namespace tpuemu {

struct EmbeddedFile {
  std::string_view stem;  // file name without directory and extension
  std::string_view path;  // path relative to the source tree
  std::string_view content;
};

// The chip presets of configs/chips/, in name order.
std::span<const EmbeddedFile> embedded_chip_presets();

}  // namespace tpuemu
