#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "common/npy.hpp"
#include "common/npy_file.hpp"
#include "common/numerics.hpp"

using namespace tpuemu;
using Catch::Contains;
using Catch::EndsWith;
using Catch::StartsWith;

namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr NpyDtype kAllDtypes[] = {NpyDtype::kFloat32, NpyDtype::kFloat64, NpyDtype::kUint8, NpyDtype::kUint16,
                                   NpyDtype::kUint32,  NpyDtype::kInt32,   NpyDtype::kInt64, NpyDtype::kBool};

// A .npy file with `header` as its dict text, unpadded, in format `major`.0.
Bytes npy_file(const std::string& header, const Bytes& data = {}, std::uint8_t major = 1) {
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < length_bytes; ++i) out.push_back(static_cast<std::uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran_order = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran_order + ", 'shape': " + shape + ", }";
}

Bytes byte_ramp(std::size_t count) {
  Bytes out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::uint8_t>(i * 37 + 11);
  return out;
}

// Element data for `count` elements of `dtype` (bool elements 0 or 1).
Bytes sample_data(NpyDtype dtype, std::size_t count) {
  Bytes data = byte_ramp(count * element_size(dtype));
  if (dtype == NpyDtype::kBool)
    for (std::uint8_t& b : data) b &= 1;
  return data;
}

Bytes file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::filesystem::path temp_file(const std::string& stem) {
  return std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ".npy");
}

}  // namespace

TEST_CASE("npy: dtype names, descrs and sizes", "[npy]") {
  CHECK(to_string(NpyDtype::kFloat32) == "float32");
  CHECK(to_string(NpyDtype::kUint16) == "uint16");
  CHECK(to_string(NpyDtype::kBool) == "bool");
  CHECK(npy_descr(NpyDtype::kFloat32) == "<f4");
  CHECK(npy_descr(NpyDtype::kFloat64) == "<f8");
  CHECK(npy_descr(NpyDtype::kUint8) == "|u1");
  CHECK(npy_descr(NpyDtype::kUint16) == "<u2");
  CHECK(npy_descr(NpyDtype::kUint32) == "<u4");
  CHECK(npy_descr(NpyDtype::kInt32) == "<i4");
  CHECK(npy_descr(NpyDtype::kInt64) == "<i8");
  CHECK(npy_descr(NpyDtype::kBool) == "|b1");
  CHECK(element_size(NpyDtype::kFloat64) == 8);
  CHECK(element_size(NpyDtype::kBool) == 1);
  CHECK(element_count(std::vector<std::uint64_t>{}) == 1);
  CHECK(element_count(std::vector<std::uint64_t>{8, 0, 1ULL << 63}) == 0);
  CHECK(element_count(std::vector<std::uint64_t>{8, 128}) == 1024);
  CHECK_THROWS_WITH(element_count(std::vector<std::uint64_t>{1ULL << 32, 1ULL << 32}),
                    Contains("more than 2^64 elements"));
}

TEST_CASE("npy: every dtype and rank round-trips through serialize and parse", "[npy]") {
  const std::vector<std::vector<std::uint64_t>> shapes = {{}, {5}, {2, 3}, {0, 3}, {2, 3, 4}, {1, 1, 1, 7}};
  for (NpyDtype dtype : kAllDtypes) {
    for (const auto& shape : shapes) {
      const Bytes data = sample_data(dtype, element_count(shape));
      const NpyArray array = make_npy(dtype, shape, data.data());
      INFO(to_string(dtype) << " with " << shape.size() << " dimensions");
      const Bytes bytes = serialize_npy(array);
      CHECK((bytes.size() - data.size()) % 64 == 0);
      CHECK(std::string(bytes.begin() + 10, bytes.begin() + 20) == "{'descr': ");
      CHECK(bytes[bytes.size() - data.size() - 1] == '\n');
      const NpyArray back = parse_npy(bytes, "round-trip");
      CHECK(back == array);
    }
  }
}

