// libFuzzer target: arbitrary bytes as a .npy file. parse_npy (the bytes in
// memory) and read_npy (the same bytes as a file) must agree: both refuse
// with an NpyError, or both return the same array, which keeps the NpyArray
// contract (data as long as the shape says, bools 0 or 1) and survives
// serialize_npy -> parse_npy unchanged. Any other exception, a crash, a
// sanitizer report or a trap is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>

#include "common/npy.hpp"

namespace {

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "fuzz_npy: %s does not hold: %s\n", property, detail.c_str());
  __builtin_trap();
}

// One scratch file per fuzzing process, removed when it exits (registered
// after `path` is built, so the removal runs before `path` is destroyed).
const std::string& scratch_path() {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("tpuemu_fuzz_npy_" + std::to_string(::getpid()) + ".npy")).string();
  [[maybe_unused]] static const int cleanup = std::atexit([] { std::remove(scratch_path().c_str()); });
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpuemu;
  const std::string& path = scratch_path();
  const std::span<const std::uint8_t> bytes(data, size);

  std::optional<NpyArray> parsed;
  std::string parse_error;
  try {
    parsed = parse_npy(bytes, path);
  } catch (const NpyError& e) {
    parse_error = e.what();
  }

  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) broken("the scratch file can be written", path);
  }
  std::optional<NpyArray> read;
  std::string read_error;
  try {
    read = read_npy(path);
  } catch (const NpyError& e) {
    read_error = e.what();
  }
  if (parsed.has_value() != read.has_value()) {
    broken("parse_npy and read_npy agree", parsed ? "read_npy: " + read_error : "parse_npy: " + parse_error);
  }
  if (!parsed) return 0;
  if (!(*parsed == *read)) broken("parse_npy(b) == read_npy(file of b)", "arrays differ");

  const NpyArray& a = *parsed;
  if (a.data.size() != a.element_count() * element_size(a.dtype)) broken("data size == shape x element size", "");
  if (a.dtype == NpyDtype::kBool) {
    for (const std::uint8_t b : a.data) {
      if (b > 1) broken("bool elements are 0 or 1", std::to_string(b));
    }
  }
  const std::vector<std::uint8_t> file = serialize_npy(a);
  if (!(parse_npy(file, "reserialized.npy") == a)) broken("parse_npy(serialize_npy(a)) == a", "");
  return 0;
}
