#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "api/result.hpp"

namespace tpuemu::api {
namespace {

std::string compare_whole(const NpyArray& got, BitComparison comparison) {
  for (std::uint64_t at = 0; at < got.data.size(); at += kOutputPieceBytes) {
    comparison.add(
        std::span<const std::uint8_t>(got.data).subspan(at, std::min(kOutputPieceBytes, got.data.size() - at)));
  }
  return comparison.verdict();
}

}  // namespace

BitComparison::BitComparison(NpyDtype dtype, const std::vector<std::uint64_t>& shape, NpyDtype expected_dtype,
                             std::span<const std::uint64_t> expected_shape, std::uint64_t expected_bytes)
    : dtype_(dtype), count_(element_count(shape)), bytes_(expected_bytes) {
  if (!std::ranges::equal(shape, expected_shape)) {
    mismatch_ =
        fmt::format("shape [{}] differs from the expected [{}]", fmt::join(shape, ","), fmt::join(expected_shape, ","));
  } else if (dtype != expected_dtype || count_ * element_size(dtype) != expected_bytes) {
    mismatch_ = fmt::format(
        "dtype {} differs from the expected file's {} (raw bits of bf16/f8 outputs compare with a "
        "file named *.bits.npy)",
        to_string(dtype), to_string(expected_dtype));
  }
  if (!mismatch_.empty()) bytes_ = count_ * element_size(dtype);
}

BitComparison::BitComparison(NpyDtype dtype, const std::vector<std::uint64_t>& shape, const NpyView& expected)
    : BitComparison(dtype, shape, expected.dtype, expected.shape, expected.data.size()) {
  viewed_ = expected.data;
}

BitComparison::BitComparison(NpyDtype dtype, const std::vector<std::uint64_t>& shape, const NpyFileHeader& expected)
    : BitComparison(dtype, shape, expected.dtype, expected.shape, expected.data_bytes) {
  file_ = &expected;
}

void BitComparison::add(std::span<const std::uint8_t> got) {
  const std::size_t width = element_size(dtype_);
  if (got.size() % width != 0 || got.size() > bytes_ - at_) {
    throw std::logic_error(
        fmt::format("BitComparison::add: {} bytes at {} of {} ({}-byte elements)", got.size(), at_, bytes_, width));
  }
  if (!mismatch_.empty()) {
    at_ += got.size();
    return;
  }
  const std::uint8_t* expected = nullptr;
  if (file_ == nullptr) {
    expected = viewed_.data() + at_;
  } else {
    piece_.resize(got.size());
    read_npy_data(*file_, at_, piece_);
    expected = piece_.data();
  }
  const std::uint8_t* const mine = got.data();
  if (std::memcmp(mine, expected, got.size()) != 0) {
    for (std::size_t i = 0; i < got.size(); i += width) {
      if (std::memcmp(mine + i, expected + i, width) == 0) continue;
      if (differing_++ == 0) {
        first_ = (at_ + i) / width;
        if (dtype_ == NpyDtype::kFloat32) {
          std::memcpy(&first_got_, mine + i, sizeof first_got_);
          std::memcpy(&first_expected_, expected + i, sizeof first_expected_);
        }
      }
    }
  }
  at_ += got.size();
}

std::string BitComparison::verdict() const {
  if (at_ != bytes_) {
    throw std::logic_error(fmt::format("BitComparison::verdict: {} of {} bytes compared", at_, bytes_));
  }
  if (!mismatch_.empty()) return mismatch_;
  if (differing_ == 0) return fmt::format("bit-exact ({} elements)", count_);
  std::string detail;
  if (dtype_ == NpyDtype::kFloat32) detail = fmt::format(": got {} where {} was expected", first_got_, first_expected_);
  return fmt::format("{} of {} elements differ, the first at flat index {}{}", differing_, count_, first_, detail);
}

std::string compare_bits(const NpyArray& got, const NpyArray& expected) {
  return compare_whole(got, BitComparison(got.dtype, got.shape, NpyView(expected)));
}

std::string compare_bits(const NpyArray& got, const NpyFileHeader& expected) {
  return compare_whole(got, BitComparison(got.dtype, got.shape, expected));
}

}  // namespace tpuemu::api