TEST_CASE("npy: the header is laid out as numpy's np.save writes it", "[npy]") {
  const double value = 2.5;
  const Bytes scalar = serialize_npy(make_npy(NpyDtype::kFloat64, {}, &value));
  // 55-character dict, no growth space for a scalar, '\n', padded to 128 bytes.
  const std::string header(scalar.begin() + 10, scalar.begin() + 128);
  CHECK(header == "{'descr': '<f8', 'fortran_order': False, 'shape': (), }" + std::string(62, ' ') + "\n");
  CHECK(Bytes(scalar.begin(), scalar.begin() + 10) == Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0});
  CHECK(scalar.size() == 128 + 8);

  const std::uint8_t three[] = {1, 2, 3};
  const Bytes vector = serialize_npy(make_npy(NpyDtype::kUint8, {3}, three));
  // 57-character dict plus 20 spaces of growth room for the first axis.
  const std::string vector_header(vector.begin() + 10, vector.begin() + 128);
  CHECK(vector_header == "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }" + std::string(60, ' ') + "\n");
}

TEST_CASE("npy: write_npy and read_npy round-trip through a file", "[npy]") {
  const std::filesystem::path path = temp_file("tpuemu_test_npy_roundtrip");
  const std::vector<float> values = {1.0F, -2.5F, 3.25F, 0.0F, -0.0F, 1e30F};
  const NpyArray array = make_npy(NpyDtype::kFloat32, {2, 3}, values.data());
  write_npy(path.string(), array);
  const NpyArray back = read_npy(path.string());
  std::filesystem::remove(path);
  CHECK(back == array);
  REQUIRE(back.as_f32().size() == values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    CHECK(std::bit_cast<std::uint32_t>(back.as_f32()[i]) == std::bit_cast<std::uint32_t>(values[i]));

  CHECK_THROWS_WITH(read_npy("/nonexistent/dir/x.npy"), StartsWith("/nonexistent/dir/x.npy: cannot open file"));
  CHECK_THROWS_WITH(write_npy("/nonexistent/dir/x.npy", array), StartsWith("/nonexistent/dir/x.npy: cannot open"));
}

TEST_CASE("npy: write_npy over a longer or shorter file leaves exactly the new file", "[npy]") {
  // write_npy overwrites an existing file in place and cuts it to length.
  const std::filesystem::path path = temp_file("tpuemu_test_npy_overwrite");
  std::vector<float> big(4096);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i);
  const std::vector<float> small = {7.0F, 8.0F, 9.0F};
  const NpyArray big_array = make_npy(NpyDtype::kFloat32, {4096}, big.data());
  const NpyArray small_array = make_npy(NpyDtype::kFloat32, {3}, small.data());
  write_npy(path.string(), big_array);
  write_npy(path.string(), small_array);
  CHECK(std::filesystem::file_size(path) == serialize_npy(small_array).size());
  CHECK(read_npy(path.string()) == small_array);
  write_npy(path.string(), big_array);
  CHECK(std::filesystem::file_size(path) == serialize_npy(big_array).size());
  CHECK(read_npy(path.string()) == big_array);
  std::filesystem::remove(path);
}

