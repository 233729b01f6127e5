#include "chip/host_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "common/host_pool.hpp"
#include "common/huge_pages.hpp"
#include "common/numerics.hpp"
#include "common/types.hpp"

namespace tpuemu::chip {
namespace {

enum class Element { k32Bit, kBf16, kF8 };

struct Layout {
  Element element;
  std::uint64_t rows;  // of the tiled 2-D view
  std::uint64_t cols;
  std::uint64_t count;  // logical elements
  bool one_d;           // 1-D: element i is (i / 128, i % 128) of a [ceil(n/128), 128] view (layout T(1024)...)
};

Layout layout_of(const OperandBinding& b) {
  Layout l{};
  if (b.dtype == "f32" || b.dtype == "s32" || b.dtype == "u32") {
    l.element = Element::k32Bit;
  } else if (b.dtype == "bf16") {
    l.element = Element::kBf16;
  } else if (b.dtype == "f8e4m3fn") {
    l.element = Element::kF8;
  } else {
    throw std::invalid_argument(
        fmt::format("operand {}: dtype {} is not supported (f32, s32, u32, bf16, f8e4m3fn)", b.index, b.dtype));
  }
  if (b.shape.size() == 2) {
    l.rows = b.shape[0];
    l.cols = b.shape[1];
    l.count = l.rows * l.cols;
  } else if (b.shape.size() <= 1) {
    l.one_d = true;
    l.count = b.shape.empty() ? 1 : b.shape[0];
    l.rows = (l.count + 127) / 128;
    l.cols = 128;
  } else {
    throw std::invalid_argument(
        fmt::format("operand {}: rank-{} arrays are not supported (1-D and 2-D are)", b.index, b.shape.size()));
  }
  return l;
}

std::uint64_t tile_bytes(Element e) {
  return e == Element::k32Bit ? 4096 : e == Element::kBf16 ? 2048 : 1024;
}

// Byte offset of element (r, c) of the tiled 2-D view in the device layout.
std::uint64_t device_offset(const Layout& l, std::uint64_t r, std::uint64_t c) {
  const std::uint64_t tiles_per_row = ceil_div(l.cols, 128);
  const std::uint64_t tile = (r / 8) * tiles_per_row + c / 128;
  const std::uint64_t tr = r % 8;
  const std::uint64_t tc = c % 128;
  switch (l.element) {
    case Element::k32Bit:
      return tile * 4096 + (tr * 128 + tc) * 4;
    case Element::kBf16:
      return tile * 2048 + ((tr / 2) * 128 + tc) * 4 + (tr % 2) * 2;
    case Element::kF8:
      return tile * 1024 + ((tr / 4) * 128 + tc) * 4 + (tr % 4);
  }
  return 0;
}

// Calls run(device_offset, host_index, n) for every run of n consecutive
// elements of one row of the tiled 2-D view within one tile (n <= 128), in
// row-major order; element j of a run is at device_offset + 4 * j in every
// layout (one 32-bit word per column of a tile row).
template <class Run>
void for_each_run(const Layout& l, Run run, std::uint64_t first_row = 0, std::uint64_t end_row = UINT64_MAX) {
  for (std::uint64_t r = first_row; r < std::min(end_row, l.rows); ++r) {
    const std::uint64_t row_length = l.one_d ? std::min<std::uint64_t>(128, l.count - r * 128) : l.cols;
    const std::uint64_t first = l.one_d ? r * 128 : r * l.cols;
    for (std::uint64_t c = 0; c < row_length; c += 128) {
      run(device_offset(l, r, c), first + c, std::min<std::uint64_t>(128, row_length - c));
    }
  }
}

// bf16: calls pair(device_offset, even, even_n, odd, odd_n) for every run of
// one row pair (r even, r + 1) of the tiled 2-D view within one tile: word j
// at device_offset + 4 * j holds element j of the even run (host index
// even + j, j < even_n) in its low half and of the odd run in its high half
// (odd_n is 0 past the last row).
template <class Pair>
void for_each_row_pair(const Layout& l, Pair pair, std::uint64_t first_row = 0, std::uint64_t end_row = UINT64_MAX) {
  const auto length = [&](std::uint64_t r) {
    if (r >= l.rows) return std::uint64_t{0};
    return l.one_d ? std::min<std::uint64_t>(128, l.count - r * 128) : l.cols;
  };
  const auto first = [&](std::uint64_t r) { return l.one_d ? r * 128 : r * l.cols; };
  for (std::uint64_t r = first_row; r < std::min(end_row, l.rows); r += 2) {
    const std::uint64_t even_length = length(r);
    const std::uint64_t odd_length = length(r + 1);
    for (std::uint64_t c = 0; c < even_length; c += 128) {
      const std::uint64_t n = std::min<std::uint64_t>(128, even_length - c);
      const std::uint64_t m = c < odd_length ? std::min<std::uint64_t>(128, odd_length - c) : 0;
      pair(device_offset(l, r, c), first(r) + c, n, first(r + 1) + c, m);
    }
  }
}

// Calls rows(first_row, end_row) for ranges of whole 8-row tile rows that
// cover the view, on the host threads (common/host_pool.hpp) when the array
// is large: each range writes only its own bytes, so the result is the same.
template <class Rows>
void over_tile_rows(const Layout& l, Rows rows, bool parallel = true) {
  constexpr std::uint64_t kParallelFrom = std::uint64_t{1} << 20;  // elements
  const std::uint64_t tile_rows = ceil_div(l.rows, 8);
  const std::uint64_t parts =
      !parallel || l.count < kParallelFrom ? 1 : std::min<std::uint64_t>(tile_rows, 4 * tpuemu::host_threads());
  parallel_for(parts, [&](std::size_t p) { rows(tile_rows * p / parts * 8, tile_rows * (p + 1) / parts * 8); });
}

// A full row pair of 128 columns as 128 device words (vectorisable).
inline std::uint32_t bf16_bits_of(std::uint32_t f32_bits) {
  // f32_to_bf16_bits without branches (common/numerics.hpp): nearest even,
  // NaNs quiet and truncated.
  const std::uint32_t rounded = (f32_bits + 0x7FFFU + ((f32_bits >> 16) & 1U)) >> 16;
  const std::uint32_t quiet = (f32_bits | 0x0040'0000U) >> 16;
  return static_cast<std::int32_t>(f32_bits & 0x7FFF'FFFFU) > 0x7F80'0000 ? quiet : rounded;
}
void pack_bf16_pair(const std::uint32_t* __restrict even, const std::uint32_t* __restrict odd,
                    std::uint32_t* __restrict words) {
  for (int j = 0; j < 128; ++j) words[j] = bf16_bits_of(even[j]) | (bf16_bits_of(odd[j]) << 16);
}
void unpack_bf16_pair(const std::uint32_t* __restrict words, std::uint32_t* __restrict even,
                      std::uint32_t* __restrict odd) {
  for (int j = 0; j < 128; ++j) {
    even[j] = words[j] << 16;
    odd[j] = words[j] & 0xFFFF'0000U;
  }
}

std::string shape_text(std::span<const std::uint64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// A float for messages: whole numbers in full (fmt's shortest form of 2^31 as
// a float is 2147483600), others in the shortest form that reads back.
std::string number_text(double v) {
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 0x1p64) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}
std::string number_text(float v) {
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 0x1p64F) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

}  // namespace

std::uint64_t device_bytes(const OperandBinding& binding) {
  const Layout l = layout_of(binding);
  return ceil_div(l.rows, 8) * ceil_div(l.cols, 128) * tile_bytes(l.element);
}

std::vector<std::uint8_t> to_device(const OperandBinding& binding, const NpyView& host, const std::string& origin,
                                    bool host_threads) {
  const Layout l = layout_of(binding);
  if (!std::ranges::equal(host.shape, binding.shape)) {
    throw std::invalid_argument(fmt::format("{}: shape {} does not match operand {} ({}[{}])", origin,
                                            shape_text(host.shape), binding.index, binding.dtype,
                                            fmt::join(binding.shape, ",")));
  }
  std::vector<std::uint8_t> device = zeroed_bytes(device_bytes(binding));
  std::uint8_t* const out = device.data();
  const std::uint8_t* const in = host.data.data();
  const auto wrong = [&](std::string_view accepted) {
    return std::invalid_argument(fmt::format("{}: dtype {} does not fit operand {} ({}); expected {}", origin,
                                             to_string(host.dtype), binding.index, binding.dtype, accepted));
  };
  switch (l.element) {
    case Element::k32Bit: {
      const bool ok = (binding.dtype == "f32" && host.dtype == NpyDtype::kFloat32) ||
                      (binding.dtype == "s32" && host.dtype == NpyDtype::kInt32) ||
                      (binding.dtype == "u32" && host.dtype == NpyDtype::kUint32);
      if (!ok) throw wrong(binding.dtype == "f32" ? "float32" : binding.dtype == "s32" ? "int32" : "uint32");
      over_tile_rows(
          l,
          [&](std::uint64_t r0, std::uint64_t r1) {
            for_each_run(
                l,
                [&](std::uint64_t at, std::uint64_t i, std::uint64_t n) { std::memcpy(out + at, in + i * 4, n * 4); },
                r0, r1);
          },
          host_threads);
      break;
    }
    case Element::kBf16:
      if (host.dtype == NpyDtype::kUint16) {
        over_tile_rows(
            l,
            [&](std::uint64_t r0, std::uint64_t r1) {
              for_each_run(
                  l,
                  [&](std::uint64_t at, std::uint64_t i, std::uint64_t n) {
                    for (std::uint64_t j = 0; j < n; ++j) std::memcpy(out + at + j * 4, in + (i + j) * 2, 2);
                  },
                  r0, r1);
            },
            host_threads);
      } else if (host.dtype == NpyDtype::kFloat32) {
        const float* values = host.as_f32().data();
        over_tile_rows(
            l,
            [&](std::uint64_t r0, std::uint64_t r1) {
              for_each_row_pair(
                  l,
                  [&](std::uint64_t at, std::uint64_t even, std::uint64_t n, std::uint64_t odd, std::uint64_t m) {
                    if (n == 128 && m == 128) {
                      std::array<std::uint32_t, 128> e;
                      std::array<std::uint32_t, 128> o;
                      std::array<std::uint32_t, 128> words;
                      std::memcpy(e.data(), values + even, sizeof e);
                      std::memcpy(o.data(), values + odd, sizeof o);
                      pack_bf16_pair(e.data(), o.data(), words.data());
                      std::memcpy(out + at, words.data(), sizeof words);
                      return;
                    }
                    for (std::uint64_t j = 0; j < n; ++j) {
                      const std::uint16_t bits = f32_to_bf16_bits(values[even + j]);
                      std::memcpy(out + at + j * 4, &bits, 2);
                    }
                    for (std::uint64_t j = 0; j < m; ++j) {
                      const std::uint16_t bits = f32_to_bf16_bits(values[odd + j]);
                      std::memcpy(out + at + j * 4 + 2, &bits, 2);
                    }
                  },
                  r0, r1);
            },
            host_threads);
      } else {
        throw wrong("uint16 (bf16 bits) or float32 (rounded to nearest even)");
      }
      break;
    case Element::kF8:
      if (host.dtype == NpyDtype::kUint8) {
        over_tile_rows(
            l,
            [&](std::uint64_t r0, std::uint64_t r1) {
              for_each_run(
                  l,
                  [&](std::uint64_t at, std::uint64_t i, std::uint64_t n) {
                    for (std::uint64_t j = 0; j < n; ++j) out[at + j * 4] = in[i + j];
                  },
                  r0, r1);
            },
            host_threads);
      } else if (host.dtype == NpyDtype::kFloat32) {
        const float* values = host.as_f32().data();
        over_tile_rows(
            l,
            [&](std::uint64_t r0, std::uint64_t r1) {
              for_each_run(
                  l,
                  [&](std::uint64_t at, std::uint64_t i, std::uint64_t n) {
                    for (std::uint64_t j = 0; j < n; ++j) out[at + j * 4] = f32_to_f8e4m3fn(values[i + j]);
                  },
                  r0, r1);
            },
            host_threads);
      } else {
        throw wrong("uint8 (float8_e4m3fn codes) or float32");
      }
      break;
  }
  return device;
}

std::uint32_t scalar_register(const OperandBinding& binding, const NpyArray& host, std::string_view element,
                              const std::string& origin) {
  // 1. One element: a float (held as a float32 where it is one, which keeps
  //    NaN payloads, and as a double, which every host float is exactly) or an integer.
  const bool bf16_bits = element == "bfloat16" && host.dtype == NpyDtype::kUint16;
  const bool f8_codes = element == "float8_e4m3fn" && host.dtype == NpyDtype::kUint8;
  const std::string host_text = fmt::format("{}, shape {}",
                                            bf16_bits  ? "bfloat16 bits as uint16"
                                            : f8_codes ? "float8_e4m3fn codes as uint8"
                                                       : std::string(to_string(host.dtype)),
                                            shape_text(host.shape));
  if (host.element_count() != 1) {
    throw std::invalid_argument(
        fmt::format("{}: the array has {} elements ({}), but by-value operand {} ({}[]) takes one", origin,
                    host.element_count(), host_text, binding.index, binding.dtype));
  }
  std::optional<float> single;  // a float32 value (float32, bf16, f8 elements)
  std::optional<double> real;   // any float element
  std::int64_t integer = 0;     // otherwise
  switch (host.dtype) {
    case NpyDtype::kFloat32:
      single = host.as_f32()[0];
      break;
    case NpyDtype::kFloat64:
      real = host.as_f64()[0];
      break;
    case NpyDtype::kUint16:
      if (bf16_bits) single = bf16_bits_to_f32(host.as_u16()[0]);
      integer = host.as_u16()[0];
      break;
    case NpyDtype::kUint8:
      if (f8_codes) single = f8e4m3fn_to_f32(host.as_u8()[0]);
      integer = host.as_u8()[0];
      break;
    case NpyDtype::kBool:
      integer = host.data.at(0) != 0 ? 1 : 0;
      break;
    case NpyDtype::kUint32:
      integer = host.as_u32()[0];
      break;
    case NpyDtype::kInt32:
      integer = host.as_i32()[0];
      break;
    case NpyDtype::kInt64:
      integer = host.as_i64()[0];
      break;
  }
  if (single) real = *single;
  const std::string value_text = single ? number_text(*single) : real ? number_text(*real) : fmt::format("{}", integer);
  const auto refuse = [&](std::string_view why) {
    return std::invalid_argument(fmt::format("{}: {} ({}) does not convert to operand {}'s dtype {}: {}", origin,
                                             value_text, host_text, binding.index, binding.dtype, why));
  };

  // 2. To an integer dtype: whole and in range.
  if (binding.dtype == "s32" || binding.dtype == "u32") {
    const bool is_signed = binding.dtype == "s32";
    const std::int64_t lo = is_signed ? INT32_MIN : 0;
    const std::int64_t hi = is_signed ? INT32_MAX : UINT32_MAX;
    const std::string range = fmt::format("it is outside {} to {}", lo, hi);
    if (real) {
      if (!std::isfinite(*real)) throw refuse("it is not a finite number");
      if (std::trunc(*real) != *real) throw refuse("it is not a whole number");
      if (*real < static_cast<double>(lo) || *real > static_cast<double>(hi)) throw refuse(range);
      integer = static_cast<std::int64_t>(*real);
    }
    if (integer < lo || integer > hi) throw refuse(range);
    return static_cast<std::uint32_t>(integer);
  }

  // 3. To a float dtype: through float32, exactly.
  if (binding.dtype != "f32" && binding.dtype != "bf16" && binding.dtype != "f8e4m3fn") {
    throw refuse("that dtype is not supported (f32, s32, u32, bf16, f8e4m3fn)");
  }
  float value = 0;
  if (single) {
    value = *single;
  } else if (real) {
    value = static_cast<float>(*real);
    if (!std::isnan(*real) && static_cast<double>(value) != *real) {
      throw refuse(fmt::format("it is not exactly representable (the nearest f32 is {})",
                               number_text(static_cast<double>(value))));
    }
  } else {
    value = static_cast<float>(integer);
    // |integer| <= 2^63, and 2^63 is no int64: the cast back is defined where it matters.
    if (value >= 0x1p63F || static_cast<std::int64_t>(value) != integer)
      throw refuse(fmt::format("it is not exactly representable (the nearest f32 is {})", number_text(value)));
  }
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if (binding.dtype == "f32") return bits;
  if (binding.dtype == "bf16") {
    const std::uint16_t b = f32_to_bf16_bits(value);
    if (!std::isnan(value) && std::bit_cast<std::uint32_t>(bf16_bits_to_f32(b)) != bits)
      throw refuse(
          fmt::format("it is not exactly representable (the nearest bf16 is {})", number_text(bf16_bits_to_f32(b))));
    return b;
  }
  if (std::isinf(value)) throw refuse("f8e4m3fn has no infinity");
  const std::uint8_t code = f32_to_f8e4m3fn(value);
  if (!std::isnan(value) && std::bit_cast<std::uint32_t>(f8e4m3fn_to_f32(code)) != bits) {
    throw refuse(fmt::format("it is not exactly representable (the nearest f8e4m3fn is {})",
                             number_text(f8e4m3fn_to_f32(code))));
  }
  return code;
}

NpyDtype host_dtype(const OperandBinding& binding, bool raw_bits) {
  switch (layout_of(binding).element) {
    case Element::k32Bit:
      return binding.dtype == "f32"   ? NpyDtype::kFloat32
             : binding.dtype == "s32" ? NpyDtype::kInt32
                                      : NpyDtype::kUint32;
    case Element::kBf16:
      return raw_bits ? NpyDtype::kUint16 : NpyDtype::kFloat32;
    case Element::kF8:
      return raw_bits ? NpyDtype::kUint8 : NpyDtype::kFloat32;
  }
  return NpyDtype::kFloat32;
}

namespace {

// Bytes per host element of what from_device gives.
std::uint64_t host_element_bytes(Element e, bool raw_bits) {
  return e == Element::k32Bit ? 4 : !raw_bits ? 4 : e == Element::kBf16 ? 2 : 1;
}

// The host index of the first element of row r of the tiled 2-D view (for
// r at or past the last row: the element count).
std::uint64_t first_host_index(const Layout& l, std::uint64_t r) {
  return std::min(l.count, r * l.cols);
}

// Converts rows r0..r1-1 of the tiled 2-D view (r0 a multiple of 8) from the
// device bytes `in`; host element i goes to out + (i - base) * width, where
// base = first_host_index(l, base_row). Touches only those rows' host bytes.
void convert_from_device(const Layout& l, const std::uint8_t* in, bool raw_bits, std::uint64_t r0, std::uint64_t r1,
                         std::uint64_t base_row, std::uint8_t* out_base) {
  const std::uint64_t width = host_element_bytes(l.element, raw_bits);
  std::uint8_t* const out = out_base;
  const std::uint64_t base = first_host_index(l, base_row);
  const auto at_index = [&](std::uint64_t i) { return out + (i - base) * width; };
  switch (l.element) {
    case Element::k32Bit:
      for_each_run(
          l, [&](std::uint64_t at, std::uint64_t i, std::uint64_t n) { std::memcpy(at_index(i), in + at, n * 4); }, r0,
          r1);
      return;
    case Element::kBf16:
      if (!raw_bits) {
        for_each_row_pair(
            l,
            [&](std::uint64_t at, std::uint64_t even, std::uint64_t n, std::uint64_t odd, std::uint64_t m) {
              if (n == 128 && m == 128) {
                std::array<std::uint32_t, 128> words;
                std::array<std::uint32_t, 128> e;
                std::array<std::uint32_t, 128> o;
                std::memcpy(words.data(), in + at, sizeof words);
                unpack_bf16_pair(words.data(), e.data(), o.data());
                std::memcpy(at_index(even), e.data(), sizeof e);
                std::memcpy(at_index(odd), o.data(), sizeof o);
                return;
              }
              for (std::uint64_t j = 0; j < n + m; ++j) {
                const bool high = j >= n;
                std::uint16_t bits = 0;
                std::memcpy(&bits, in + at + (high ? j - n : j) * 4 + (high ? 2 : 0), 2);
                const float v = bf16_bits_to_f32(bits);
                std::memcpy(at_index(high ? odd + j - n : even + j), &v, 4);
              }
            },
            r0, r1);
        return;
      }
      for_each_run(
          l,
          [&](std::uint64_t at, std::uint64_t i, std::uint64_t n) {
            for (std::uint64_t j = 0; j < n; ++j) std::memcpy(at_index(i + j), in + at + j * 4, 2);
          },
          r0, r1);
      return;
    case Element::kF8:
      for_each_run(
          l,
          [&](std::uint64_t at, std::uint64_t i, std::uint64_t n) {
            for (std::uint64_t j = 0; j < n; ++j) {
              const std::uint8_t code = in[at + j * 4];
              if (raw_bits) {
                *at_index(i + j) = code;
              } else {
                const float v = f8e4m3fn_to_f32(code);
                std::memcpy(at_index(i + j), &v, 4);
              }
            }
          },
          r0, r1);
      return;
  }
}

}  // namespace

NpyArray from_device(const OperandBinding& binding, const std::vector<std::uint8_t>& device, bool raw_bits,
                     bool host_threads) {
  const Layout l = layout_of(binding);
  NpyArray result;
  result.shape = binding.shape;
  result.dtype = host_dtype(binding, raw_bits);
  resize_zeroed(result.data, l.count * host_element_bytes(l.element, raw_bits));
  over_tile_rows(
      l,
      [&](std::uint64_t r0, std::uint64_t r1) {
        convert_from_device(l, device.data(), raw_bits, r0, r1, 0, result.data.data());
      },
      host_threads);
  return result;
}

std::uint64_t host_rows_per_piece(const OperandBinding& binding, bool raw_bits, std::uint64_t piece_bytes) {
  const Layout l = layout_of(binding);
  const std::uint64_t tile_row_bytes = l.cols * 8 * host_element_bytes(l.element, raw_bits);
  return 8 * std::max<std::uint64_t>(1, piece_bytes / tile_row_bytes);
}

std::uint64_t view_rows(const OperandBinding& binding) {
  return layout_of(binding).rows;
}

std::uint64_t host_bytes_of_rows(const OperandBinding& binding, bool raw_bits, std::uint64_t first_row,
                                 std::uint64_t end_row) {
  const Layout l = layout_of(binding);
  return (first_host_index(l, end_row) - first_host_index(l, std::min(first_row, end_row))) *
         host_element_bytes(l.element, raw_bits);
}

void from_device_rows(const OperandBinding& binding, std::span<const std::uint8_t> device, bool raw_bits,
                      std::uint64_t first_row, std::uint64_t end_row, std::span<std::uint8_t> out) {
  const Layout l = layout_of(binding);
  end_row = std::min(end_row, l.rows);
  if (first_row % 8 != 0 || first_row > end_row || device.size() != device_bytes(binding) ||
      out.size() != host_bytes_of_rows(binding, raw_bits, first_row, end_row)) {
    throw std::invalid_argument(fmt::format("from_device_rows: rows {}..{} of operand {} do not fit {} output bytes",
                                            first_row, end_row, binding.index, out.size()));
  }
  // Split into tile-row ranges over the host threads when the piece is big
  // (each range writes only its own bytes: the same bytes either way).
  constexpr std::uint64_t kParallelFromBytes = std::uint64_t{1} << 20;
  const std::uint64_t tile_rows = ceil_div(end_row - first_row, 8);
  const std::uint64_t parts =
      out.size() < kParallelFromBytes ? 1 : std::min<std::uint64_t>(tile_rows, tpuemu::host_threads());
  parallel_for(parts, [&](std::size_t p) {
    const std::uint64_t r0 = first_row + tile_rows * p / parts * 8;
    const std::uint64_t r1 = std::min(end_row, first_row + tile_rows * (p + 1) / parts * 8);
    convert_from_device(l, device.data(), raw_bits, r0, r1, first_row, out.data());
  });
}

// A host array stored transposed (layout {0,1}): swap the two axes.
NpyArray transpose_2d(const NpyView& a) {
  NpyArray t{a.dtype, {a.shape.begin(), a.shape.end()}, {a.data.begin(), a.data.end()}};
  if (a.shape.size() != 2) return t;
  const std::uint64_t rows = a.shape[0];
  const std::uint64_t cols = a.shape[1];
  const std::size_t e = element_size(a.dtype);
  t.shape = {cols, rows};
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) std::memcpy(&t.data[(c * rows + r) * e], &a.data[(r * cols + c) * e], e);
  }
  return t;
}

OperandBinding transposed_binding(OperandBinding b) {
  if (b.shape.size() == 2) std::swap(b.shape[0], b.shape[1]);
  return b;
}

}  // namespace tpuemu::chip
