// The .tpub program image: round trips of the real dumps and of a program
// using every operand kind, and corrupt images, each of which must be
// rejected with an ImageError naming the problem and its byte offset.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>

#include "isa/assembler.hpp"
#include "isa/image.hpp"

namespace fs = std::filesystem;
using namespace tpuemu::isa;
using tpuemu::MemorySpace;

namespace {

using Bytes = std::vector<std::uint8_t>;

// Header fields, as laid out in docs/tpub.md.
constexpr std::size_t kVersionAt = 4;
constexpr std::size_t kFlagsAt = 6;
constexpr std::size_t kNameAt = 8;
constexpr std::size_t kStringCountAt = 12;
constexpr std::size_t kStringOffsetAt = 16;
constexpr std::size_t kAllocationOffsetAt = 28;
constexpr std::size_t kBundleCountAt = 36;
constexpr std::size_t kBundleOffsetAt = 40;
constexpr std::size_t kFileCountAt = 48;
constexpr std::size_t kDebugOffsetAt = 52;
constexpr std::size_t kDebugSizeAt = 56;

std::uint32_t get_u32(const Bytes& b, std::size_t at) {
  return static_cast<std::uint32_t>(b.at(at)) | static_cast<std::uint32_t>(b.at(at + 1)) << 8 |
         static_cast<std::uint32_t>(b.at(at + 2)) << 16 | static_cast<std::uint32_t>(b.at(at + 3)) << 24;
}
void put_u16(Bytes& b, std::size_t at, std::uint16_t v) {
  b.at(at) = static_cast<std::uint8_t>(v);
  b.at(at + 1) = static_cast<std::uint8_t>(v >> 8);
}
void put_u32(Bytes& b, std::size_t at, std::uint32_t v) {
  for (std::size_t i = 0; i < 4; ++i) b.at(at + i) = static_cast<std::uint8_t>(v >> (8 * i));
}

Reg reg(RegClass cls, std::uint16_t index, std::int32_t ssa = -1) {
  return Reg{cls, index, ssa};
}

// operator== ignores names, comments and source positions: compares them.
void check_same_debug_info(const Program& a, const Program& b) {
  CHECK(a.name == b.name);
  CHECK(a.files == b.files);
  REQUIRE(a.bundles.size() == b.bundles.size());
  for (std::size_t i = 0; i < a.bundles.size(); ++i) {
    const Bundle& x = a.bundles[i];
    const Bundle& y = b.bundles[i];
    INFO("bundle " << i);
    CHECK(x.comment == y.comment);
    CHECK(x.source.file == y.source.file);
    CHECK(x.source.line == y.source.line);
    CHECK(x.source.column == y.source.column);
    REQUIRE(x.ops.size() == y.ops.size());
    for (std::size_t k = 0; k < x.ops.size(); ++k) {
      INFO("op " << k);
      CHECK(x.ops[k].comment == y.ops[k].comment);
      CHECK(x.ops[k].loc == y.ops[k].loc);
      CHECK(x.ops[k].source.file == y.ops[k].source.file);
      CHECK(x.ops[k].source.line == y.ops[k].source.line);
      CHECK(x.ops[k].source.column == y.ops[k].source.column);
    }
  }
}

// Bytes of strings a decoder copies for `p`, each counted once per field.
std::size_t string_bytes(const Program& p) {
  std::size_t n = p.name.size();
  for (const auto& f : p.files) n += f.size();
  for (const auto& a : p.allocations) n += a.shape.size() + a.tag.size();
  for (const auto& b : p.bundles) {
    n += b.tag.size() + b.comment.size();
    for (const auto& o : b.ops) {
      n += o.comment.size() + o.loc.size();
      for (const auto& x : o.operands) {
        n += x.name.size() + x.text.size() + x.decl.shape.size() + x.decl.kind.size() + x.decl.shape_index.size();
      }
    }
  }
  return n;
}

std::vector<fs::path> corpus_dumps() {
  std::vector<fs::path> files;
  const fs::path root(TPUEMU_LLO_CORPUS);
  if (!fs::exists(root)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().filename().string().ends_with("-final_bundles.txt")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

Operand operand(Operand::Kind kind) {
  Operand o;
  o.kind = kind;
  return o;
}

// Every operand kind, every optional part of a memory reference, both kinds
// of destination, guards, allocations with and without offsets.
Program every_kind_program() {
  Program p;
  p.name = "every_kind";
  p.files = {"main.llo", "include/helpers.llo"};
  p.allocations = {
      Allocation{3, false, "s32[2]{0}", MemorySpace::kSflag, 8, 16, "sync flags", {}},
      Allocation{8, true, "f32[8,128]{1,0}", MemorySpace::kVmem, 4096, std::nullopt, "spill", {}},
      Allocation{9, false, "u8[4096]", MemorySpace::kHbm, 0xFFFF'FFFF'FFFFULL, 0x1234'5678'9ABCULL, "", {}},
      Allocation{10, false, "s32[1]", MemorySpace::kSmem, 4, 0, "counter", {}},
  };

  std::vector<Operand> operands;
  Operand r = operand(Operand::Kind::kReg);
  r.reg = reg(RegClass::kVector, 7, 122);
  operands.push_back(r);
  r.reg = reg(RegClass::kMask, 3);
  r.name = "mask";
  operands.push_back(r);
  Operand t = operand(Operand::Kind::kToken);
  t.token = 0xFFFF'FFFF;
  operands.push_back(t);
  Operand i = operand(Operand::Kind::kInt);
  i.integer = -(std::int64_t{1} << 40);
  operands.push_back(i);
  Operand f = operand(Operand::Kind::kFloat);
  f.float_bits = 0x7FC0'0001;  // a NaN payload survives bit for bit
  operands.push_back(f);
  Operand s = operand(Operand::Kind::kSymbol);
  s.symbol = SymbolRef{8, true, -3};
  operands.push_back(s);
  Operand m = operand(Operand::Kind::kMem);
  m.mem.base_reg = reg(RegClass::kScalar, 8, 185);
  m.mem.offset = 8;
  m.mem.sublane_stride = 16;
  m.mem.sublane_mask = 0xff;
  operands.push_back(m);
  m.mem = MemRef{};
  m.mem.space = MemRef::Space::kSmem;
  m.mem.base_symbol = SymbolRef{10, false, 0};
  m.mem.offset = -1;
  m.mem.sublane_mask_reg = reg(RegClass::kScalar, 2);
  operands.push_back(m);
  Operand a = operand(Operand::Kind::kAttr);
  a.text = "thread:$0";
  operands.push_back(a);
  Operand c = operand(Operand::Kind::kChunk);
  c.integer = 2;
  c.chunk_count = 16;
  operands.push_back(c);
  Operand fl = operand(Operand::Kind::kFlag);
  fl.text = "narrow";
  operands.push_back(fl);
  Operand tg = operand(Operand::Kind::kTarget);
  tg.target = BranchTarget{160, 20};
  operands.push_back(tg);
  tg.target = BranchTarget{0, -1};
  tg.text = "loop_start";
  operands.push_back(tg);
  Operand d = operand(Operand::Kind::kDecl);
  d.decl = OperandDecl{"f32[16,256]", 1, "output", "{}"};
  operands.push_back(d);

  Op every;
  every.opcode = OpId::kVaddS32;
  every.dest_kind = Op::DestKind::kReg;
  every.dest_reg = reg(RegClass::kVector, 0, 9);
  every.operands = operands;
  every.comment = "/* every kind */";
  every.loc = "loc(\"model.py\":12:3 to :9)";
  every.source = SourceLoc{0, 4, 11};

  Op guarded;
  guarded.opcode = static_cast<OpId>(op_count() - 1);
  guarded.unit = 3;
  guarded.dest_kind = Op::DestKind::kToken;
  guarded.dest_token = 77;
  guarded.guard = reg(RegClass::kPredicate, 1, 31);
  guarded.guard_negated = true;
  guarded.guard_fallback = reg(RegClass::kScalar, 19, 30);
  guarded.source = SourceLoc{1, 2, 1};

  Bundle first;
  first.address = 0;
  first.tag = "LB";
  first.in_loop = true;
  first.ops = {every, guarded};
  first.comment = "// region 3";
  first.source = SourceLoc{0, 4, 1};
  Bundle empty;  // no address, no ops
  empty.source = SourceLoc{1, 9, 5};
  Bundle last;
  last.address = 0xFFF'FFFF;
  last.ops = {Op{}};
  p.bundles = {first, empty, last};
  return p;
}

// One op with a destination register and two operands, one allocation.
Program small_program() {
  Program p;
  p.name = "small";
  p.files = {"small.llo"};
  p.allocations = {Allocation{1, false, "f32[8,128]", MemorySpace::kVmem, 4096, 0, "x", {}}};
  Op op;
  op.opcode = OpId::kVaddS32;
  op.dest_kind = Op::DestKind::kReg;
  op.dest_reg = reg(RegClass::kVector, 1);
  Operand a = operand(Operand::Kind::kReg);
  a.reg = reg(RegClass::kVector, 2);
  Operand b = operand(Operand::Kind::kInt);
  b.integer = 7;
  op.operands = {a, b};
  op.comment = "/* add */";
  op.source = SourceLoc{0, 3, 5};
  Bundle bundle;
  bundle.address = 0;
  bundle.ops = {op};
  bundle.source = SourceLoc{0, 3, 1};
  p.bundles = {bundle};
  return p;
}

}  // namespace

TEST_CASE("image: every corpus dump round-trips through .tpub with names, comments and locations",
          "[isa][image][corpus]") {
  const auto files = corpus_dumps();
  if (files.empty()) {
    WARN("LLO corpus not found at " TPUEMU_LLO_CORPUS "; skipping");
    return;
  }
  std::size_t image_bytes = 0;
  double worst_expansion = 0;
  for (const auto& path : files) {
    INFO(path.string());
    const Program p = assemble_file(path.string());
    const Bytes image = encode_image(p);
    Program back;
    REQUIRE_NOTHROW(back = decode_image(image, path.string()));
    CHECK(back == p);
    check_same_debug_info(p, back);
    CHECK(encode_image(back) == image);  // re-encoding is byte-identical
    image_bytes += image.size();
    worst_expansion =
        std::max(worst_expansion, static_cast<double>(string_bytes(p)) / static_cast<double>(image.size()));
  }
  // The decoder's string bound must leave real programs far inside it.
  CHECK(worst_expansion * 8 < static_cast<double>(kImageStringExpansion));
  WARN(files.size() << " dumps, " << image_bytes << " image bytes; worst string expansion " << worst_expansion
                    << " bytes per image byte");
}

TEST_CASE("image: a program with every operand kind round-trips field for field", "[isa][image]") {
  const Program p = every_kind_program();
  const Bytes image = encode_image(p);
  CHECK(image.size() > 60);
  CHECK(std::string(image.begin(), image.begin() + 4) == "TPUB");
  const Program back = decode_image(image, "every_kind.tpub");
  CHECK(back == p);
  check_same_debug_info(p, back);
  // operator== does not look at the payload fields of other kinds; the
  // decoder fills exactly the ones of each operand's kind.
  REQUIRE(back.bundles.at(0).ops.at(0).operands.size() == p.bundles.at(0).ops.at(0).operands.size());
  CHECK(back.allocations.at(1).offset == std::nullopt);
  CHECK(!back.bundles.at(1).address.has_value());
  CHECK(back.bundles.at(0).ops.at(1).guard_fallback == p.bundles.at(0).ops.at(1).guard_fallback);
  CHECK(encode_image(back) == image);

  SECTION("an empty program") {
    const Program empty;
    CHECK(decode_image(encode_image(empty), "empty.tpub") == empty);
  }
  SECTION("through a file") {
    const std::string path = "test_isa_image_every_kind.tpub";
    write_image(path, p);
    const Program from_file = read_image(path);
    CHECK(from_file == p);
    check_same_debug_info(p, from_file);
    fs::remove(path);
    REQUIRE_THROWS_WITH(read_image(path), Catch::Contains(path + ": cannot open file"));
  }
}

TEST_CASE("image: assembled text round-trips through the image and the disassembler", "[isa][image]") {
  const std::string text =
      "#allocation3 [shape = 's32[1]{0}', space=sflag, size = 0x4, offset = 0x0, tag = 'done']\n"
      "0x0 LB: > { %v5_v1 = vadd.s32 %v2_v0, 1  ;;  %s3_s2 = sld [smem:[#allocation3]] }\n"
      "0x1   :   { %v6_v2 = vmul.f32 %v5_v1, 0.5 }\n";
  Program p;
  try {
    p = assemble(text, "small.llo");
  } catch (const AsmError& e) {
    FAIL(e.what());
  }
  const Program back = decode_image(encode_image(p), "small.tpub");
  CHECK(back == p);
  check_same_debug_info(p, back);
  CHECK(disassemble(back) == disassemble(p));
}

TEST_CASE("image: every corrupt image is rejected with a message naming the problem and its offset", "[isa][image]") {
  const Bytes good = encode_image(small_program());
  REQUIRE(decode_image(good, "good.tpub") == small_program());
  const std::size_t strings = get_u32(good, kStringOffsetAt);
  const std::size_t allocation = get_u32(good, kAllocationOffsetAt);
  const std::size_t bundle = get_u32(good, kBundleOffsetAt);
  // Bundle: flags 1, address 4, tag 4, op count 4; op: opcode 2, unit 1,
  // destination kind 1, register 7, guard flags 1, operand count 4.
  const std::size_t op_count_at = bundle + 9;
  const std::size_t op = bundle + 13;
  const std::size_t dest_kind_at = op + 3;
  const std::size_t dest_class_at = op + 4;
  const std::size_t guard_at = op + 11;
  const std::size_t operand_count_at = op + 12;
  const std::size_t operand = op + 16;

  struct Case {
    std::string name;
    std::function<void(Bytes&)> corrupt;
    std::string message;
  };
  const auto ops_in_table = static_cast<std::uint16_t>(op_count());
  const std::vector<Case> cases{
      {"bad magic", [](Bytes& b) { b[0] = 'X'; },
       "bad.tpub: not a tpuemu program image (.tpub): the magic bytes are not \"TPUB\" at byte offset 0"},
      {"an ELF file", [](Bytes& b) { b = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0}; }, "not a tpuemu program image (.tpub)"},
      {"one byte of something else", [](Bytes& b) { b = {'#'}; }, "not a tpuemu program image (.tpub)"},
      {"empty", [](Bytes& b) { b.clear(); }, "truncated header: magic needs 4 bytes, 0 left at byte offset 0"},
      {"version 2", [](Bytes& b) { put_u16(b, kVersionAt, 2); },
       "bad.tpub: image format version 2 is newer than this tpuemu supports (version 1) at byte offset 4"},
      {"version 0", [](Bytes& b) { put_u16(b, kVersionAt, 0); },
       "unknown image format version 0 (this tpuemu reads version 1) at byte offset 4"},
      {"header cut short", [](Bytes& b) { b.resize(30); },
       "truncated header: the image is 30 bytes, a header is 60 at byte offset 30"},
      {"unknown flags", [](Bytes& b) { put_u16(b, kFlagsAt, 0x8001); },
       "unknown flags 0x8001 (version 1 defines none) at byte offset 6"},
      {"program name string index", [](Bytes& b) { put_u32(b, kNameAt, 0xFFFF'FFFF); },
       "program name: string index 4294967295 out of range (the string table has"},
      {"huge string count", [](Bytes& b) { put_u32(b, kStringCountAt, 0xFFFF'FFFF); },
       "4294967295 strings need at least 17179869180 bytes, the string table has"},
      {"huge bundle count", [](Bytes& b) { put_u32(b, kBundleCountAt, 0xFFFF'FFFF); },
       "4294967295 bundles need at least"},
      {"huge op count", [&](Bytes& b) { put_u32(b, op_count_at, 0x1000'0000); },
       "268435456 ops need at least 2415919104 bytes, the bundle section has"},
      {"huge operand count", [&](Bytes& b) { put_u32(b, operand_count_at, 0xFFFF'FFFF); },
       "4294967295 operands need at least"},
      {"huge file count", [](Bytes& b) { put_u32(b, kFileCountAt, 0xFFFF'FFFF); },
       "debug line table is 40 bytes, but 4294967295 files, 1 bundles and 1 ops need"},
      {"string longer than the table", [&](Bytes& b) { put_u32(b, strings, 0x00FF'FFFF); },
       "string 0 of 16777215 bytes runs past the end of the string table"},
      {"section outside the image", [](Bytes& b) { put_u32(b, kDebugSizeAt, get_u32(b, kDebugSizeAt) + 1); },
       "lies outside the image"},
      {"section over the header", [](Bytes& b) { put_u32(b, kStringOffsetAt, 0); }, "string table of"},
      {"section offset past the end", [](Bytes& b) { put_u32(b, kDebugOffsetAt, 0xFFFF'FFF0); },
       "at offset 4294967280 lies outside the image"},
      {"bad opcode", [&](Bytes& b) { put_u16(b, op, 0xFFFF); }, "opcode 65535 is not in the instruction table"},
      {"first opcode past the table", [&](Bytes& b) { put_u16(b, op, ops_in_table); },
       fmt::format("opcode {} is not in the instruction table ({} rows) at byte offset {}", ops_in_table, ops_in_table,
                   op)},
      {"bad destination kind", [&](Bytes& b) { b[dest_kind_at] = 3; }, "destination kind 3 is not one of 0..2"},
      {"bad register class", [&](Bytes& b) { b[dest_class_at] = 4; }, "register class 4 is not one of 0..3"},
      {"unknown guard bits", [&](Bytes& b) { b[guard_at] = 0x81; }, "guard flags: unknown bits 0x80"},
      {"bad operand kind", [&](Bytes& b) { b[operand] = 11; },
       fmt::format("operand kind 11 is not one of 0..10 at byte offset {}", operand)},
      {"operand name string index", [&](Bytes& b) { put_u32(b, operand + 1, 1000); },
       "operand name: string index 1000 out of range"},
      {"fewer operands than written", [&](Bytes& b) { put_u32(b, operand_count_at, 1); },
       "unread bytes at the end of the bundle section"},
      {"bad memory space", [&](Bytes& b) { b[allocation + 5] = 9; }, "memory space 9 is not one of 0..3"},
      {"unknown allocation flags", [&](Bytes& b) { b[allocation + 4] = 0xF2; }, "allocation flags: unknown bits 0xf0"},
      {"bad bundle flags", [&](Bytes& b) { b[bundle] = 0x04; }, "bundle flags: unknown bits 0x04"},
      {"debug table too long",
       [](Bytes& b) {
         b.resize(b.size() + 4);
         put_u32(b, kDebugSizeAt, get_u32(b, kDebugSizeAt) + 4);
       },
       "debug line table is 44 bytes, but 1 files, 1 bundles and 1 ops need 40"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Bytes bad = good;
    c.corrupt(bad);
    REQUIRE_THROWS_AS(decode_image(bad, "bad.tpub"), ImageError);
    REQUIRE_THROWS_WITH(decode_image(bad, "bad.tpub"), Catch::Contains(c.message) && Catch::StartsWith("bad.tpub: "));
  }
}

TEST_CASE("image: every truncation of a valid image is rejected", "[isa][image]") {
  const Bytes good = encode_image(every_kind_program());
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("first " << n << " of " << good.size() << " bytes");
    const Bytes prefix(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    REQUIRE_THROWS_WITH(decode_image(prefix, "cut.tpub"),
                        Catch::StartsWith("cut.tpub: ") && Catch::Contains("at byte offset"));
  }
}

TEST_CASE("image: every single-bit flip decodes to a stable program or is rejected", "[isa][image]") {
  const Bytes good = encode_image(every_kind_program());
  std::size_t rejected = 0;
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes flipped = good;
      flipped[at] = static_cast<std::uint8_t>(flipped[at] ^ (1U << bit));
      INFO("byte " << at << " bit " << bit);
      Program p;
      try {
        p = decode_image(flipped, "flipped.tpub");
      } catch (const ImageError&) {
        ++rejected;
        continue;
      }
      const Program again = decode_image(encode_image(p), "again.tpub");
      REQUIRE(again == p);
    }
  }
  CHECK(rejected > 0);
}

TEST_CASE("image: strings referenced too often are refused before they exhaust memory", "[isa][image]") {
  // 1024 ops in one bundle, only the first with a 16 KiB comment; then every
  // op's comment index is pointed at that string: 16 MiB of copies from a
  // 46 KB image, beyond kImageStringExpansion per byte.
  Program p;
  p.files = {"many.llo"};
  Bundle b;
  b.ops.resize(1024);
  b.ops[0].comment = std::string(16384, 'x');
  p.bundles = {b};
  Bytes image = encode_image(p);
  REQUIRE(decode_image(image, "many.tpub") == p);
  const std::size_t first_op = get_u32(image, kDebugOffsetAt) + 4 * p.files.size() + 16;
  const std::uint32_t long_comment = get_u32(image, first_op + 12);
  for (std::size_t k = 1; k < 1024; ++k) put_u32(image, first_op + 20 * k + 12, long_comment);
  REQUIRE_THROWS_WITH(decode_image(image, "many.tpub"),
                      Catch::Contains("op comment: the strings the image refers to add up to more than"));
}