TEST_CASE("npy: NpyWriter writes write_npy's file a piece at a time and checks the byte count", "[npy]") {
  const std::filesystem::path path = temp_file("tpuemu_test_npy_writer");
  std::vector<float> values(3000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25F;
  const NpyArray array = make_npy(NpyDtype::kFloat32, {30, 100}, values.data());
  {
    write_npy(path.string(), make_npy(NpyDtype::kFloat32, {4096}, std::vector<float>(4096).data()));  // longer
    NpyWriter writer(path.string(), array.dtype, array.shape);
    const std::span<const std::uint8_t> data(array.data);
    writer.append(data.subspan(0, 4));
    writer.append(data.subspan(4, 4096));
    writer.append(data.subspan(4100));
    writer.finish();
  }
  CHECK(std::filesystem::file_size(path) == serialize_npy(array).size());
  CHECK(read_npy(path.string()) == array);
  {
    NpyWriter writer(path.string(), array.dtype, array.shape);
    writer.append(std::span<const std::uint8_t>(array.data).subspan(0, 400));
    CHECK_THROWS_WITH(writer.finish(), EndsWith("400 data bytes written, the shape needs 12000"));
  }
  {
    NpyWriter writer(path.string(), array.dtype, array.shape);
    writer.append(array.data);
    CHECK_THROWS_WITH(writer.append(std::span<const std::uint8_t>(array.data).subspan(0, 4)),
                      EndsWith("4 more data bytes than the shape's 12000"));
  }
  CHECK_THROWS_WITH(NpyWriter("/nonexistent/dir/x.npy", NpyDtype::kUint8, {3}),
                    StartsWith("/nonexistent/dir/x.npy: cannot open"));
  std::filesystem::remove(path);
}

TEST_CASE("npy: headers numpy and other writers produce are accepted", "[npy]") {
  const Bytes four_f32 = byte_ramp(16);
  struct Row {
    const char* what;
    Bytes file;
    NpyDtype dtype;
    std::vector<std::uint64_t> shape;
  };
  const Row rows[] = {
      {"keys in another order",
       npy_file("{'shape': (2, 2), 'fortran_order': False, 'descr': '<f4'}", four_f32),
       NpyDtype::kFloat32,
       {2, 2}},
      {"double quotes, no spaces, no trailing comma",
       npy_file("{\"descr\":\"<u4\",\"fortran_order\":False,\"shape\":(4,)}", four_f32),
       NpyDtype::kUint32,
       {4}},
      {"one-element tuple", npy_file(dict("<i4", "(4,)"), four_f32), NpyDtype::kInt32, {4}},
      {"one-element tuple with a space", npy_file(dict("<i4", "( 4 , )"), four_f32), NpyDtype::kInt32, {4}},
      {"scalar", npy_file(dict("<f4", "()"), byte_ramp(4)), NpyDtype::kFloat32, {}},
      {"padding and newlines",
       npy_file("\n { 'descr' : '<i8' ,\n'fortran_order':False,'shape':(2,) }  \t\n", four_f32),
       NpyDtype::kInt64,
       {2}},
      {"trailing comma in a long tuple", npy_file(dict("|u1", "(2, 2, 4,)"), four_f32), NpyDtype::kUint8, {2, 2, 4}},
      {"uint8 as '<u1'", npy_file(dict("<u1", "(16,)"), four_f32), NpyDtype::kUint8, {16}},
      {"bool as '|b1'", npy_file(dict("|b1", "(0,)")), NpyDtype::kBool, {0}},
      {"empty array", npy_file(dict("<f8", "(0, 5)")), NpyDtype::kFloat64, {0, 5}},
      {"format 2.0", npy_file(dict("<u2", "(8,)"), four_f32, 2), NpyDtype::kUint16, {8}},
      {"format 3.0", npy_file(dict("<u2", "(8,)"), four_f32, 3), NpyDtype::kUint16, {8}},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    const NpyArray array = parse_npy(row.file, "ok.npy");
    CHECK(array.dtype == row.dtype);
    CHECK(array.shape == row.shape);
    CHECK(array.data.size() == element_count(row.shape) * element_size(row.dtype));
  }
}

TEST_CASE("npy: big-endian data is converted to little-endian", "[npy]") {
  const Bytes big_f32 = {0x3F, 0x80, 0x00, 0x00, 0xC0, 0x20, 0x00, 0x00};
  const NpyArray floats = parse_npy(npy_file(dict(">f4", "(2,)"), big_f32), "be.npy");
  CHECK(floats.dtype == NpyDtype::kFloat32);
  CHECK(floats.as_f32()[0] == 1.0F);
  CHECK(floats.as_f32()[1] == -2.5F);

  const Bytes big_i64 = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE};
  CHECK(parse_npy(npy_file(dict(">i8", "()"), big_i64), "be.npy").as_i64()[0] == -2);
  const Bytes big_u16 = {0x12, 0x34};
  CHECK(parse_npy(npy_file(dict(">u2", "(1,)"), big_u16), "be.npy").as_u16()[0] == 0x1234);
  CHECK(parse_npy(npy_file(dict(">u1", "(2,)"), big_u16), "be.npy").data == big_u16);
}

