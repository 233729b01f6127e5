#include "chip/host_io.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <stdexcept>

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
std::uint64_t element_bytes(Element e) {
  return e == Element::k32Bit ? 4 : e == Element::kBf16 ? 2 : 1;
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

// Device byte offset of logical element i (row-major).
std::uint64_t element_offset(const Layout& l, std::uint64_t i) {
  return l.one_d ? device_offset(l, i / 128, i % 128) : device_offset(l, i / l.cols, i % l.cols);
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

std::uint64_t device_bytes(const OperandBinding& binding) {
  const Layout l = layout_of(binding);
  return ceil_div(l.rows, 8) * ceil_div(l.cols, 128) * tile_bytes(l.element);
}

std::vector<std::uint8_t> to_device(const OperandBinding& binding, const NpyArray& host, const std::string& origin) {
  const Layout l = layout_of(binding);
  if (host.shape != binding.shape) {
    throw std::invalid_argument(fmt::format("{}: shape {} does not match operand {} ({}[{}])", origin,
                                            shape_text(host.shape), binding.index, binding.dtype,
                                            fmt::join(binding.shape, ",")));
  }
  std::vector<std::uint8_t> device(device_bytes(binding), 0);
  const std::uint64_t n = l.count;
  auto put = [&](std::uint64_t i, const void* bytes) {
    std::memcpy(device.data() + element_offset(l, i), bytes, element_bytes(l.element));
  };
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
      for (std::uint64_t i = 0; i < n; ++i) put(i, host.data.data() + i * 4);
      break;
    }
    case Element::kBf16:
      if (host.dtype == NpyDtype::kUint16) {
        for (std::uint64_t i = 0; i < n; ++i) put(i, host.data.data() + i * 2);
      } else if (host.dtype == NpyDtype::kFloat32) {
        const auto values = host.as_f32();
        for (std::uint64_t i = 0; i < n; ++i) {
          const std::uint16_t bits = f32_to_bf16_bits(values[i]);
          put(i, &bits);
        }
      } else {
        throw wrong("uint16 (bf16 bits) or float32 (rounded to nearest even)");
      }
      break;
    case Element::kF8:
      if (host.dtype == NpyDtype::kUint8) {
        for (std::uint64_t i = 0; i < n; ++i) put(i, host.data.data() + i);
      } else if (host.dtype == NpyDtype::kFloat32) {
        const auto values = host.as_f32();
        for (std::uint64_t i = 0; i < n; ++i) {
          const std::uint8_t code = f32_to_f8e4m3fn(values[i]);
          put(i, &code);
        }
      } else {
        throw wrong("uint8 (float8_e4m3fn codes) or float32");
      }
      break;
  }
  return device;
}

NpyArray from_device(const OperandBinding& binding, const std::vector<std::uint8_t>& device, bool raw_bits) {
  const Layout l = layout_of(binding);
  const std::uint64_t n = l.count;
  NpyArray out;
  out.shape = binding.shape;
  auto get = [&](std::uint64_t i, void* bytes) {
    std::memcpy(bytes, device.data() + element_offset(l, i), element_bytes(l.element));
  };
  switch (l.element) {
    case Element::k32Bit:
      out.dtype = binding.dtype == "f32"   ? NpyDtype::kFloat32
                  : binding.dtype == "s32" ? NpyDtype::kInt32
                                           : NpyDtype::kUint32;
      out.data.resize(n * 4);
      for (std::uint64_t i = 0; i < n; ++i) get(i, out.data.data() + i * 4);
      break;
    case Element::kBf16:
      out.dtype = raw_bits ? NpyDtype::kUint16 : NpyDtype::kFloat32;
      out.data.resize(n * (raw_bits ? 2 : 4));
      for (std::uint64_t i = 0; i < n; ++i) {
        std::uint16_t bits = 0;
        get(i, &bits);
        if (raw_bits) {
          std::memcpy(out.data.data() + i * 2, &bits, 2);
        } else {
          const float v = bf16_bits_to_f32(bits);
          std::memcpy(out.data.data() + i * 4, &v, 4);
        }
      }
      break;
    case Element::kF8:
      out.dtype = raw_bits ? NpyDtype::kUint8 : NpyDtype::kFloat32;
      out.data.resize(n * (raw_bits ? 1 : 4));
      for (std::uint64_t i = 0; i < n; ++i) {
        std::uint8_t code = 0;
        get(i, &code);
        if (raw_bits) {
          out.data[i] = code;
        } else {
          const float v = f8e4m3fn_to_f32(code);
          std::memcpy(out.data.data() + i * 4, &v, 4);
        }
      }
      break;
  }
  return out;
}

// A host array stored transposed (layout {0,1}): swap the two axes.
NpyArray transpose_2d(const NpyArray& a) {
  if (a.shape.size() != 2) return a;
  NpyArray t = a;
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
