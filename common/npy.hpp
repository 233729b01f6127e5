// NumPy .npy files: reading (format versions 1.0, 2.0, 3.0) and writing
// (version 1.0, byte for byte as current numpy's np.save writes it) of plain
// C-order arrays of the element types the emulator exchanges with numpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/npy_bytes.hpp"

namespace tpuemu {

// A file or byte buffer that is not a readable .npy array, or an NpyArray that
// cannot be written. what() reads "<file>: <what is wrong>".
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class NpyDtype { kFloat32, kFloat64, kUint8, kUint16, kUint32, kInt32, kInt64, kBool };

// numpy's name of the type: "float32", "uint16", "bool", ...
std::string_view to_string(NpyDtype dtype);
// The little-endian descr numpy writes in a header: "<f4", "|u1", "<u2", "|b1", ...
std::string_view npy_descr(NpyDtype dtype);
std::size_t element_size(NpyDtype dtype);

// Product of the dimensions; 1 for the empty shape (a scalar). Throws NpyError
// if the product overflows 64 bits.
std::uint64_t element_count(std::span<const std::uint64_t> shape);

// Contract: `data` holds element_count(shape) * element_size(dtype) bytes, the
// elements in C order (last index fastest), each little-endian. Bool elements
// are bytes 0 or 1. read/parse always produce such an array; write/serialize
// check it.
struct NpyArray {
  NpyDtype dtype = NpyDtype::kFloat32;
  std::vector<std::uint64_t> shape;
  NpyBytes data;

  [[nodiscard]] std::uint64_t element_count() const { return tpuemu::element_count(shape); }

  // Views of `data` as elements. Each throws NpyError unless `dtype` is the
  // matching type and `data` holds exactly element_count() elements. A view
  // is invalidated by anything that reallocates `data`. (No bool view: a byte
  // other than 0 or 1 read as bool is undefined behaviour; use data directly.)
  [[nodiscard]] std::span<const float> as_f32() const;
  [[nodiscard]] std::span<const double> as_f64() const;
  [[nodiscard]] std::span<const std::uint8_t> as_u8() const;
  [[nodiscard]] std::span<const std::uint16_t> as_u16() const;
  [[nodiscard]] std::span<const std::uint32_t> as_u32() const;
  [[nodiscard]] std::span<const std::int32_t> as_i32() const;
  [[nodiscard]] std::span<const std::int64_t> as_i64() const;

  friend bool operator==(const NpyArray&, const NpyArray&) = default;
};

// Copies element_count(shape) elements of `dtype` from `elements` (which may
// be null only when that count is 0).
NpyArray make_npy(NpyDtype dtype, std::vector<std::uint64_t> shape, const void* elements);

// Parses a whole .npy file held in `bytes`; `origin` (normally the file name)
// starts every error message.
// Contract: any input either parses or throws NpyError; nothing is read
// outside `bytes`, and nothing is allocated beyond what `bytes` can fill.
//  * Header: the dict literal numpy writes, keys 'descr', 'fortran_order',
//    'shape' in any order, each exactly once, no other keys; strings in single
//    or double quotes; shape a tuple of non-negative integers ("()" is a
//    scalar, a one-element tuple needs its comma: "(8,)").
//  * dtype: one of NpyDtype in little-endian form, or big-endian ('>f4' ...),
//    which is converted to little-endian on reading. Single-byte types may be
//    written with '|', '<' or '>'.
//  * fortran_order must be False.
//  * The data must be exactly as long as the shape says: no truncation, no
//    trailing bytes.
NpyArray parse_npy(std::span<const std::uint8_t> bytes, const std::string& origin);
NpyArray read_npy(const std::string& path);
// read_npy, with the data of a big file (>= 1 MiB) mapped privately instead
// of read (NpyBytes): the same array, the same errors. Falls back to reading
// where a mapping cannot serve (not a regular file, data not 64-byte aligned
// in the file, big-endian data). Contract: nothing truncates or rewrites the
// file while the array's data is mapped (a truncated mapping faults).
NpyArray map_npy(const std::string& path);

// Format 1.0 with numpy's header: keys sorted, numpy's spare space for growing
// the first axis, padded with spaces so the data starts at a multiple of 64
// bytes. Throws NpyError if `array` breaks
// the NpyArray contract (errors of serialize_npy start with "npy array: ").
std::vector<std::uint8_t> serialize_npy(const NpyArray& array);
void write_npy(const std::string& path, const NpyArray& array);

}  // namespace tpuemu