TEST_CASE("npy: a file's header alone and then its data piece by piece", "[npy]") {
  const std::filesystem::path path = temp_file("tpuemu_test_npy_header");
  const auto write_bytes = [&](const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  // Format 2.0 (a 4-byte header length), big-endian u2: read_npy_data returns little-endian pieces.
  const Bytes big_u16 = {0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0};
  write_bytes(npy_file(dict(">u2", "(2, 2)"), big_u16, 2));
  const NpyFileHeader header = read_npy_header(path.string());
  CHECK(header.dtype == NpyDtype::kUint16);
  CHECK(header.shape == std::vector<std::uint64_t>{2, 2});
  CHECK(header.data_bytes == 8);
  CHECK(header.big_endian);
  CHECK(header.data_offset + header.data_bytes == std::filesystem::file_size(path));
  Bytes piece(4);
  read_npy_data(header, 4, piece);
  CHECK(piece == Bytes{0xBC, 0x9A, 0xF0, 0xDE});
  read_npy_data(header, 0, piece);
  CHECK(piece == Bytes{0x34, 0x12, 0x78, 0x56});
  // The header's checks are read_npy's: a truncated file is refused before any data is read.
  Bytes truncated = npy_file(dict("<f4", "(4,)"), byte_ramp(16));
  truncated.resize(truncated.size() - 4);
  write_bytes(truncated);
  CHECK_THROWS_WITH(read_npy_header(path.string()), Contains("truncated data"));
  // A file that became shorter after its header was read fails the data read.
  write_bytes(npy_file(dict("<f4", "(4,)"), byte_ramp(16)));
  const NpyFileHeader four = read_npy_header(path.string());
  write_bytes(truncated);
  Bytes all(16);
  CHECK_THROWS_WITH(read_npy_data(four, 0, all), Contains("read error"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(read_npy_header("/nonexistent/dir/x.npy"), StartsWith("/nonexistent/dir/x.npy: cannot open file"));
}

TEST_CASE("npy: typed views check the dtype", "[npy]") {
  const std::uint16_t bits[] = {0x3F80, 0xC040};
  const NpyArray array = make_npy(NpyDtype::kUint16, {2}, bits);
  REQUIRE(array.as_u16().size() == 2);
  CHECK(array.as_u16()[1] == 0xC040);
  CHECK_THROWS_WITH(array.as_f32(), Contains("holds uint16, not float32"));
  CHECK_THROWS_WITH(array.as_u8(), Contains("holds uint16, not uint8"));

  NpyArray broken = array;
  broken.data.pop_back();
  CHECK_THROWS_WITH(broken.as_u16(), Contains("data holds 3 bytes, but shape (2,) of uint16 needs 4"));
  CHECK_THROWS_WITH(serialize_npy(broken), StartsWith("npy array: data holds 3 bytes"));
  CHECK_THROWS_WITH(make_npy(NpyDtype::kFloat32, {2}, nullptr), Contains("needs element data"));
  CHECK(make_npy(NpyDtype::kFloat32, {0}, nullptr).data.empty());
}

TEST_CASE("npy: malformed input is rejected with a message naming the problem", "[npy]") {
  const Bytes six_f32 = byte_ramp(24);
  const std::string good = dict("<f4", "(2, 3)");
  Bytes short_header = npy_file(good, six_f32);
  short_header.resize(40);
  Bytes length_beyond_file = npy_file(good);
  length_beyond_file[8] = 0xFF;

  struct Row {
    const char* what;
    Bytes file;
    const char* message;
  };
  const Row rows[] = {
      {"empty file", {}, "not a .npy file"},
      {"bad magic", {0x93, 'N', 'U', 'M', 'P', 'X', 1, 0, 0, 0}, "not a .npy file"},
      {"a text file", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}, "not a .npy file"},
      {"magic only", {0x93, 'N', 'U', 'M', 'P', 'Y'}, "truncated header"},
      {"no header length", {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 5}, "truncated header"},
      {"2.0 with a 2-byte length", {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0}, "truncated header"},
      {"version 4.0", npy_file(good, six_f32, 4), "unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)"},
      {"version 0.0", npy_file(good, six_f32, 0), "unsupported .npy format version 0.0"},
      {"truncated header", short_header, "truncated header: the header is 59 bytes long, the file has 30"},
      {"header length beyond the file", length_beyond_file, "truncated header: the header is 255 bytes long"},
      {"not a dict", npy_file("['descr', '<f4']"), "malformed header: expected a dict"},
      {"empty header", npy_file(""), "malformed header: expected a dict"},
      {"missing comma", npy_file("{'descr': '<f4' 'fortran_order': False, 'shape': (6,)}"),
       "malformed header: key 'descr': expected ',' or '}'"},
      {"unclosed dict", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), "),
       "malformed header: expected a quoted key or '}'"},
      {"missing shape", npy_file("{'descr': '<f4', 'fortran_order': False}"), "malformed header: missing key 'shape'"},
      {"missing descr", npy_file("{'fortran_order': False, 'shape': ()}"), "malformed header: missing key 'descr'"},
      {"duplicate key", npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}"),
       "malformed header: duplicate key 'descr'"},
      {"unknown key", npy_file("{'dtype': '<f4', 'fortran_order': False, 'shape': ()}"),
       "malformed header: unknown key 'dtype'"},
      {"unquoted key", npy_file("{descr: '<f4'}"), "malformed header: expected a quoted key"},
      {"missing colon", npy_file("{'descr' '<f4'}"), "malformed header: key 'descr': expected ':'"},
      {"unterminated string", npy_file("{'descr': '<f4, 'fortran_order': False, 'shape': ()}"),
       "malformed header: key 'descr': expected ',' or '}'"},
      {"string runs to the end", npy_file("{'descr': '<f4"), "malformed header: key 'descr': unterminated string"},
      {"escape in a string", npy_file("{'descr': '\\x3cf4'}"), "malformed header: key 'descr': unsupported string"},
      {"structured dtype", npy_file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}"),
       "malformed header: key 'descr': structured dtypes"},
      {"descr not a string", npy_file("{'descr': 4, 'fortran_order': False, 'shape': ()}"),
       "malformed header: key 'descr': expected a quoted string"},
      {"fortran_order not a bool", npy_file(dict("<f4", "(6,)", "0"), six_f32),
       "malformed header: key 'fortran_order': expected True or False"},
      {"fortran_order misspelt", npy_file(dict("<f4", "(6,)", "Falsey"), six_f32),
       "malformed header: key 'fortran_order': expected True or False"},
      {"shape is a list", npy_file(dict("<f4", "[6]"), six_f32), "malformed header: key 'shape': expected a tuple"},
      {"shape without its comma", npy_file(dict("<f4", "(6)"), six_f32),
       "malformed header: key 'shape': (6) is not a tuple, a one-dimensional shape is written (6,)"},
      {"negative dimension", npy_file(dict("<f4", "(-6,)"), six_f32),
       "malformed header: key 'shape': expected a non-negative integer"},
      {"dimension with a leading zero", npy_file(dict("<f4", "(06,)"), six_f32),
       "malformed header: key 'shape': integer with a leading zero"},
      {"float dimension", npy_file(dict("<f4", "(6.0,)"), six_f32),
       "malformed header: key 'shape': expected ',' or ')'"},
      {"unclosed tuple", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (6, "),
       "malformed header: key 'shape': expected a non-negative integer"},
      {"dimension beyond 64 bits", npy_file(dict("<f4", "(18446744073709551616,)")),
       "malformed header: key 'shape': a dimension does not fit in 64 bits"},
      {"text after the dict", npy_file(good + " x", six_f32), "malformed header: unexpected text after the dict: 'x'"},
      {"fortran_order True", npy_file(dict("<f4", "(2, 3)", "True"), six_f32), "fortran_order True is not supported"},
      {"float16", npy_file(dict("<f2", "(12,)"), six_f32),
       "unsupported dtype '<f2' (float16) (supported: float32 '<f4', float64 '<f8', uint8 '|u1', uint16 '<u2', "
       "uint32 '<u4', int32 '<i4', int64 '<i8', bool '|b1'; big-endian '>' forms are converted)"},
      {"complex64", npy_file(dict("<c8", "(3,)"), six_f32), "unsupported dtype '<c8' (complex64)"},
      {"int8", npy_file(dict("|i1", "(24,)"), six_f32), "unsupported dtype '|i1' (int8)"},
      {"unknown descr", npy_file(dict("<q9", "(6,)"), six_f32), "unsupported dtype '<q9' (supported: float32"},
      {"float32 without a byte order", npy_file(dict("f4", "(6,)"), six_f32), "unsupported dtype 'f4'"},
      {"non-printable descr", npy_file(dict("<f\x01", "(6,)"), six_f32), "unsupported dtype '<f\\x01'"},
      {"truncated data", npy_file(good, byte_ramp(20)),
       "truncated data: shape (2, 3) of float32 expected 24 bytes of data, file has 20"},
      {"no data", npy_file(good), "expected 24 bytes of data, file has 0"},
      {"trailing bytes", npy_file(good, byte_ramp(28)),
       "4 trailing bytes: shape (2, 3) of float32 expected 24 bytes of data, file has 28"},
      {"shape whose size overflows", npy_file(dict("<f4", "(4294967296, 4294967296)")),
       "shape (4294967296, 4294967296) of float32 is too large, its size in bytes overflows 64 bits"},
      {"shape whose byte size overflows", npy_file(dict("<f8", "(2305843009213693952,)")),
       "shape (2305843009213693952,) of float64 is too large"},
      {"huge shape that fits 64 bits", npy_file(dict("<f4", "(1152921504606846976,)"), six_f32),
       "truncated data: shape (1152921504606846976,) of float32 expected 4611686018427387904 bytes of data, file has "
       "24"},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK_THROWS_WITH(parse_npy(row.file, "bad.npy"), StartsWith("bad.npy: ") && Contains(row.message));
    CHECK_THROWS_AS(parse_npy(row.file, "bad.npy"), NpyError);
  }
}

