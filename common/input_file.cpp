#include "common/input_file.hpp"

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

}  // namespace

InputFileError::InputFileError(std::string file, const std::string& message)
    : std::runtime_error(fmt::format("{}: {}", file, message)), file_(std::move(file)), message_(message) {}

std::uint64_t check_input_file(const std::string& path, std::size_t max_bytes) {
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
  return static_cast<std::uint64_t>(st.st_size);
}

std::string read_input_file(const std::string& path, std::size_t max_bytes) {
  const auto size = static_cast<std::size_t>(check_input_file(path, max_bytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputFileError(path, "cannot open file");
  // One byte more than stat promised tells a file that grew while being read.
  std::string text(size + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw InputFileError(path, "read error");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > size) throw InputFileError(path, "the file grew while being read");
  return text;
}

}  // namespace tpuemu
