#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "api/result.hpp"

namespace tpuemu::api {

std::string compare_bits(const NpyArray& got, const NpyArray& expected) {
  if (got.shape != expected.shape) {
    return fmt::format("shape [{}] differs from the expected [{}]", fmt::join(got.shape, ","),
                       fmt::join(expected.shape, ","));
  }
  if (got.dtype != expected.dtype || got.data.size() != expected.data.size()) {
    return fmt::format(
        "dtype {} differs from the expected file's {} (raw bits of bf16/f8 outputs compare with a "
        "file named *.bits.npy)",
        to_string(got.dtype), to_string(expected.dtype));
  }
  const std::uint64_t count = got.element_count();
  if (got.data == expected.data) return fmt::format("bit-exact ({} elements)", count);
  const std::size_t width = got.data.size() / std::max<std::uint64_t>(1, count);
  std::uint64_t differing = 0;
  std::uint64_t first = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (std::memcmp(&got.data[i * width], &expected.data[i * width], width) != 0) {
      if (differing++ == 0) first = i;
    }
  }
  if (differing == 0) return fmt::format("bit-exact ({} elements)", count);
  std::string detail;
  if (got.dtype == NpyDtype::kFloat32) {
    detail = fmt::format(": got {} where {} was expected", got.as_f32()[first], expected.as_f32()[first]);
  }
  return fmt::format("{} of {} elements differ, the first at flat index {}{}", differing, got.element_count(), first,
                     detail);
}

}  // namespace tpuemu::api
