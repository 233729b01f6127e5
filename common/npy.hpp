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
  std::vector<std::uint8_t> data;

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

// A read-only view of C-order array data held elsewhere (an NpyArray, or a
// mapped .npy file: common/npy_file.hpp), under the NpyArray contract. Valid
// while what it views lives and is not reallocated.
struct NpyView {
  NpyDtype dtype = NpyDtype::kFloat32;
  std::span<const std::uint64_t> shape;
  std::span<const std::uint8_t> data;

  NpyView() = default;
  NpyView(NpyDtype d, std::span<const std::uint64_t> s, std::span<const std::uint8_t> bytes)
      : dtype(d), shape(s), data(bytes) {}
  NpyView(const NpyArray& array) : dtype(array.dtype), shape(array.shape), data(array.data) {}  // NOLINT: a view of it

  [[nodiscard]] std::uint64_t element_count() const { return tpuemu::element_count(shape); }
  // As NpyArray's views.
  [[nodiscard]] std::span<const float> as_f32() const;
};

// A copy of what `view` shows (its data in huge pages when it is big:
// common/huge_pages.hpp).
NpyArray copy_array(const NpyView& view);

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

// A .npy file whose header is read and checked as read_npy checks the whole
// file (the data's length included), its data left in the file and read on
// demand: for an array only compared or converted piece by piece, which
// then never needs a buffer of its size.
struct NpyFileHeader {
  std::string path;
  NpyDtype dtype = NpyDtype::kFloat32;
  std::vector<std::uint64_t> shape;
  std::uint64_t data_offset = 0;  // in the file
  std::uint64_t data_bytes = 0;
  bool big_endian = false;  // the file's; read_npy_data returns little-endian elements
};
// Throws NpyError with read_npy's message for a file read_npy refuses.
NpyFileHeader read_npy_header(const std::string& path);
// Reads data bytes [offset, offset + out.size()) of `file` into `out`, as
// little-endian elements. Contract: offset and out.size() are multiples of
// the element size and the range lies within the data. Throws NpyError if
// the file cannot be read or has become shorter.
void read_npy_data(const NpyFileHeader& file, std::uint64_t offset, std::span<std::uint8_t> out);

// Format 1.0 with numpy's header: keys sorted, numpy's spare space for growing
// the first axis, padded with spaces so the data starts at a multiple of 64
// bytes. Throws NpyError if `array` breaks
// the NpyArray contract (errors of serialize_npy start with "npy array: ").
std::vector<std::uint8_t> serialize_npy(const NpyArray& array);
void write_npy(const std::string& path, const NpyArray& array);

// An .npy file written piece by piece, for an array that never exists whole
// on the host: the header when opened, then the data in C order (append),
// then finish(), which checks that exactly the shape's bytes came and cuts a
// longer existing file to length. The same bytes as write_npy of the whole
// array (write_npy is built on it). Throws NpyError: the file cannot be
// opened, a write fails, more data than the shape holds, or finish() with
// less. Destroyed unfinished, the file keeps what was written (incomplete).
class NpyWriter {
 public:
  NpyWriter(const std::string& path, NpyDtype dtype, std::vector<std::uint64_t> shape);
  NpyWriter(const NpyWriter&) = delete;
  NpyWriter& operator=(const NpyWriter&) = delete;
  ~NpyWriter();
  void append(std::span<const std::uint8_t> data);
  void finish();

 private:
  void write_all(std::span<const std::uint8_t> bytes);

  std::string path_;
  int fd_ = -1;
  std::uint64_t header_bytes_ = 0;
  std::uint64_t data_bytes_ = 0;
  std::uint64_t written_ = 0;
};

}  // namespace tpuemu
