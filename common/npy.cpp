#include "common/npy.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <optional>
#include <utility>

#include "common/huge_pages.hpp"
#include "common/input_file.hpp"

namespace tpuemu {
namespace {

static_assert(std::endian::native == std::endian::little, "NpyArray data is little-endian, like the host");

constexpr std::array<std::uint8_t, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kArrayAlign = 64;
// numpy reserves room in the header for the first dimension to grow to this
// many digits (numpy.lib.format.GROWTH_AXIS_MAX_DIGITS).
constexpr std::size_t kGrowthAxisMaxDigits = 21;
// Longest piece of untrusted header text quoted in an error message.
constexpr std::size_t kMaxQuotedChars = 40;

struct DtypeInfo {
  NpyDtype dtype;
  std::string_view name;
  std::string_view descr;  // little-endian form, as numpy writes it
};

constexpr std::array<DtypeInfo, 8> kDtypes = {{
    {NpyDtype::kFloat32, "float32", "<f4"},
    {NpyDtype::kFloat64, "float64", "<f8"},
    {NpyDtype::kUint8, "uint8", "|u1"},
    {NpyDtype::kUint16, "uint16", "<u2"},
    {NpyDtype::kUint32, "uint32", "<u4"},
    {NpyDtype::kInt32, "int32", "<i4"},
    {NpyDtype::kInt64, "int64", "<i8"},
    {NpyDtype::kBool, "bool", "|b1"},
}};

const DtypeInfo& info(NpyDtype dtype) {
  for (const DtypeInfo& d : kDtypes)
    if (d.dtype == dtype) return d;
  throw NpyError(fmt::format("npy array: invalid NpyDtype value {}", static_cast<int>(dtype)));
}

// Untrusted text made printable and short for an error message.
std::string excerpt(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMaxQuotedChars; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (text.size() > kMaxQuotedChars) out += "...";
  return out;
}

// Python's repr of the shape tuple: "()", "(8,)", "(8, 128)".
std::string shape_repr(std::span<const std::uint64_t> shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

std::optional<std::uint64_t> checked_multiply(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// element_count(shape) * element size, or nullopt if either overflows.
std::optional<std::uint64_t> checked_byte_size(std::span<const std::uint64_t> shape, std::size_t element_bytes) {
  if (std::find(shape.begin(), shape.end(), 0U) != shape.end()) return 0;
  std::optional<std::uint64_t> bytes = element_bytes;
  for (std::uint64_t dim : shape) {
    bytes = checked_multiply(*bytes, dim);
    if (!bytes) return std::nullopt;
  }
  return bytes;
}

std::string supported_dtypes() {
  std::string out;
  for (const DtypeInfo& d : kDtypes) out += fmt::format("{}{} '{}'", out.empty() ? "" : ", ", d.name, d.descr);
  return out;
}

// numpy's name for a descr like "<f2" or ">c8", to say what an unsupported
// dtype is; empty when it is not that simple form.
std::string numpy_name_of(std::string_view descr) {
  if (descr.size() < 3 || descr.size() > 4 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos)
    return "";
  unsigned bytes = 0;
  for (char c : descr.substr(2)) {
    if (c < '0' || c > '9') return "";
    bytes = bytes * 10 + static_cast<unsigned>(c - '0');
  }
  switch (descr[1]) {
    case 'f':
      return fmt::format("float{}", bytes * 8);
    case 'i':
      return fmt::format("int{}", bytes * 8);
    case 'u':
      return fmt::format("uint{}", bytes * 8);
    case 'c':
      return fmt::format("complex{}", bytes * 8);
    case 'b':
      return bytes == 1 ? "bool" : "";
    default:
      return "";
  }
}

struct ParsedDescr {
  NpyDtype dtype;
  bool big_endian;
};

// Little-endian descrs as numpy writes them, their big-endian forms, and
// single-byte types with any byte-order mark.
std::optional<ParsedDescr> parse_descr(std::string_view descr) {
  if (descr.size() != 3) return std::nullopt;
  const char order = descr[0];
  for (const DtypeInfo& d : kDtypes) {
    if (descr.substr(1) != d.descr.substr(1)) continue;
    const bool single_byte = element_size(d.dtype) == 1;
    if (single_byte && (order == '|' || order == '<' || order == '>')) return ParsedDescr{d.dtype, false};
    if (!single_byte && order == '<') return ParsedDescr{d.dtype, false};
    if (!single_byte && order == '>') return ParsedDescr{d.dtype, true};
  }
  return std::nullopt;
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

// Parser of the header's Python dict literal. Contract: consumes exactly the
// grammar below or throws NpyError "<origin>: malformed header: ..."; no
// recursion, every read is bounds-checked.
//   header := ws '{' ws [entry (ws ',' ws entry)* ws [',']] ws '}' ws
//   entry  := string ws ':' ws value      (value by key: string, True/False, tuple)
//   tuple  := '(' ws ')' | '(' ws int ws ',' ws ')' | '(' ws int (ws ',' ws int)+ ws [','] ws ')'
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  Header parse() {
    Header header;
    bool have_descr = false;
    bool have_fortran_order = false;
    bool have_shape = false;
    skip_whitespace();
    if (!consume('{')) fail("expected a dict starting with '{'");
    for (;;) {
      skip_whitespace();
      if (consume('}')) break;
      if (!at_quote()) fail("expected a quoted key or '}'");
      const std::string key = parse_string("a key");
      skip_whitespace();
      if (!consume(':')) fail(fmt::format("key '{}': expected ':' after the key", excerpt(key)));
      skip_whitespace();
      if (key == "descr") {
        mark_seen(have_descr, key);
        header.descr = parse_descr_value();
      } else if (key == "fortran_order") {
        mark_seen(have_fortran_order, key);
        header.fortran_order = parse_bool_value(key);
      } else if (key == "shape") {
        mark_seen(have_shape, key);
        header.shape = parse_shape_value();
      } else {
        fail(fmt::format("unknown key '{}' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')",
                         excerpt(key)));
      }
      skip_whitespace();
      if (consume(',')) continue;
      if (consume('}')) break;
      fail(fmt::format("key '{}': expected ',' or '}}' after its value", key));
    }
    skip_whitespace();
    if (pos_ != text_.size()) fail(fmt::format("unexpected text after the dict: '{}'", excerpt(text_.substr(pos_))));
    if (!have_descr) fail("missing key 'descr'");
    if (!have_fortran_order) fail("missing key 'fortran_order'");
    if (!have_shape) fail("missing key 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw NpyError(fmt::format("{}: malformed header: {}", origin_, what));
  }

  void mark_seen(bool& seen, const std::string& key) const {
    if (seen) fail(fmt::format("duplicate key '{}'", key));
    seen = true;
  }

  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek() const { return at_end() ? '\0' : text_[pos_]; }
  [[nodiscard]] bool at_quote() const { return !at_end() && (peek() == '\'' || peek() == '"'); }

  bool consume(char c) {
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  void skip_whitespace() {
    while (!at_end() && std::string_view(" \t\n\r\f\v").find(text_[pos_]) != std::string_view::npos) ++pos_;
  }

  // A string literal without escapes, in single or double quotes.
  std::string parse_string(std::string_view what) {
    const char quote = peek();
    ++pos_;
    const std::size_t start = pos_;
    while (!at_end() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' || text_[pos_] == '\n') fail(fmt::format("{}: unsupported string literal", what));
      ++pos_;
    }
    if (at_end()) fail(fmt::format("{}: unterminated string", what));
    std::string value(text_.substr(start, pos_ - start));
    ++pos_;
    return value;
  }

  std::string parse_descr_value() {
    if (peek() == '[') fail("key 'descr': structured dtypes (a list of fields) are not supported");
    if (!at_quote()) fail("key 'descr': expected a quoted string such as '<f4'");
    return parse_string("key 'descr'");
  }

  bool parse_bool_value(const std::string& key) {
    constexpr std::array<std::pair<std::string_view, bool>, 2> kWords = {{{"True", true}, {"False", false}}};
    for (const auto& [word, value] : kWords) {
      if (text_.substr(pos_, word.size()) != word) continue;
      const char next = pos_ + word.size() < text_.size() ? text_[pos_ + word.size()] : '\0';
      if (std::isalnum(static_cast<unsigned char>(next)) != 0 || next == '_') break;
      pos_ += word.size();
      return value;
    }
    fail(fmt::format("key '{}': expected True or False", key));
  }

  std::uint64_t parse_dimension() {
    if (at_end() || peek() < '0' || peek() > '9') fail("key 'shape': expected a non-negative integer");
    if (peek() == '0' && pos_ + 1 < text_.size() && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9')
      fail("key 'shape': integer with a leading zero");
    std::uint64_t value = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      const auto digit = static_cast<std::uint64_t>(peek() - '0');
      if (value > (UINT64_MAX - digit) / 10) fail("key 'shape': a dimension does not fit in 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    return value;
  }

  std::vector<std::uint64_t> parse_shape_value() {
    if (!consume('(')) fail("key 'shape': expected a tuple such as (8, 128)");
    std::vector<std::uint64_t> shape;
    skip_whitespace();
    if (consume(')')) return shape;
    for (;;) {
      shape.push_back(parse_dimension());
      skip_whitespace();
      const bool comma = consume(',');
      skip_whitespace();
      if (consume(')')) {
        if (shape.size() == 1 && !comma)
          fail(fmt::format("key 'shape': ({}) is not a tuple, a one-dimensional shape is written ({},)", shape[0],
                           shape[0]));
        return shape;
      }
      if (!comma) fail("key 'shape': expected ',' or ')' in the tuple");
    }
  }

  std::string_view text_;
  const std::string& origin_;
  std::size_t pos_ = 0;
};

void byte_swap_elements(std::span<std::uint8_t> data, std::size_t element_bytes) {
  for (std::size_t i = 0; i + element_bytes <= data.size(); i += element_bytes)
    std::reverse(data.begin() + static_cast<std::ptrdiff_t>(i),
                 data.begin() + static_cast<std::ptrdiff_t>(i + element_bytes));
}

std::uint64_t read_little_endian(std::span<const std::uint8_t> bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) value = (value << 8) | bytes[i];
  return value;
}

// The array's byte size if it satisfies the NpyArray contract; throws otherwise.
// The byte size of an array of `dtype` and `shape`; throws if it overflows.
std::uint64_t shape_bytes(NpyDtype dtype, std::span<const std::uint64_t> shape, std::string_view origin) {
  const std::optional<std::uint64_t> bytes = checked_byte_size(shape, element_size(dtype));
  if (!bytes)
    throw NpyError(fmt::format("{}: shape {} of {} is too large, its size in bytes overflows 64 bits", origin,
                               shape_repr(shape), to_string(dtype)));
  return *bytes;
}

std::uint64_t checked_data_size(const NpyView& array, std::string_view origin) {
  const std::uint64_t bytes = shape_bytes(array.dtype, array.shape, origin);
  if (bytes != array.data.size())
    throw NpyError(fmt::format("{}: data holds {} bytes, but shape {} of {} needs {}", origin, array.data.size(),
                               shape_repr(array.shape), to_string(array.dtype), bytes));
  return bytes;
}

template <class T>
std::span<const T> typed_view(const NpyView& array, NpyDtype expected) {
  if (array.dtype != expected)
    throw NpyError(fmt::format("npy array: holds {}, not {}", to_string(array.dtype), to_string(expected)));
  const std::uint64_t bytes = checked_data_size(array, "npy array");
  if (reinterpret_cast<std::uintptr_t>(array.data.data()) % alignof(T) != 0)
    throw NpyError(fmt::format("npy array: data is not aligned for {}", to_string(expected)));
  return {reinterpret_cast<const T*>(array.data.data()), static_cast<std::size_t>(bytes / sizeof(T))};
}

// The preamble and header numpy would write for an array of `dtype` and
// `shape` (its data follows).
std::vector<std::uint8_t> header_for(NpyDtype dtype, std::span<const std::uint64_t> shape, std::string_view origin) {
  // 1. The dict exactly as numpy.lib.format._write_array_header prints it.
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(dtype), shape_repr(shape));
  if (!shape.empty()) {
    const std::size_t first_dim_digits = fmt::formatted_size("{}", shape[0]);
    if (first_dim_digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - first_dim_digits, ' ');
  }

  // 2. Padding as numpy's _wrap_header: a whole kArrayAlign when already aligned.
  constexpr std::size_t kPreambleBytes = kMagic.size() + 2 + 2;
  const std::size_t with_newline = dict.size() + 1;
  const std::size_t padding = kArrayAlign - (kPreambleBytes + with_newline) % kArrayAlign;
  const std::size_t header_bytes = with_newline + padding;
  if (header_bytes > UINT16_MAX)
    throw NpyError(fmt::format("{}: shape with {} dimensions does not fit a format 1.0 header", origin, shape.size()));

  std::vector<std::uint8_t> out;
  out.reserve(kPreambleBytes + header_bytes);
  out.insert(out.end(), kMagic.begin(), kMagic.end());
  out.insert(out.end(),
             {1, 0, static_cast<std::uint8_t>(header_bytes & 0xFF), static_cast<std::uint8_t>(header_bytes >> 8)});
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), padding, ' ');
  out.push_back('\n');
  return out;
}

std::vector<std::uint8_t> serialize_header(const NpyArray& array, std::string_view origin) {
  checked_data_size(array, origin);
  return header_for(array.dtype, array.shape, origin);
}

void read_exactly(std::ifstream& in, std::uint8_t* to, std::size_t bytes, const std::string& path) {
  in.read(reinterpret_cast<char*>(to), static_cast<std::streamsize>(bytes));
  if (static_cast<std::size_t>(in.gcount()) != bytes) throw NpyError(fmt::format("{}: read error", path));
}

// Where a .npy file's data lies and what it holds.
struct DataLayout {
  ParsedDescr descr;
  std::vector<std::uint64_t> shape;
  std::size_t offset = 0;  // of the data in the file
  std::size_t bytes = 0;
};

// The longest preamble (format 2.0 and 3.0): magic, version, 4 length bytes.
constexpr std::size_t kMaxPreambleBytes = kMagic.size() + 2 + 4;

// The bytes from the start of a .npy file through its header, as far as the
// first kMaxPreambleBytes of it (`start`) tell; `start.size()` when they do not.
std::size_t header_end(std::span<const std::uint8_t> start) {
  if (start.size() < kMagic.size() + 2 || !std::equal(kMagic.begin(), kMagic.end(), start.begin())) return start.size();
  const std::size_t length_bytes = start[kMagic.size()] == 1 ? 2 : 4;
  const std::size_t preamble_bytes = kMagic.size() + 2 + length_bytes;
  if (start.size() < preamble_bytes) return start.size();
  return preamble_bytes + static_cast<std::size_t>(read_little_endian(start.subspan(kMagic.size() + 2, length_bytes)));
}

// Checks a .npy file of `total` bytes from its first bytes `prefix` (the whole
// file, or at least through its header): the contract of parse_npy.
DataLayout parse_layout(std::span<const std::uint8_t> prefix, std::uint64_t total, const std::string& origin) {
  // 1. Magic string and version.
  if (total < kMagic.size() || !std::equal(kMagic.begin(), kMagic.end(), prefix.begin()))
    throw NpyError(fmt::format("{}: not a .npy file (it does not start with the magic string \\x93NUMPY)", origin));
  if (total < kMagic.size() + 2)
    throw NpyError(fmt::format("{}: truncated header: the file ends inside the format version", origin));
  const unsigned major = prefix[kMagic.size()];
  const unsigned minor = prefix[kMagic.size() + 1];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    throw NpyError(
        fmt::format("{}: unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", origin, major, minor));

  // 2. Header length: 2 bytes in version 1.0, 4 bytes in 2.0 and 3.0.
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t preamble_bytes = kMagic.size() + 2 + length_bytes;
  if (total < preamble_bytes)
    throw NpyError(fmt::format("{}: truncated header: the file ends inside the header length", origin));
  const std::uint64_t header_bytes = read_little_endian(prefix.subspan(kMagic.size() + 2, length_bytes));
  const std::uint64_t after_preamble = total - preamble_bytes;
  if (header_bytes > after_preamble)
    throw NpyError(fmt::format("{}: truncated header: the header is {} bytes long, the file has {} after the preamble",
                               origin, header_bytes, after_preamble));

  // 3. The header dict.
  const auto header_span = prefix.subspan(preamble_bytes, static_cast<std::size_t>(header_bytes));
  const std::string_view header_text(reinterpret_cast<const char*>(header_span.data()), header_span.size());
  const Header header = HeaderParser(header_text, origin).parse();
  const std::optional<ParsedDescr> descr = parse_descr(header.descr);
  if (!descr) {
    const std::string name = numpy_name_of(header.descr);
    throw NpyError(fmt::format("{}: unsupported dtype '{}'{} (supported: {}; big-endian '>' forms are converted)",
                               origin, excerpt(header.descr), name.empty() ? "" : fmt::format(" ({})", name),
                               supported_dtypes()));
  }
  if (header.fortran_order)
    throw NpyError(
        fmt::format("{}: fortran_order True is not supported, store the array in C order "
                    "(np.ascontiguousarray)",
                    origin));

  // 4. The data: exactly as many bytes as the shape needs.
  const std::size_t element_bytes = element_size(descr->dtype);
  const std::optional<std::uint64_t> data_bytes = checked_byte_size(header.shape, element_bytes);
  if (!data_bytes)
    throw NpyError(fmt::format("{}: shape {} of {} is too large, its size in bytes overflows 64 bits", origin,
                               shape_repr(header.shape), to_string(descr->dtype)));
  const std::uint64_t available = after_preamble - header_bytes;
  if (*data_bytes > available)
    throw NpyError(fmt::format("{}: truncated data: shape {} of {} expected {} bytes of data, file has {}", origin,
                               shape_repr(header.shape), to_string(descr->dtype), *data_bytes, available));
  if (*data_bytes < available)
    throw NpyError(fmt::format("{}: {} trailing bytes: shape {} of {} expected {} bytes of data, file has {}", origin,
                               available - *data_bytes, shape_repr(header.shape), to_string(descr->dtype), *data_bytes,
                               available));
  return DataLayout{*descr, header.shape, preamble_bytes + static_cast<std::size_t>(header_bytes),
                    static_cast<std::size_t>(*data_bytes)};
}

}  // namespace

std::string_view to_string(NpyDtype dtype) {
  return info(dtype).name;
}
std::string_view npy_descr(NpyDtype dtype) {
  return info(dtype).descr;
}

std::size_t element_size(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kUint8:
    case NpyDtype::kBool:
      return 1;
    case NpyDtype::kUint16:
      return 2;
    case NpyDtype::kFloat32:
    case NpyDtype::kUint32:
    case NpyDtype::kInt32:
      return 4;
    case NpyDtype::kFloat64:
    case NpyDtype::kInt64:
      return 8;
  }
  throw NpyError(fmt::format("npy array: invalid NpyDtype value {}", static_cast<int>(dtype)));
}

std::uint64_t element_count(std::span<const std::uint64_t> shape) {
  const std::optional<std::uint64_t> count = checked_byte_size(shape, 1);
  if (!count) throw NpyError(fmt::format("npy array: shape {} has more than 2^64 elements", shape_repr(shape)));
  return *count;
}

std::span<const float> NpyArray::as_f32() const {
  return typed_view<float>(*this, NpyDtype::kFloat32);
}
std::span<const float> NpyView::as_f32() const {
  return typed_view<float>(*this, NpyDtype::kFloat32);
}
std::span<const double> NpyArray::as_f64() const {
  return typed_view<double>(*this, NpyDtype::kFloat64);
}
std::span<const std::uint8_t> NpyArray::as_u8() const {
  return typed_view<std::uint8_t>(*this, NpyDtype::kUint8);
}
std::span<const std::uint16_t> NpyArray::as_u16() const {
  return typed_view<std::uint16_t>(*this, NpyDtype::kUint16);
}
std::span<const std::uint32_t> NpyArray::as_u32() const {
  return typed_view<std::uint32_t>(*this, NpyDtype::kUint32);
}
std::span<const std::int32_t> NpyArray::as_i32() const {
  return typed_view<std::int32_t>(*this, NpyDtype::kInt32);
}
std::span<const std::int64_t> NpyArray::as_i64() const {
  return typed_view<std::int64_t>(*this, NpyDtype::kInt64);
}

NpyArray copy_array(const NpyView& view) {
  return {view.dtype, {view.shape.begin(), view.shape.end()}, copied_bytes(view.data)};
}

NpyArray make_npy(NpyDtype dtype, std::vector<std::uint64_t> shape, const void* elements) {
  NpyArray array{dtype, std::move(shape), {}};
  const std::optional<std::uint64_t> bytes = checked_byte_size(array.shape, element_size(dtype));
  if (!bytes)
    throw NpyError(fmt::format("npy array: shape {} of {} is too large, its size in bytes overflows 64 bits",
                               shape_repr(array.shape), to_string(dtype)));
  if (*bytes == 0) return array;
  if (elements == nullptr) throw NpyError("npy array: make_npy needs element data for a non-empty shape");
  const auto* first = static_cast<const std::uint8_t*>(elements);
  array.data.assign(first, first + *bytes);
  return array;
}

NpyArray parse_npy(std::span<const std::uint8_t> bytes, const std::string& origin) {
  const DataLayout layout = parse_layout(bytes, bytes.size(), origin);
  NpyArray array{layout.descr.dtype, layout.shape, {}};
  const auto data_span = bytes.subspan(layout.offset);
  array.data.assign(data_span.begin(), data_span.end());
  if (layout.descr.big_endian) byte_swap_elements(array.data, element_size(layout.descr.dtype));
  return array;
}

namespace {

// read_npy's checks of a file's header and length, with the open stream
// positioned anywhere.
DataLayout read_layout(std::ifstream& in, const std::string& path) {
  try {
    (void)check_input_file(path, kMaxNpyBytes);
  } catch (const InputFileError& e) {
    throw NpyError(e.what());
  }
  in.open(path, std::ios::binary | std::ios::ate);
  if (!in) throw NpyError(fmt::format("{}: cannot open file", path));
  const std::streamoff size = in.tellg();
  if (size < 0) throw NpyError(fmt::format("{}: read error", path));
  const auto total = static_cast<std::uint64_t>(size);
  in.seekg(0);
  std::vector<std::uint8_t> prefix(static_cast<std::size_t>(std::min<std::uint64_t>(total, kMaxPreambleBytes)));
  read_exactly(in, prefix.data(), prefix.size(), path);
  const std::size_t end = header_end(prefix);
  if (end > prefix.size() && end <= total) {
    const std::size_t have = prefix.size();
    prefix.resize(end);
    read_exactly(in, prefix.data() + have, end - have, path);
  }
  return parse_layout(prefix, total, path);
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  // The header first, then the data straight into the array (one pass over it).
  std::ifstream in;
  const DataLayout layout = read_layout(in, path);
  NpyArray array{layout.descr.dtype, layout.shape, {}};
  resize_zeroed(array.data, layout.bytes);
  in.seekg(static_cast<std::streamoff>(layout.offset));
  read_exactly(in, array.data.data(), array.data.size(), path);
  if (layout.descr.big_endian) byte_swap_elements(array.data, element_size(layout.descr.dtype));
  return array;
}

NpyFileHeader read_npy_header(const std::string& path) {
  std::ifstream in;
  const DataLayout layout = read_layout(in, path);
  return NpyFileHeader{path, layout.descr.dtype, layout.shape, layout.offset, layout.bytes, layout.descr.big_endian};
}

void read_npy_data(const NpyFileHeader& file, std::uint64_t offset, std::span<std::uint8_t> out) {
  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw NpyError(fmt::format("{}: cannot open file", file.path));
  std::size_t done = 0;
  bool ok = true;
  while (ok && done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(file.data_offset + offset + done));
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (!ok) throw NpyError(fmt::format("{}: read error (the file changed or became shorter)", file.path));
  if (file.big_endian) byte_swap_elements(out, element_size(file.dtype));
}

std::vector<std::uint8_t> serialize_npy(const NpyArray& array) {
  std::vector<std::uint8_t> out = serialize_header(array, "npy array");
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

NpyWriter::NpyWriter(const std::string& path, NpyDtype dtype, std::vector<std::uint64_t> shape)
    : path_(path), data_bytes_(shape_bytes(dtype, shape, path)) {
  const std::vector<std::uint8_t> header = header_for(dtype, shape, path);
  header_bytes_ = header.size();
  // An existing file is overwritten in place and then cut to length, not
  // truncated first: the host then reuses its cached pages instead of
  // freeing and allocating them again (3 ms instead of 6-60 ms for 16 MiB).
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw NpyError(fmt::format("{}: cannot open file for writing", path));
  write_all(header);
}

NpyWriter::~NpyWriter() {
  if (fd_ >= 0) (void)::close(fd_);
}

void NpyWriter::write_all(std::span<const std::uint8_t> bytes) {
  const std::uint8_t* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw NpyError(fmt::format("{}: write error", path_));
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

void NpyWriter::append(std::span<const std::uint8_t> data) {
  if (fd_ < 0) throw NpyError(fmt::format("{}: written after finish()", path_));
  if (data.size() > data_bytes_ - written_) {
    throw NpyError(fmt::format("{}: {} more data bytes than the shape's {}", path_,
                               written_ + data.size() - data_bytes_, data_bytes_));
  }
  write_all(data);
  written_ += data.size();
}

void NpyWriter::finish() {
  if (fd_ < 0) throw NpyError(fmt::format("{}: finish() twice", path_));
  if (written_ != data_bytes_) {
    throw NpyError(fmt::format("{}: {} data bytes written, the shape needs {}", path_, written_, data_bytes_));
  }
  const int fd = fd_;
  fd_ = -1;
  struct stat st {};
  const auto total = static_cast<off_t>(header_bytes_ + data_bytes_);
  bool ok = true;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > total) ok = ::ftruncate(fd, total) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok) throw NpyError(fmt::format("{}: write error", path_));
}

void write_npy(const std::string& path, const NpyArray& array) {
  checked_data_size(array, path);
  NpyWriter writer(path, array.dtype, array.shape);
  writer.append(array.data);
  writer.finish();
}

}  // namespace tpuemu