TEST_CASE("npy: no truncation or corrupted header byte crashes the parser", "[npy]") {
  const Bytes six_f32 = byte_ramp(24);
  const Bytes valid = serialize_npy(make_npy(NpyDtype::kFloat32, {2, 3}, six_f32.data()));
  REQUIRE(valid.size() == 128 + 24);

  int truncations_rejected = 0;
  for (std::size_t length = 0; length < valid.size(); ++length) {
    try {
      parse_npy(std::span(valid.data(), length), "cut.npy");
    } catch (const NpyError&) {
      ++truncations_rejected;
    }
  }
  CHECK(truncations_rejected == static_cast<int>(valid.size()));

  // Every value in every header byte: parses or throws NpyError, nothing else.
  int parsed = 0;
  int rejected = 0;
  for (std::size_t position = 0; position < 128; ++position) {
    Bytes corrupt = valid;
    for (int value = 0; value < 256; ++value) {
      corrupt[position] = static_cast<std::uint8_t>(value);
      try {
        const NpyArray array = parse_npy(corrupt, "corrupt.npy");
        CHECK(array.data.size() == element_count(array.shape) * element_size(array.dtype));
        ++parsed;
      } catch (const NpyError&) {
        ++rejected;
      }
    }
  }
  CHECK(parsed + rejected == 128 * 256);
  CHECK(parsed >= 128);  // at least the original value of each byte
}

