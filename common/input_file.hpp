// Reading the files users give tpuemu (programs, images, .npy arrays, chip
// and case JSON): a regular file of bounded size, checked before reading, so
// a directory, a device such as /dev/zero or a file far too large is refused
// with its name instead of read until memory runs out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tpuemu {

// An input file that cannot be read, or whose contents are not acceptable. what() reads
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

// The whole of a regular file of at most `max_bytes` bytes. Contract: checks
// the size with stat before reading and reads no more than max_bytes + 1
// bytes (a file growing meanwhile is still refused). Throws InputFileError if
// the file is missing, not a regular file, too large or unreadable.
std::string read_input_file(const std::string& path, std::size_t max_bytes);

// The size of `path` if it is a regular file of at most `max_bytes` bytes;
// throws InputFileError as read_input_file does. For readers that stream a
// file themselves (.npy arrays straight into their buffer).
std::uint64_t check_input_file(const std::string& path, std::size_t max_bytes);

// Size limits of the input kinds (bytes).
inline constexpr std::size_t kMaxProgramTextBytes = std::size_t{256} << 20;  // LLO text (dumps are a few MB)
inline constexpr std::size_t kMaxNpyBytes = std::size_t{64} << 30;           // .npy arrays (HBM of a large chip)

}  // namespace tpuemu