TEST_CASE("npy: real corpus inputs read back and match the numerics", "[npy]") {
  const std::filesystem::path corpus = TPUEMU_LLO_CORPUS;
  if (!std::filesystem::is_directory(corpus)) {
    WARN("LLO corpus not found at " << corpus << ", skipping");
    return;
  }

  SECTION("vector_add_f32: float32 (8, 128), written back byte for byte") {
    const std::filesystem::path path = corpus / "vector_add_f32/inputs/x.npy";
    if (!std::filesystem::exists(path)) {
      WARN(path << " not found, skipping");
      return;
    }
    const NpyArray x = read_npy(path.string());
    CHECK(x.dtype == NpyDtype::kFloat32);
    CHECK(x.shape == std::vector<std::uint64_t>{8, 128});
    CHECK(x.as_f32().size() == 1024);
    CHECK(serialize_npy(x) == file_bytes(path));
  }

  SECTION("vector_add_bf16: every *.bits.npy is the bf16 encoding of its float32 twin") {
    const std::filesystem::path inputs = corpus / "vector_add_bf16/inputs";
    if (!std::filesystem::is_directory(inputs)) {
      WARN(inputs << " not found, skipping");
      return;
    }
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(inputs)) {
      const std::string name = entry.path().filename().string();
      if (!name.ends_with(".bits.npy")) continue;
      INFO(name);
      const NpyArray bits = read_npy(entry.path().string());
      REQUIRE(bits.dtype == NpyDtype::kUint16);
      CHECK(serialize_npy(bits) == file_bytes(entry.path()));
      const std::filesystem::path twin = inputs / (name.substr(0, name.size() - 9) + ".npy");
      if (!std::filesystem::exists(twin)) continue;
      const NpyArray values = read_npy(twin.string());
      REQUIRE(values.shape == bits.shape);
      int mismatches = 0;
      for (std::size_t i = 0; i < values.as_f32().size(); ++i) {
        if (f32_to_bf16_bits(values.as_f32()[i]) != bits.as_u16()[i]) ++mismatches;
        if (bf16_bits_to_f32(bits.as_u16()[i]) != values.as_f32()[i]) ++mismatches;
      }
      CHECK(mismatches == 0);
      ++files;
    }
    CHECK(files > 0);
  }

  SECTION("vector_add_f8: every *.bits.npy is the f8e4m3fn encoding of its float32 twin") {
    const std::filesystem::path inputs = corpus / "vector_add_f8/inputs";
    if (!std::filesystem::is_directory(inputs)) {
      WARN(inputs << " not found, skipping");
      return;
    }
    for (const auto& entry : std::filesystem::directory_iterator(inputs)) {
      const std::string name = entry.path().filename().string();
      if (!name.ends_with(".bits.npy")) continue;
      INFO(name);
      const NpyArray bits = read_npy(entry.path().string());
      REQUIRE(bits.dtype == NpyDtype::kUint8);
      const std::filesystem::path twin = inputs / (name.substr(0, name.size() - 9) + ".npy");
      if (!std::filesystem::exists(twin)) continue;
      const NpyArray values = read_npy(twin.string());
      REQUIRE(values.shape == bits.shape);
      int mismatches = 0;
      for (std::size_t i = 0; i < values.as_f32().size(); ++i) {
        const float value = values.as_f32()[i];
        const std::uint8_t code = bits.as_u8()[i];
        if (f32_to_f8e4m3fn(value) != code) ++mismatches;
        const float decoded = f8e4m3fn_to_f32(code);
        if (std::isnan(value) ? !std::isnan(decoded) : decoded != value) ++mismatches;
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("npy: NpyFile maps large files and reads small ones, with read_npy's array and errors", "[npy]") {
  const std::filesystem::path path = temp_file("tpuemu_test_npy_file");
  const auto write_bytes = [&](const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  // One element under the mapping threshold, and exactly at it.
  const std::uint64_t at_threshold = NpyFile::kMapFromBytes / 4;
  for (const std::uint64_t count : {at_threshold - 1, at_threshold, at_threshold + 4096}) {
    CAPTURE(count);
    const Bytes data = sample_data(NpyDtype::kFloat32, count);
    const NpyArray array = make_npy(NpyDtype::kFloat32, {count}, data.data());
    write_npy(path.string(), array);
    const NpyFile file = NpyFile::open(path.string());
    CHECK(file.mapped() == (array.data.size() >= NpyFile::kMapFromBytes));
    const NpyView view = file.view();
    CHECK(view.dtype == NpyDtype::kFloat32);
    CHECK(std::ranges::equal(view.shape, array.shape));
    CHECK(std::ranges::equal(view.data, array.data));
    CHECK(view.as_f32().size() == array.data.size() / 4);
  }
  // A mapped file, taken as an array, is a copy; the file may then change.
  {
    NpyFile file = NpyFile::open(path.string());
    REQUIRE(file.mapped());
    const NpyArray taken = std::move(file).take_array();
    CHECK(taken == read_npy(path.string()));
    CHECK_FALSE(file.mapped());  // NOLINT(bugprone-use-after-move): released by take_array
  }
  // Big-endian data is read and converted, not mapped.
  Bytes big(NpyFile::kMapFromBytes);
  for (std::size_t i = 0; i < big.size(); i += 2) {
    big[i] = 0x12;
    big[i + 1] = static_cast<std::uint8_t>(i >> 1);
  }
  write_bytes(npy_file(dict(">u2", "(" + std::to_string(big.size() / 2) + ",)"), big));
  {
    const NpyFile file = NpyFile::open(path.string());
    CHECK_FALSE(file.mapped());
    CHECK(std::ranges::equal(file.view().data, read_npy(path.string()).data));
    CHECK(file.view().data[0] == 0x00);
    CHECK(file.view().data[1] == 0x12);
  }
  // Errors are read_npy's.
  Bytes truncated = npy_file(dict("<f4", "(" + std::to_string(at_threshold) + ",)"), Bytes(at_threshold * 4));
  truncated.resize(truncated.size() - 4);
  write_bytes(truncated);
  std::string read_error;
  try {
    (void)read_npy(path.string());
  } catch (const NpyError& e) {
    read_error = e.what();
  }
  REQUIRE_FALSE(read_error.empty());
  CHECK_THROWS_WITH(NpyFile::open(path.string()), read_error);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(NpyFile::open("/nonexistent/dir/x.npy"), StartsWith("/nonexistent/dir/x.npy: cannot open file"));
}

TEST_CASE("npy: a mapped file cut short by another writer reads zeros and says so, not SIGBUS", "[npy]") {
  const std::filesystem::path path = temp_file("tpuemu_test_npy_cut");
  const std::uint64_t count = NpyFile::kMapFromBytes / 4 * 3;  // 3 MiB of floats: mapped
  std::vector<float> values(count, 1.5F);
  write_npy(path.string(), make_npy(NpyDtype::kFloat32, {count}, values.data()));
  {
    NpyFile file = NpyFile::open(path.string());
    REQUIRE(file.mapped());
    CHECK(file.intact());
    CHECK_NOTHROW(file.check_intact());
    // Cut to its first MiB (as another process rewriting it would), then
    // read all of it: the pages past the new end read as zeros.
    const std::uint64_t kept = std::filesystem::file_size(path) - 2 * NpyFile::kMapFromBytes;
    std::filesystem::resize_file(path, kept);
    const std::span<const float> seen = file.view().as_f32();
    double sum = 0;
    for (const float v : seen) sum += v;
    CHECK(sum < 1.5 * static_cast<double>(count) / 2);  // most of it gone
    CHECK(seen.back() == 0.0F);
    CHECK_FALSE(file.intact());
    CHECK_THROWS_WITH(file.check_intact(), path.string() +
                                               ": the file was cut short while it was read "
                                               "(truncated by another process?); what was read is not "
                                               "its data");
    CHECK(take_files_cut_while_mapped().empty());  // listed once released
    file = NpyFile(NpyArray{});
  }
  CHECK(take_files_cut_while_mapped() == std::vector<std::string>{path.string()});
  CHECK(take_files_cut_while_mapped().empty());
  // An intact file is never listed, and a new mapping of the same slot starts intact.
  write_npy(path.string(), make_npy(NpyDtype::kFloat32, {count}, values.data()));
  {
    const NpyFile file = NpyFile::open(path.string());
    REQUIRE(file.mapped());
    CHECK(file.intact());
    CHECK(file.view().as_f32().back() == 1.5F);
  }
  CHECK(take_files_cut_while_mapped().empty());
  // A SIGBUS that is not a mapped file's goes where it went before: the
  // default action ends the process by SIGBUS; under AddressSanitizer its
  // own handler reports it and exits non-zero.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::raise(SIGBUS);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
#if defined(__SANITIZE_ADDRESS__)
  CHECK((WIFEXITED(status) ? WEXITSTATUS(status) != 0 : WIFSIGNALED(status)));
#else
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGBUS);
#endif
  std::filesystem::remove(path);
}
